/**
 * Traces as an operator gets them (docs/observability.md "Tracing"): a real OTLP/HTTP receiver (node:http, POST
 * /v1/traces) and report-etl as child processes with the standard OTEL_ variables: a queued run (`enqueue` → `worker` →
 * simulator → PostgreSQL) is one trace from its enqueue span to the attempt's steps and pages, whose id is the
 * attempt's `etl.attempts.trace_id` and in its log lines; `report-etl run` exports in OTLP's default http/protobuf and
 * flushes at its end; without an endpoint nothing is traced and the timeline is recorded all the same.
 */
import { createServer, type Server } from 'node:http';
import { createServer as createNetServer, type AddressInfo, type Socket } from 'node:net';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { tracingSettings } from '../src/app/tracing-sdk.ts';
import { readTimeline } from '../src/history/timeline.ts';
import { useHarness } from './support/harness.ts';
import { runCli, startCli } from './support/cli-process.ts';
import { uniqueName } from './support/env.ts';
import { deleteKeys, deleteRuns, waitFor } from './support/queue-env.ts';
import { simConnectionLines } from './support/cli.ts';

/** One span as OTLP/JSON carries it, with its attributes flattened. */
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  start: bigint;
  end: bigint;
  attributes: Record<string, unknown>;
  status?: { code?: number };
}

/** What the receiver got: JSON spans, and the raw bodies of protobuf requests. */
interface Received {
  spans: OtlpSpan[];
  protobuf: { contentType: string; body: Buffer }[];
  paths: string[];
}

function attributeValue(v: Record<string, unknown>): unknown {
  if ('stringValue' in v) return v.stringValue;
  if ('intValue' in v) return Number(v.intValue);
  if ('doubleValue' in v) return v.doubleValue;
  if ('boolValue' in v) return v.boolValue;
  return v;
}

/** A local OTLP/HTTP receiver: answers every POST /v1/traces 200 and keeps what it got. */
function startReceiver(): Promise<{ url: string; received: Received; server: Server }> {
  const received: Received = { spans: [], protobuf: [], paths: [] };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      received.paths.push(`${req.method} ${req.url}`);
      const contentType = String(req.headers['content-type'] ?? '');
      if (contentType.includes('json')) {
        const doc = JSON.parse(body.toString('utf8')) as {
          resourceSpans?: { scopeSpans?: { spans?: Record<string, unknown>[] }[] }[];
        };
        for (const rs of doc.resourceSpans ?? []) {
          for (const ss of rs.scopeSpans ?? []) {
            for (const s of ss.spans ?? []) {
              received.spans.push({
                traceId: s.traceId as string,
                spanId: s.spanId as string,
                ...(s.parentSpanId ? { parentSpanId: s.parentSpanId as string } : {}),
                name: s.name as string,
                kind: s.kind as number,
                start: BigInt(s.startTimeUnixNano as string),
                end: BigInt(s.endTimeUnixNano as string),
                attributes: Object.fromEntries(
                  ((s.attributes ?? []) as { key: string; value: Record<string, unknown> }[]).map((a) => [
                    a.key,
                    attributeValue(a.value),
                  ]),
                ),
                ...(s.status ? { status: s.status as { code?: number } } : {}),
              });
            }
          }
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      } else {
        received.protobuf.push({ contentType, body });
        res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
      }
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, received, server }),
    ),
  );
}

const h = useHarness({ jobDurationMs: 60 });
let receiver: Awaited<ReturnType<typeof startReceiver>>;
let dir: string;
let configPath: string;
let prefix: string;
let jp: string;

beforeAll(async () => {
  receiver = await startReceiver();
  dir = await mkdtemp(join(tmpdir(), 'report-etl-tracing-'));
  configPath = join(dir, 'jobs.yaml');
  prefix = uniqueName('tr');
  jp = uniqueName('jt');
  await writeFile(
    configPath,
    `${simConnectionLines(h.sim.url, 'TR_SECRET', { timezone: 'UTC', pollIntervalMs: 20 }).join('\n')}
  ${jp}_queued:
    connection: sim
    report: { mandant: 7777, name: Sales/Orders, outputType: json, paging: 100, parameters: { ROWS: "250" } }
    target: { table: ${h.schema}.queued, mode: replace }
  ${jp}_run:
    connection: sim
    report: { mandant: 7777, name: Stock/Levels, outputType: txt, paging: 100 }
    target: { table: ${h.schema}.foreground, mode: replace }
`,
  );
});
afterAll(async () => {
  await deleteKeys(h.redis, prefix);
  await deleteRuns(h.pool, jp);
  await new Promise((resolve) => receiver.server.close(resolve));
  await rm(dir, { recursive: true, force: true });
});

