/**
 * Shared by the short queue commands (`enqueue`, `runs`, `replay`, `backfill`): opens Postgres (migrated), Redis
 * and the queue for one action and closes them after, whatever happens.
 */
import type { Command } from 'commander';
import { Option } from 'commander';
import type pg from 'pg';
import type { Queue } from 'bullmq';
import { defaultConfigPath } from '../cli.ts';
import { makePool, makeRedis, Releasers } from '../connections.ts';
import { parseWindow } from '../config/load.ts';
import { ConfigError } from '../errors.ts';
import { makeLogger, type Logger } from '../logger.ts';
import { queuePrefixFromEnv } from '../queue/names.ts';
import { makeQueue, type RunQueue } from '../queue/queue.ts';
import { migrate } from '../history/migrate.ts';

/** What a queue command's action gets. */
export interface QueueSession {
  pool: pg.Pool;
  queue: RunQueue;
  logger: Logger;
}

/** Adds `--queue-prefix` (and `--config` when `withConfig`). */
export function queueOptions(cmd: Command, withConfig: boolean): Command {
  if (withConfig) cmd.option('-c, --config <path>', 'jobs.yaml to read', defaultConfigPath());
  return cmd.addOption(new Option('--queue-prefix <prefix>', 'BullMQ key prefix').default(queuePrefixFromEnv()));
}

/** Runs `fn` with a migrated pool and the queue; closes both after. */
export async function withQueueSession<T>(prefix: string, fn: (s: QueueSession) => Promise<T>): Promise<T> {
  const logger = makeLogger();
  const releasers = new Releasers();
  try {
    const pool = makePool(logger, undefined, 2);
    releasers.add(() => pool.end());
    await migrate(pool, logger);
    const redis = makeRedis(logger);
    releasers.add(() => redis.quit());
    const queue = makeQueue(redis, prefix);
    releasers.add(() => queue.close());
    return await fn({ pool, queue, logger });
  } finally {
    await releasers.releaseAll().catch(() => undefined);
    logger.flush();
  }
}

/**
 * Parses `--since`: a window back from now (`30m`, `12h`, `2d`, `1w`) or a date/time (`2026-01-31`, ISO).
 * @throws ConfigError when it is neither
 */
export function parseSince(text: string | undefined, now = new Date()): Date | undefined {
  if (text === undefined) return undefined;
  const ms = parseWindow(text);
  if (ms !== undefined) return new Date(now.getTime() - ms);
  const d = new Date(text);
  if (Number.isNaN(d.getTime())) throw new ConfigError([`--since wants a window such as 2d or 12h, or a date such as 2026-01-31; got "${text}"`]);
  return d;
}

/** Parses repeated `--param NAME=VALUE` options. */
export function collectParam(value: string, previous: Record<string, string>): Record<string, string> {
  const eq = value.indexOf('=');
  if (eq <= 0) throw new ConfigError([`--param wants NAME=VALUE, got "${value}"`]);
  return { ...previous, [value.slice(0, eq)]: value.slice(eq + 1) };
}
