/**
 * How `run`, `enqueue`, `backfill` and `preview` read jobs.yaml: invalid jobs do not stop a valid one; each gets one
 * warning line on stderr, and asking for an invalid job fails with every problem of it (exit 2).
 */
import { describeInvalid } from '../config/isolate.ts';
import { loadConfig, type LoadedConfig } from '../config/load.ts';
import { ConfigError } from '../errors.ts';
import type { Cli } from './types.ts';

/**
 * Loads `path` with invalid jobs isolated, for a command about `job`.
 * @throws ConfigError when the file cannot be used at all, or `job` is invalid
 */
export async function loadConfigForJob(cli: Cli, path: string, job: string): Promise<LoadedConfig> {
  const loaded = await loadConfig(path, process.env, { isolate: true });
  const own = loaded.invalid.find((e) => e.kind === 'job' && e.name === job);
  if (own) throw new ConfigError(own.problems);
  for (const e of loaded.invalid) cli.err(`warning: ${describeInvalid(e)}`);
  return loaded;
}
