/**
 * The jobs.yaml of a long-running process: a valid change replaces it and is announced; an invalid one is logged
 * and the running config kept.
 */
import type { EtlConfig } from './schema.ts';
import { loadConfig } from './load.ts';
import { describeInvalid, type InvalidEntry } from './isolate.ts';
import { watchConfig } from './watch.ts';
import type { Logger } from '../logger.ts';

/** The current config and its changes. */
export interface LiveConfig {
  /** The valid jobs and alert targets in force. */
  current(): EtlConfig;
  /** The invalid ones, left out (isolate.ts). */
  invalid(): InvalidEntry[];
  /** Calls `fn` after every valid change; returns the unsubscribe function. */
  onChange(fn: (config: EtlConfig) => void): () => void;
  /** Stops watching. Idempotent. */
  close(): Promise<void>;
}

/** A config whose changes the caller applies with `set` (tests, embedding). */
export function settableConfig(
  config: EtlConfig,
  invalid: InvalidEntry[] = [],
): LiveConfig & { set(config: EtlConfig, invalid?: InvalidEntry[]): void } {
  let now = config;
  let left = invalid;
  const subscribers = new Set<(c: EtlConfig) => void>();
  return {
    current: () => now,
    invalid: () => left,
    onChange(fn) {
      subscribers.add(fn);
      return () => subscribers.delete(fn);
    },
    set(c, i = []) {
      now = c;
      left = i;
      for (const fn of subscribers) fn(c);
    },
    close: async () => undefined,
  };
}

/** A config that never changes (tests, one-shot commands). */
export const staticConfig: (config: EtlConfig, invalid?: InvalidEntry[]) => LiveConfig = settableConfig;

function logInvalid(log: Logger, invalid: InvalidEntry[]): void {
  for (const e of invalid)
    log.warn(
      { [e.kind]: e.name, problems: e.problems },
      `jobs.yaml: invalid ${e.kind === 'job' ? 'job' : 'alert target'}: ${describeInvalid(e)}`,
    );
}

/**
 * Loads `path` with invalid jobs isolated, and watches it; the invalid ones are logged at start and each change.
 * @param options.debounceMs see watch.ts WatchOptions
 * @throws ConfigError when the file cannot be used at start
 */
export async function watchLiveConfig(
  path: string,
  logger: Logger,
  options: { env?: NodeJS.ProcessEnv; debounceMs?: number } = {},
): Promise<LiveConfig> {
  const env = options.env ?? process.env;
  const loaded = await loadConfig(path, env, { isolate: true });
  const live = settableConfig(loaded.config, loaded.invalid);
  const log = logger.child({ component: 'config', path });
  logInvalid(log, loaded.invalid);
  let running = { writtenJobs: loaded.writtenJobs ?? {} };
  const watcher = watchConfig(
    path,
    {
      onChange(c) {
        log.info(
          { jobs: Object.keys(c.config.jobs), invalid: c.invalid.map((e) => e.name) },
          'jobs.yaml changed: new config in force',
        );
        logInvalid(log, c.invalid);
        for (const e of c.keptRunning ?? [])
          log.warn(
            { job: e.name, problems: e.problems },
            `jobs.yaml: job "${e.name}" keeps running as it was; the job the change brought for its table is ` +
              'skipped (problems: why)',
          );
        running = { writtenJobs: c.writtenJobs ?? {} };
        live.set(c.config, c.invalid);
      },
      onError(e) {
        log.error(
          { problems: e.problems },
          `jobs.yaml changed but is invalid: keeping the running config\n${e.message}`,
        );
      },
    },
    env,
    {
      logger: log,
      isolate: true,
      running: () => running,
      ...(options.debounceMs !== undefined ? { debounceMs: options.debounceMs } : {}),
    },
  );
  return { current: live.current, invalid: live.invalid, onChange: live.onChange, close: () => watcher.close() };
}