/** NODE_OPTIONS that make a child print the @opentelemetry packages it loaded (test/fixtures/otel-loads.mjs). */
const WATCH_LOADS = {
  NODE_OPTIONS: `--import=${fileURLToPath(new URL('./fixtures/otel-loads.mjs', import.meta.url))}`,
};
const loadedPackages = (stderr: string): string[] =>
  JSON.parse(/otel packages loaded: (.*)\n/.exec(stderr)![1]!) as string[];

const baseEnv = () => ({
  TR_SECRET: 'demo-secret',
  REPORT_ETL_QUEUE_PREFIX: prefix,
  LOG_FORMAT: 'json',
  LOG_LEVEL: 'info',
});

it(
  'a queued run is one trace from its enqueue to the attempt, its steps and pages, ' + 'keyed by etl.attempts.trace_id',
  async () => {
    const job = `${jp}_queued`;
    const otel = { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' };
    const worker = startCli(['worker', '--config', configPath], { ...baseEnv(), ...otel });
    try {
      await waitFor('the worker takes runs', () => worker.stderr().includes('worker ready'));
      const enqueued = await runCli(['enqueue', job, '--config', configPath], { ...baseEnv(), ...otel });
      expect(enqueued.code).toBe(0);
      const attempt = await waitFor(
        'the attempt succeeded',
        async () => {
          const { rows } = await h.pool.query<{
            attempt_id: string;
            status: string;
            trace_id: string | null;
            run_key: string;
            timeline: unknown;
          }>(`SELECT attempt_id, status, trace_id, run_key, timeline FROM etl.attempts WHERE job = $1`, [job]);
          return rows[0]?.status === 'succeeded' && rows[0].timeline ? rows[0] : undefined;
        },
        60_000,
      );
      // A graceful stop exports the spans still batched.
      worker.child.kill('SIGTERM');
      expect(await worker.exited).toBe(0);

      expect(attempt.trace_id).toMatch(/^[0-9a-f]{32}$/);
      const spans = receiver.received.spans.filter((s) => s.traceId === attempt.trace_id);
      const one = (name: string) => {
        const found = spans.filter((s) => s.name === name);
        expect(found, name).toHaveLength(1);
        return found[0]!;
      };
      // The trace begins at the enqueue: enqueue run → process run → attempt.
      const enqueue = one('enqueue run');
      expect(enqueue.parentSpanId).toBeUndefined();
      expect(enqueue.attributes['report_etl.run_key']).toBe(attempt.run_key);
      const processRun = one('process run');
      expect(processRun.parentSpanId).toBe(enqueue.spanId);
      const root = one('attempt');
      expect(root.parentSpanId).toBe(processRun.spanId);
      expect(root.attributes).toMatchObject({
        'report_etl.attempt_id': attempt.attempt_id,
        'report_etl.job': job,
        'report_etl.run_key': attempt.run_key,
        'report_etl.output_type': 'json',
        'report_etl.rows': 250,
        'report_etl.pages': 3,
        'report_etl.status': 'succeeded',
      });
      expect(root.attributes['report_etl.bytes']).toBeGreaterThan(0);
      for (const step of [
        'wait for report slot',
        'record attempt',
        'check attempt',
        'access token',
        'start report job',
        'render report',
        'load',
        'delete report job',
      ]) {
        expect(one(step).parentSpanId, step).toBe(root.spanId);
      }
      expect(one('render report').attributes['report_etl.polls']).toBeGreaterThanOrEqual(1);
      const load = one('load');
      for (const step of ['copy', 'commit']) expect(one(step).parentSpanId, step).toBe(load.spanId);
      // Each page: a span under the load with its fetch and its reading; rows and bytes per page.
      const pages = spans
        .filter((s) => s.name === 'page')
        .sort((a, b) => Number(a.attributes['report_etl.page']) - Number(b.attributes['report_etl.page']));
      expect(
        pages.map((p) => [p.parentSpanId, p.attributes['report_etl.page'], p.attributes['report_etl.rows']]),
      ).toEqual([
        [load.spanId, 1, 100],
        [load.spanId, 2, 100],
        [load.spanId, 3, 50],
      ]);
      const child = (page: OtlpSpan, name: string) =>
        spans.find((s) => s.parentSpanId === page.spanId && s.name === name)!;
      for (const p of pages) {
        expect(p.attributes['report_etl.bytes']).toBeGreaterThan(0);
        expect(child(p, 'fetch page').start).toBe(p.start);
        expect(Object.keys(child(p, 'read page').attributes)).toEqual(
          expect.arrayContaining([
            'report_etl.page.network_ms',
            'report_etl.page.decode_ms',
            'report_etl.page.copy_ms',
          ]),
        );
      }
      // One page is fetched ahead: page 2 is asked for while page 1 is read.
      const read1 = child(pages[0]!, 'read page');
      const fetch2 = child(pages[1]!, 'fetch page');
      expect(fetch2.start >= read1.start && fetch2.start < read1.end).toBe(true);
      // Every span of the trace is report-etl's, and the worker's log lines of the attempt carry its trace id.
      expect(spans.every((s) => s.status?.code !== 2)).toBe(true);
      const lines = worker
        .stderr()
        .split('\n')
        .filter((l) => l.includes(attempt.attempt_id))
        .map((l) => JSON.parse(l) as { traceId?: string; msg: string });
      expect(lines.map((l) => l.msg)).toEqual(expect.arrayContaining(['run started', 'page loaded', 'run succeeded']));
      expect(lines.every((l) => l.traceId === attempt.trace_id)).toBe(true);
      // The timeline on the attempt's row has the same steps and pages.
      const timeline = readTimeline(attempt.timeline)!;
      expect(timeline.pages.map((p) => [p.page, p.rows])).toEqual([
        [1, 100],
        [2, 100],
        [3, 50],
      ]);
      expect(timeline.steps.map((s) => s.step)).toEqual(
        expect.arrayContaining(['slot', 'record', 'token', 'start', 'render', 'load', 'copy', 'commit', 'delete']),
      );
    } finally {
      if (worker.child.exitCode === null) worker.child.kill('SIGKILL');
    }
  },
);

it("report-etl run exports over http/protobuf (OTLP's default) and flushes its spans before it exits", async () => {
  const job = `${jp}_run`;
  const before = receiver.received.protobuf.length;
  const r = await runCli(['run', job, '--config', configPath], {
    ...baseEnv(),
    ...WATCH_LOADS,
    LOG_FORMAT: 'pretty',
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${receiver.url}/v1/traces`,
  });
  expect(r.code).toBe(0);
  expect(loadedPackages(r.stderr)).toEqual(
    expect.arrayContaining([
      '@opentelemetry/api',
      '@opentelemetry/sdk-trace',
      '@opentelemetry/exporter-trace-otlp-proto',
    ]),
  );
  expect(loadedPackages(r.stderr)).not.toContain('@opentelemetry/exporter-trace-otlp-http');
  const { rows } = await h.pool.query<{ trace_id: string | null }>(`SELECT trace_id FROM etl.attempts WHERE job = $1`, [
    job,
  ]);
  expect(rows[0]!.trace_id).toMatch(/^[0-9a-f]{32}$/);
  // At a terminal the trace id is said once, where the run starts.
  expect(r.stderr).toMatch(new RegExp(`run started: .*, trace ${rows[0]!.trace_id}\\n`));
  expect(r.stderr).not.toContain('traceId=');
  const sent = receiver.received.protobuf.slice(before);
  expect(sent.length).toBeGreaterThan(0);
  expect(sent.every((p) => p.contentType === 'application/x-protobuf')).toBe(true);
  // The trace id goes in the protobuf body as its 16 bytes.
  expect(sent.some((p) => p.body.includes(Buffer.from(rows[0]!.trace_id!, 'hex')))).toBe(true);
});

it(
  'without an OTLP endpoint nothing is traced: no trace id, no tracing line; ' +
    'the timeline is recorded all the same',
  async () => {
    const job = `${jp}_run`;
    await h.pool.query(`DELETE FROM etl.runs WHERE job = $1`, [job]);
    const before = receiver.received.paths.length;
    const r = await runCli(['run', job, '--config', configPath], { ...baseEnv(), ...WATCH_LOADS });
    expect(r.code).toBe(0);
    // The API alone: the SDK and its exporters are imported only when an endpoint is set.
    expect(loadedPackages(r.stderr)).toEqual(['@opentelemetry/api']);
    expect(r.stderr).not.toContain('tracing:');
    expect(r.stderr).not.toContain('traceId');
    const { rows } = await h.pool.query<{ trace_id: string | null; timeline: unknown }>(
      `SELECT trace_id, timeline FROM etl.attempts WHERE job = $1`,
      [job],
    );
    expect(rows[0]!.trace_id).toBeNull();
    const timeline = readTimeline(rows[0]!.timeline)!;
    expect(timeline.pages).toHaveLength(1);
    // The target exists from the run before with every column: a replace deletes its rows, then COPY goes straight in.
    expect(timeline.steps.map((s) => s.step)).toEqual([
      'slot',
      'record',
      'check',
      'token',
      'start',
      'render',
      'load',
      'target_delete',
      'copy',
      'commit',
      'delete',
    ]);
    expect(receiver.received.paths.length).toBe(before);
  },
);

it(
  'an OTLP endpoint nobody listens on: report-etl run succeeds, its flush is bounded, and one line says the ' +
    'traces were dropped',
  async () => {
    // A port that was just free: nothing answers there, every export is refused.
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const port = (probe.address() as AddressInfo).port;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const r = await runCli(['run', `${jp}_run`, '--config', configPath], {
      ...baseEnv(),
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`,
    });
    expect(r.code).toBe(0);
    const told = r.stderr
      .split('\n')
      .filter((l) => l.includes(`127.0.0.1:${port}/v1/traces`) && l.includes('"level":40'));
    // The exporter's retries (at most 2 s in a short command) end in one line, not one per failure and a timeout.
    expect(told).toHaveLength(1);
    expect(told[0]).toMatch(/tracing: the OTLP endpoint did not take the last \d+ spans before exit \(.*ECONNREFUSED/);
    expect(told[0]).toContain('); these traces were dropped');
    expect(r.stderr).not.toContain('could not export spans');
  },
);

it(
  'a worker whose collector takes connections and never answers stops after SIGTERM with its last export bounded, ' +
    'and one line counts the spans dropped',
  async () => {
    // A black hole: a TCP listener that accepts every connection and never says a word.
    const held = new Set<Socket>();
    const hole = createNetServer((s) => {
      held.add(s);
      s.on('close', () => held.delete(s));
    });
    await new Promise<void>((resolve) => hole.listen(0, '127.0.0.1', resolve));
    const port = (hole.address() as AddressInfo).port;
    const job = `${jp}_queued`;
    // No export before the stop (a batch waits 10 min): the run's spans all go in the final flush.
    const otel = { OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`, OTEL_BSP_SCHEDULE_DELAY: '600000' };
    const worker = startCli(['worker', '--config', configPath, '--grace', '30'], { ...baseEnv(), ...otel });
    try {
      await waitFor('the worker takes runs', () => worker.stderr().includes('worker ready'));
      const succeeded = async () =>
        (
          await h.pool.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM etl.attempts WHERE job = $1 AND status = 'succeeded'`,
            [job],
          )
        ).rows[0]!.n;
      const before = await succeeded();
      expect((await runCli(['enqueue', job, '--config', configPath], baseEnv())).code).toBe(0);
      await waitFor('the run succeeded', async () => (await succeeded()) > before, 60_000);
      worker.child.kill('SIGTERM');
      expect(await worker.exited).toBe(0);
      const told = worker
        .stderr()
        .split('\n')
        .filter((l) => l.includes(`127.0.0.1:${port}/v1/traces`) && l.includes('"level":40'));
      // The final export gave up on its own (capped at 2 s), so the line counts the spans; a flush that outlived
      // the shutdown's 5 s would say "the last spans … (no answer within 5000 ms)" and leave the request pending.
      expect(told).toHaveLength(1);
      expect(told[0]).toMatch(
        /tracing: the OTLP endpoint did not take the last \d+ spans before exit \(Request timed out\)/,
      );
      expect(JSON.parse(told[0]!)).toMatchObject({ spans: expect.any(Number) as unknown });
      expect(worker.stdout()).toContain('report-etl stopped');
    } finally {
      if (worker.child.exitCode === null) worker.child.kill('SIGKILL');
      for (const s of held) s.destroy();
      await new Promise((resolve) => hole.close(resolve));
    }
  },
);

