/**
 * The running jobs.yaml of a long-lived process (issue 4 "jobs.yaml is watched"): a valid change replaces it and
 * is announced to subscribers; an invalid change is logged with every problem and the running config is kept.
 */
import type { EtlConfig } from './schema.ts';
import { loadConfig } from './load.ts';
import { watchConfig } from './watch.ts';
import type { Logger } from '../logger.ts';

/** The current config and its changes. */
export interface LiveConfig {
  /** The config in force now. */
  current(): EtlConfig;
  /** Calls `fn` after every valid change; returns the unsubscribe function. */
  onChange(fn: (config: EtlConfig) => void): () => void;
  /** Stops watching. Idempotent. */
  close(): Promise<void>;
}

/** A config that never changes (tests, one-shot commands). */
export function staticConfig(config: EtlConfig): LiveConfig {
  return { current: () => config, onChange: () => () => undefined, close: async () => undefined };
}

/** A config whose changes the caller applies with `set` (tests, embedding). */
export function settableConfig(config: EtlConfig): LiveConfig & { set(config: EtlConfig): void } {
  let now = config;
  const subscribers = new Set<(c: EtlConfig) => void>();
  return {
    current: () => now,
    onChange(fn) {
      subscribers.add(fn);
      return () => subscribers.delete(fn);
    },
    set(c) {
      now = c;
      for (const fn of subscribers) fn(c);
    },
    close: async () => undefined,
  };
}

/**
 * Loads `path` and watches it.
 * @param options.debounceMs quiet time after a file event before it is read, in ms (default 200)
 * @throws ConfigError when the file is invalid at start (every problem listed)
 */
export async function watchLiveConfig(path: string, logger: Logger, options: { env?: NodeJS.ProcessEnv; debounceMs?: number } = {}): Promise<LiveConfig> {
  const env = options.env ?? process.env;
  const loaded = await loadConfig(path, env);
  const live = settableConfig(loaded.config);
  const log = logger.child({ component: 'config', path });
  const watcher = watchConfig(
    path,
    {
      onChange(c) {
        log.info({ jobs: Object.keys(c.config.jobs) }, 'jobs.yaml changed: new config in force');
        live.set(c.config);
      },
      onError(e) {
        log.error({ problems: e.problems }, `jobs.yaml changed but is invalid: keeping the running config\n${e.message}`);
      },
    },
    env,
    { logger: log, ...(options.debounceMs !== undefined ? { debounceMs: options.debounceMs } : {}) },
  );
  return { current: live.current, onChange: live.onChange, close: () => watcher.close() };
}
