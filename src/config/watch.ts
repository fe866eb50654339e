/**
 * Watches jobs.yaml and delivers every valid change; the caller keeps its config on an invalid one. The directory
 * is watched, not the file: an editor that saves by renaming a new file over it replaces the inode.
 */
import { watch, readFileSync, type FSWatcher } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { basename, dirname, resolve } from 'node:path';
import { ConfigError, coerceError } from '../errors.ts';
import { silentLogger, type Logger } from '../logger.ts';
import { configFromText, textHash, type LoadedConfig } from './load.ts';
import type { RunningJobs } from './isolate.ts';

/** What {@link watchConfig} calls. */
export interface ConfigWatchHandlers {
  /** A changed file that validates. */
  onChange(c: LoadedConfig): void;
  /** A changed file that does not validate, or vanished. */
  onError(e: ConfigError): void;
}

/** A running watch; `close()` is idempotent and waits for a reload in progress. */
export interface ConfigWatcher {
  close(): Promise<void>;
}

/** Options of {@link watchConfig}. */
export interface WatchOptions {
  /** Quiet time after the last file event before the file is read, in ms (default 200). */
  debounceMs?: number;
  /** Where a handler's exception is logged. */
  logger?: Logger;
  /** Isolate invalid jobs (isolate.ts) instead of refusing the whole change. */
  isolate?: boolean;
  /** With isolate: the jobs in force (isolate.ts RunningJobs). */
  running?: () => RunningJobs | undefined;
  /** Told after every read, so that a caller can tell "read, nothing new" from "not read yet". */
  onRead?: (outcome: ReadOutcome) => void;
}

/** What one read of the watched file came to. */
export type ReadOutcome = 'unchanged' | 'changed' | 'invalid' | 'unreadable';

/**
 * Watches `path` (debounced) and calls `onChange` with each valid change, `onError` with each invalid one. The
 * same text (sha256) calls nothing again.
 */
export function watchConfig(
  path: string,
  handlers: ConfigWatchHandlers,
  env: NodeJS.ProcessEnv = process.env,
  options: WatchOptions = {},
): ConfigWatcher {
  const logger = options.logger ?? silentLogger;
  const full = resolve(path);
  const base = basename(full);
  let lastHash: string | undefined;
  try {
    lastHash = textHash(readFileSync(full, 'utf8'));
  } catch {
    lastHash = undefined;
  }
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let again = false;
  let closing: Promise<void> | undefined;

  const call = (fn: () => void) => {
    try {
      fn();
    } catch (err) {
      logger.error({ err: coerceError(err), path }, 'config watch handler threw');
    }
  };

  const readOnce = async (): Promise<ReadOutcome> => {
    let text: string;
    try {
      text = await readFile(full, 'utf8');
    } catch (err) {
      if (lastHash === 'missing') return 'unchanged';
      lastHash = 'missing';
      const code = (err as NodeJS.ErrnoException).code ?? 'error';
      const message = `${path}: cannot read the changed file (${code}); keeping the running config`;
      if (!closing) call(() => handlers.onError(new ConfigError([message], { cause: err })));
      return 'unreadable';
    }
    const hash = textHash(text);
    if (hash === lastHash) return 'unchanged';
    lastHash = hash;
    let loaded: LoadedConfig;
    try {
      loaded = configFromText(text, path, env, { isolate: options.isolate, running: options.running?.() });
    } catch (err) {
      const e =
        err instanceof ConfigError ? err : new ConfigError([`${path}: ${coerceError(err).message}`], { cause: err });
      if (!closing) call(() => handlers.onError(e));
      return 'invalid';
    }
    if (!closing) call(() => handlers.onChange(loaded));
    return 'changed';
  };

  const reload = () => {
    timer = undefined;
    if (running) {
      again = true;
      return;
    }
    running = (async () => {
      do {
        again = false;
        const outcome = await readOnce();
        if (options.onRead) call(() => options.onRead!(outcome));
      } while (again && !closing);
    })().finally(() => {
      running = undefined;
    });
  };

  const watcher: FSWatcher = watch(dirname(full), { persistent: true }, (_event, filename) => {
    // filename may be null on some platforms: then any event in the directory may be ours.
    if (closing || (filename !== null && filename !== base)) return;
    if (timer) clearTimeout(timer);
    timer = setTimeout(reload, options.debounceMs ?? 200);
  });
  watcher.on('error', (err) => {
    if (!closing)
      call(() => handlers.onError(new ConfigError([`${path}: cannot watch the file: ${err.message}`], { cause: err })));
  });

  return {
    close() {
      closing ??= (async () => {
        if (timer) clearTimeout(timer);
        watcher.close();
        await running;
      })();
      return closing;
    },
  };
}
