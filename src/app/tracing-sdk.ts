/**
 * The OpenTelemetry SDK (docs/architecture.md "Observability"), loaded only when an OTLP endpoint is configured:
 * batches of spans over OTLP/HTTP (protobuf or JSON), W3C propagation, Node's async context. The `OTEL_*` variables
 * are followed as OpenTelemetry specifies them.
 */
import { hostname } from 'node:os';
import { readFileSync } from 'node:fs';
import { ConfigError, coerceError } from '../errors.ts';
import type { Logger } from '../logger.ts';
import type { SpanExporter } from '@opentelemetry/sdk-trace';

/** The SDK of this process, once started. */
export interface Tracing {
  /**
   * Exports the spans still batched and stops the SDK, within `timeoutMs` (default 5 000). Spans the endpoint did not
   * take are dropped, and said so in one log line. Never throws.
   */
  shutdown(timeoutMs?: number): Promise<void>;
}

/**
 * The longest one export may take, retries included, in every process (the short commands and the long-running
 * ones alike; less if the exporter's timeout says less): the exporter's retries and its request keep a process alive
 * until they end, so a collector that is down or does not answer delays an exit by about this much, not by the
 * exporter's 10 s (docs/observability.md "Tracing").
 */
export const EXPORT_CAP_MS = 2_000;

/**
 * The OTLP exporter's own timeout in ms, as OpenTelemetry specifies it: `OTEL_EXPORTER_OTLP_TRACES_TIMEOUT`, else
 * `OTEL_EXPORTER_OTLP_TIMEOUT`, else 10 000. It bounds each export with its retries (the exporter retries a refused
 * connection with backoff until it runs out), and its retry timers keep a process alive until then.
 */
function exporterTimeoutMs(env: Env): number {
  for (const name of ['OTEL_EXPORTER_OTLP_TRACES_TIMEOUT', 'OTEL_EXPORTER_OTLP_TIMEOUT']) {
    const n = Number(envValue(env, name));
    if (Number.isFinite(n) && n > 0) return n;
  }
  return 10_000;
}

/** OTLP over HTTP in protobuf or JSON: the transports report-etl exports with. */
type OtlpProtocol = 'http/protobuf' | 'http/json';

type Env = Readonly<Record<string, string | undefined>>;

/** An address without a user name or password in it (a collector's credentials). */
function shownEndpoint(raw: string): string {
  return raw.replace(/\/\/[^/@]*@/, '//…@');
}

function envValue(env: Env, name: string): string | undefined {
  const v = env[name]?.trim();
  return v ? v : undefined;
}

/**
 * Reads whether and where to export traces, checking what the exporters would otherwise only warn about.
 * @returns undefined without an OTLP endpoint, or with `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none`
 * @throws ConfigError for an endpoint that is not an http(s) URL, or a protocol other than http/protobuf and http/json
 */