it('a tracing setting report-etl cannot follow stops the command with a clear error (exit 2)', async () => {
  const r = await runCli(['run', `${jp}_run`, '--config', configPath], {
    ...baseEnv(),
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
  });
  expect(r.code).toBe(2);
  expect(r.stderr).toContain(
    'config error: OTEL_EXPORTER_OTLP_PROTOCOL is "grpc": report-etl exports traces over OTLP/HTTP only',
  );
});

it('reads the OTLP variables as the specification says', () => {
  expect(tracingSettings({})).toBeUndefined();
  expect(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).toEqual({
    endpoint: 'http://collector:4318/v1/traces',
    protocol: 'http/protobuf',
  });
  expect(
    tracingSettings({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    }),
  ).toEqual({ endpoint: 'http://collector:4318/v1/traces', protocol: 'http/json' });
  // The traces endpoint is used as it is, and its protocol wins over the general one.
  expect(
    tracingSettings({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318',
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://b/otlp/traces',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
      OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json',
    }),
  ).toEqual({
    endpoint: 'https://b/otlp/traces',
    protocol: 'http/json',
  });
  expect(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318', OTEL_SDK_DISABLED: 'true' })).toBeUndefined();
  expect(
    tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318', OTEL_TRACES_EXPORTER: 'none' }),
  ).toBeUndefined();
  expect(() => tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' })).toThrow(
    'must start with http:// or https://',
  );
  // A collector's credentials in the address are not repeated in the error.
  expect(() => tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'grpc://user:s3cret@collector:4317' })).toThrow(
    /grpc:\/\/…@collector:4317/,
  );
  expect(() =>
    tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318', OTEL_TRACES_EXPORTER: 'zipkin' }),
  ).toThrow('exports traces over OTLP only');
});
