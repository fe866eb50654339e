/**
 * The options several commands share, each defined once (README "Commands"). Bad values throw
 * `InvalidArgumentError`, so that each exits the same way: `error: option '--since <when>' argument 'x' is
 * invalid. <why>`, exit code 2.
 */
import { InvalidArgumentError, Option, type Command } from 'commander';
import { parseWindow } from '../config/duration.ts';
import { parseZonedDate } from '../config/time-template.ts';
import { ConfigError } from '../errors.ts';
import { LOG_FORMATS, type LogFormat } from '../log-format.ts';
import { queuePrefixFromEnv } from '../queue/names.ts';
import { prefixForRedis } from '../redis-url.ts';

/** Adds `-c, --config <path>` (default `$REPORT_ETL_CONFIG`, else `./jobs.yaml`). */
export function configOption(cmd: Command, description = 'jobs.yaml to read'): Command {
  return cmd.option(
    '-c, --config <path>',
    `${description} ($REPORT_ETL_CONFIG)`,
    process.env.REPORT_ETL_CONFIG ?? 'jobs.yaml',
  );
}

/** The words of `--config` of a command that needs no jobs.yaml: taken, so that wrappers may pass it to every one. */
export const CONFIG_NOT_READ = 'jobs.yaml: accepted like every command, not read (this command needs none)';

/**
 * Adds `--queue-prefix <prefix>` (default queue/names.ts queuePrefixFromEnv). A prefix without a hash tag on a Redis
 * Cluster, given here or in the environment, stops the command before its action (exit 2).
 */
export function queuePrefixOption(cmd: Command): Command {
  let fallback: string;
  try {
    fallback = queuePrefixFromEnv();
  } catch (err) {
    fallback = process.env.REPORT_ETL_QUEUE_PREFIX ?? '';
    cmd.hook('preAction', () => {
      throw err;
    });
  }
  const option = new Option('--queue-prefix <prefix>', 'BullMQ key prefix ($REPORT_ETL_QUEUE_PREFIX)')
    .default(fallback)
    .argParser((value: string) => {
      try {
        return prefixForRedis(value, process.env.REDIS_URL, true);
      } catch (err) {
        throw new InvalidArgumentError((err as Error).message);
      }
    });
  return cmd.addOption(option);
}

/** Adds `-p, --param <NAME=VALUE>`, repeatable; `{}` when not given. */
export function paramOption(cmd: Command): Command {
  const collect = (value: string, previous: Record<string, string>): Record<string, string> => {
    const eq = value.indexOf('=');
    if (eq <= 0) throw new InvalidArgumentError('write NAME=VALUE, e.g. -p FROM=2026-01-01');
    return { ...previous, [value.slice(0, eq)]: value.slice(eq + 1) };
  };
  return cmd.addOption(
    new Option('-p, --param <NAME=VALUE>', 'report parameter for this run (repeatable; overrides jobs.yaml)')
      .argParser(collect)
      .default({}, 'none'),
  );
}

/**
 * Adds `--mandant <N>`, repeatable or a list (`--mandant 7777,8888`): the mandants of a job with a list under
 * report.mandant to act on (docs/loaded-tables.md "Many mandants"); not given, all of them (config/mandants.ts
 * chooseSubjects).
 */
export function mandantOption(cmd: Command): Command {
  return cmd.addOption(
    new Option(
      '--mandant <N>',
      'with a list of mandants: only this mandant (repeatable, or 7777,8888; default all)',
    ).argParser((value: string, previous: string[] | undefined) => [...(previous ?? []), value]),
  );
}

/**
 * Adds `--logical-time <time>`: the logical time a run by hand stands for (docs/configuration.md "Run parameters and
 * logical time"), read in the job's zone by pipeline/logical-time.ts parseZonedDate. Default: now.
 */
export function logicalTimeOption(cmd: Command): Command {
  return cmd.option(
    '--logical-time <time>',
    "the logical time this run stands for, as a tick would: 2026-11-24 (midnight in the job's zone), " +
      '2026-11-24T06:00, or ISO with offset (default now)',
  );
}

/**
 * Parses a whole number option value >= `min`.
 * @throws InvalidArgumentError for anything else
 */
export function wholeNumber(min: number): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (value.trim() === '' || !Number.isInteger(n) || n < min)
      throw new InvalidArgumentError(`write a whole number >= ${min}`);
    return n;
  };
}

/**
 * Adds `--since <when>`: a window back from now (`30m`, `12h`, `2d`, `1w`) or a date/time as the commands print
 * them (`2026-01-31`, `2026-01-31T06:00`, `2026-01-31 06:00:00+01:00`; without an offset in UTC, docs/operations.md
 * "Times"). A date that names no moment (`2026-02-30`) is refused, never rolled over.
 */
export function sinceOption(cmd: Command, description: string): Command {
  return cmd.option(
    '--since <when>',
    `${description}: a window (30m, 12h, 2d) or a date (without an offset: UTC)`,
    (text: string) => {
      const ms = parseWindow(text);
      if (ms !== undefined) return new Date(Date.now() - ms);
      if (!/^\s*\d{4}-/.test(text))
        throw new InvalidArgumentError('write a window such as 2d or 12h, or a date such as 2026-01-31');
      try {
        return parseZonedDate(text, 'UTC');
      } catch (err) {
        // "not a date: "2026-02-30": 2026-02 has no day 30 (write …)"
        if (err instanceof ConfigError) throw new InvalidArgumentError(err.message);
        throw err;
      }
    },
  );
}

/** Adds `--log-format <json|pretty>` (default: `LOG_FORMAT`, else pretty on a terminal, JSON lines otherwise). */
export function logFormatOption(cmd: Command): Command {
  return cmd.addOption(
    new Option(
      '--log-format <format>',
      'log lines on stderr: json, or pretty (default: $LOG_FORMAT, else pretty on a terminal)',
    ).choices(LOG_FORMATS),
  );
}

/** The parsed `--log-format`, for makeLogger. */
export type LogFormatFlag = { logFormat?: LogFormat };

/** Adds the options of a job run by hand (`run`, `preview`): config, param, log format, logical time, mandant. */
export function manualRunOptions(cmd: Command): Command {
  for (const add of [configOption, paramOption, logFormatOption, logicalTimeOption, mandantOption]) add(cmd);
  return cmd;
}

/** What {@link manualRunOptions} parses. */
export interface ManualRunFlags extends LogFormatFlag {
  config: string;
  param: Record<string, string>;
  logicalTime?: string;
  mandant?: string[];
}
