/**
 * How `run`, `enqueue` and `backfill` read jobs.yaml: invalid jobs do not stop a valid
 * one. The valid job runs; each invalid job or alert target gets one warning line on stderr (its first problem,
 * file:line, what and how to fix); asking for an invalid job itself fails with every problem of it (exit 2).
 */
import { describeInvalid } from '../config/isolate.ts';
import { loadConfig, type LoadedConfig } from '../config/load.ts';
import { ConfigError } from '../errors.ts';
import type { Cli } from './types.ts';

/**
 * Loads `path` with invalid jobs isolated, for a command about `job`.
 * @returns the loaded config (valid jobs only)
 * @throws ConfigError when the file cannot be used at all, or when `job` itself is invalid (every problem of it)
 */
export async function loadConfigForJob(cli: Cli, path: string, job: string): Promise<LoadedConfig> {
  const loaded = await loadConfig(path, process.env, { isolate: true });
  const own = loaded.invalid.find((e) => e.kind === 'job' && e.name === job);
  if (own) throw new ConfigError(own.problems);
  for (const e of loaded.invalid) cli.err(`warning: ${describeInvalid(e)}`);
  return loaded;
}