export function tracingSettings(env: Env = process.env): { endpoint: string; protocol: OtlpProtocol } | undefined {
  const specific = envValue(env, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT');
  const general = envValue(env, 'OTEL_EXPORTER_OTLP_ENDPOINT');
  if (!specific && !general) return undefined;
  if (envValue(env, 'OTEL_SDK_DISABLED')?.toLowerCase() === 'true') return undefined;
  const exporters = envValue(env, 'OTEL_TRACES_EXPORTER')
    ?.split(',')
    .map((e) => e.trim().toLowerCase());
  if (exporters?.includes('none')) return undefined;
  if (exporters && !exporters.includes('otlp')) {
    throw new ConfigError([
      `OTEL_TRACES_EXPORTER is "${exporters.join(',')}": report-etl exports traces over OTLP only; ` +
        'set it to otlp, or none to export nothing',
    ]);
  }
  const name = specific ? 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT' : 'OTEL_EXPORTER_OTLP_ENDPOINT';
  const raw = (specific ?? general)!;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError([
      `${name} is "${shownEndpoint(raw)}", which is not a URL: ` +
        "write the collector's OTLP/HTTP address, e.g. http://otel-collector:4318",
    ]);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ConfigError([
      `${name} is "${shownEndpoint(raw)}": report-etl exports traces over OTLP/HTTP, ` +
        'so the address must start with http:// or https:// (e.g. http://otel-collector:4318)',
    ]);
  }
  // The spec's rule: the general endpoint gets the signal's path appended, the traces one is used as it is.
  const endpoint = specific ? url.toString() : `${url.toString().replace(/\/$/, '')}/v1/traces`;
  const protocolName = envValue(env, 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL')
    ? 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL'
    : 'OTEL_EXPORTER_OTLP_PROTOCOL';
  const protocol = envValue(env, protocolName) ?? 'http/protobuf';
  if (protocol !== 'http/protobuf' && protocol !== 'http/json') {
    throw new ConfigError([
      `${protocolName} is "${protocol}": report-etl exports traces over OTLP/HTTP only; ` +
        "set http/protobuf (the default) or http/json, and the collector's HTTP port (4318)",
    ]);
  }
  return { endpoint, protocol };
}

/** The sampler's name and argument from `OTEL_TRACES_SAMPLER`(`_ARG`), as the spec names them. */
function samplerSettings(env: Env): { name: string; ratio: number } {
  const name = envValue(env, 'OTEL_TRACES_SAMPLER')?.toLowerCase() ?? 'parentbased_always_on';
  const root = ['always_on', 'always_off', 'traceidratio'];
  const known = [...root, ...root.map((r) => `parentbased_${r}`)];
  if (!known.includes(name))
    throw new ConfigError([`OTEL_TRACES_SAMPLER is "${name}": use one of ${known.join(', ')}`]);
  const arg = envValue(env, 'OTEL_TRACES_SAMPLER_ARG');
  const ratio = arg === undefined ? 1 : Number(arg);
  if (name.endsWith('traceidratio') && !(ratio >= 0 && ratio <= 1))
    throw new ConfigError([`OTEL_TRACES_SAMPLER_ARG is "${arg}": write the share of traces to keep, from 0 to 1`]);
  return { name, ratio };
}

/** A whole number of `OTEL_BSP_*`, or undefined (the SDK's default). */
function batchNumber(env: Env, name: string): number | undefined {
  const raw = envValue(env, name);
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1)
    throw new ConfigError([`${name} is "${shownEndpoint(raw)}": write a whole number of at least 1`]);
  return n;
}

function packageVersion(): string {
  try {
    return (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string })
      .version;
  } catch {
    return 'unknown';
  }
}

/**
 * Starts the SDK when the environment asks for traces, and registers it globally.
 * @param logger where export failures are told (each at most once a minute)
 * @param o.maxExportMs the longest one export may take, its retries included (the exporter's `timeoutMillis` is the
 *   lesser of this and its own, see {@link exporterTimeoutMs}); default {@link EXPORT_CAP_MS}, so that an endpoint
 *   that does not answer delays an exit, a short command's or a worker's after SIGTERM, by that much at most
 * @returns the started SDK, or undefined when nothing is to be traced (nothing was loaded then)
 * @throws ConfigError for a bad endpoint, protocol, sampler or batch setting
 */
