/**
 * Watches jobs.yaml and delivers every valid change; an invalid change is reported and the caller keeps the
 * config it runs with (docs/architecture.md).
 *
 * The directory is watched, not the file: editors that save by writing a temporary file and renaming it over
 * the original replace the inode, and a watch on the old inode would go silent.
 */
import { watch, readFileSync, type FSWatcher } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { basename, dirname, resolve } from 'node:path';
import { createHash } from 'node:crypto';
import { ConfigError, coerceError } from '../errors.ts';
import { silentLogger, type Logger } from '../logger.ts';
import { validateConfigText, type LoadedConfig } from './load.ts';
import { validateConfigIsolated, type RunningJobs } from './isolate.ts';

/** What {@link watchConfig} calls. */
export interface ConfigWatchHandlers {
  /** A changed file that validates; `c.hash` differs from the previous delivery. */
  onChange(c: LoadedConfig): void;
  /** A changed file that does not validate (or vanished); keep the running config. */
  onError(e: ConfigError): void;
}

/** A running watch; `close()` is idempotent and waits for a reload in progress. */
export interface ConfigWatcher {
  close(): Promise<void>;
}

/** Tuning of {@link watchConfig}. */
export interface WatchOptions {
  /** Quiet time after the last file event before the file is read, in ms (default 200). */
  debounceMs?: number;
  /** Where a handler's own exception is logged (default: silent). */
  logger?: Logger;
  /** Isolate invalid jobs (config/isolate.ts) instead of refusing the whole change (default false). */
  isolate?: boolean;
  /** With isolate: the jobs in force before the change, so that a running job is not left out for a newcomer's sake. */
  running?: () => RunningJobs | undefined;
  /**
   * Told after every read of the file, whatever came of it (`unchanged`: the same text as before, nothing delivered),
   * so that a caller can tell "read and found nothing new" from "not read yet".
   */
  onRead?: (outcome: ReadOutcome) => void;
}

/** What one read of the watched file came to. */
export type ReadOutcome = 'unchanged' | 'changed' | 'invalid' | 'unreadable';

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/**
 * Watches `path` (fs.watch on its directory, debounced) and calls `onChange` with the new config when a valid
 * change arrives, `onError` with the ConfigError when it is invalid. A save that leaves the text unchanged
 * (same sha256) calls nothing; the same invalid text is reported once.
 *
 * @param path the jobs.yaml; problems name it as given
 * @param env the environment for `${VAR}` (default process.env)
 * @returns the watcher; call `close()` on shutdown
 */
export function watchConfig(
  path: string,
  handlers: ConfigWatchHandlers,
  env: NodeJS.ProcessEnv = process.env,
  options: WatchOptions = {},
): ConfigWatcher {
  const debounceMs = options.debounceMs ?? 200;
  const logger = options.logger ?? silentLogger;
  const full = resolve(path);
  const base = basename(full);
  let lastHash: string | undefined;
  try {
    lastHash = sha256(readFileSync(full, 'utf8'));
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

  const reloadOnce = async () => {
    const outcome = await readOnce();
    if (options.onRead) call(() => options.onRead!(outcome));
  };

  const readOnce = async (): Promise<ReadOutcome> => {
    let text: string;
    try {
      text = await readFile(full, 'utf8');
    } catch (err) {
      if (lastHash === 'missing') return 'unchanged';
      lastHash = 'missing';
      const code = (err as NodeJS.ErrnoException).code ?? 'error';
      if (!closing)
        call(() =>
          handlers.onError(
            new ConfigError([`${path}: cannot read the changed file (${code}); keeping the running config`], {
              cause: err,
            }),
          ),
        );
      return 'unreadable';
    }
    const hash = sha256(text);
    if (hash === lastHash) return 'unchanged';
    lastHash = hash;
    let loaded: LoadedConfig;
    try {
      loaded = options.isolate
        ? { path, hash, ...validateConfigIsolated(text, path, env, options.running?.()) }
        : { path, config: validateConfigText(text, path, env), hash, invalid: [] };
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
        await reloadOnce();
      } while (again && !closing);
    })().finally(() => {
      running = undefined;
    });
  };

  const watcher: FSWatcher = watch(dirname(full), { persistent: true }, (_event, filename) => {
    // filename may be null on some platforms: then any event in the directory may be ours.
    if (closing || (filename !== null && filename !== base)) return;
    if (timer) clearTimeout(timer);
    timer = setTimeout(reload, debounceMs);
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