export async function startTracing(
  logger: Logger,
  env: Env = process.env,
  o: { maxExportMs?: number } = {},
): Promise<Tracing | undefined> {
  const settings = tracingSettings(env);
  if (!settings) return undefined;
  const sampler = samplerSettings(env);
  const batch = {
    scheduledDelayMillis: batchNumber(env, 'OTEL_BSP_SCHEDULE_DELAY'),
    exportTimeoutMillis: batchNumber(env, 'OTEL_BSP_EXPORT_TIMEOUT'),
    maxQueueSize: batchNumber(env, 'OTEL_BSP_MAX_QUEUE_SIZE'),
    maxExportBatchSize: batchNumber(env, 'OTEL_BSP_MAX_EXPORT_BATCH_SIZE'),
  };
  const [api, core, sdk, resources, { AsyncLocalStorageContextManager }, { OTLPTraceExporter }] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/core'),
    import('@opentelemetry/sdk-trace'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/context-async-hooks'),
    settings.protocol === 'http/json'
      ? import('@opentelemetry/exporter-trace-otlp-http')
      : import('@opentelemetry/exporter-trace-otlp-proto'),
  ]);

  const shown = shownEndpoint(settings.endpoint);
  const told = new Map<string, number>();
  // While shutting down, failures are summed up in one line instead (the spans dropped).
  let stoppingNow = false;
  let lastFailure: string | undefined;
  const tell = (message: string) => {
    lastFailure = message;
    if (stoppingNow) return;
    const now = Date.now();
    if ((told.get(message) ?? 0) > now - 60_000) return;
    told.set(message, now);
    logger.warn({ endpoint: shown, err: message }, 'could not export spans');
  };
  core.setGlobalErrorHandler((ex) => tell(typeof ex === 'string' ? ex : (ex.message ?? String(ex))));
  const ignore = () => undefined;
  api.diag.setLogger({ error: tell, warn: tell, info: ignore, debug: ignore, verbose: ignore }, api.DiagLogLevel.WARN);

  const ratio = sampler.name.endsWith('traceidratio') ? new sdk.TraceIdRatioBasedSampler(sampler.ratio) : undefined;
  const root = sampler.name.endsWith('always_off') ? new sdk.AlwaysOffSampler() : (ratio ?? new sdk.AlwaysOnSampler());
  const timeoutMillis = Math.min(exporterTimeoutMs(env), o.maxExportMs ?? EXPORT_CAP_MS);
  const otlp = new OTLPTraceExporter({ url: settings.endpoint, timeoutMillis });
  // The exporter as the batch processor sees it, counting the spans whose export failed (dropped).
  let dropped = 0;
  const exporter: SpanExporter = {
    export(spans, done) {
      otlp.export(spans, (result) => {
        if (result.code !== core.ExportResultCode.SUCCESS) dropped += spans.length;
        done(result);
      });
    },
    shutdown: () => otlp.shutdown(),
    forceFlush: () => otlp.forceFlush(),
  };
  const resource = resources
    .resourceFromAttributes({
      'service.name': 'report-etl',
      'service.version': packageVersion(),
      'host.name': hostname(),
      'process.pid': process.pid,
    })
    .merge(resources.detectResources({ detectors: [resources.envDetector] }));
  const provider = new sdk.TracerProvider({
    resource,
    sampler: sampler.name.startsWith('parentbased_') ? new sdk.ParentBasedSampler({ root }) : root,
    spanProcessors: [
      new sdk.BatchSpanProcessor({
        exporter,
        ...Object.fromEntries(Object.entries(batch).filter(([, v]) => v !== undefined)),
      }),
    ],
  });
  api.context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  api.propagation.setGlobalPropagator(new core.W3CTraceContextPropagator());
  api.trace.setGlobalTracerProvider(provider);
  logger.info({ endpoint: shown, protocol: settings.protocol }, 'tracing: spans go to the OTLP endpoint');

  let stopping: Promise<void> | undefined;
  return {
    shutdown(timeoutMs = 5_000) {
      stopping ??= (async () => {
        stoppingNow = true;
        lastFailure = undefined;
        const droppedBefore = dropped;
        let timer: NodeJS.Timeout | undefined;
        let failure: string | undefined;
        const late = new Promise<boolean>((resolve) => {
          timer = setTimeout(() => resolve(true), timeoutMs);
        });
        const done = provider.shutdown().then(
          () => false,
          (err: unknown) => ((failure = coerceError(err).message), false),
        );
        const timedOut = await Promise.race([done, late]);
        clearTimeout(timer);
        const lost = dropped - droppedBefore;
        if (timedOut || lost > 0 || failure) {
          // One line, whatever the exporter's retries said: the last spans are lost, the run itself is not.
          const why = failure ?? lastFailure ?? `no answer within ${timedOut ? timeoutMs : timeoutMillis} ms`;
          logger.warn(
            { endpoint: shown, ...(timedOut ? {} : { spans: lost }) },
            `tracing: the OTLP endpoint did not take the last ${timedOut ? '' : `${lost} `}spans before exit ` +
              `(${why}); these traces were dropped`,
          );
        }
        // Unregistered, so that a later start in the same process (tests) registers afresh.
        api.trace.disable();
        api.propagation.disable();
        api.context.disable();
        api.diag.disable();
      })();
      return stopping;
    },
  };
}
