/**
 * The process logger (pino) on stderr, so that stdout stays free for command output: JSON lines, or on a terminal
 * one readable line per record (log-format.ts). Secrets are redacted by path (docs/architecture.md "Errors").
 */
import { pino, type DestinationStream, type Logger, type LoggerOptions } from 'pino';
import { prettyLine, resolveLogFormat, type LogFormat } from './log-format.ts';
import { terminalSafe } from './terminal-text.ts';

export type { Logger };

const SECRETS = ['clientSecret', 'client_secret', 'accessToken', 'access_token', 'refreshToken', 'refresh_token'];
const SECRET_KEYS = [...SECRETS, 'authorization', 'Authorization', 'password'];
/** Object paths pino blanks out in every log line. */
export const REDACT_PATHS = [
  ...SECRET_KEYS,
  ...SECRET_KEYS.map((k) => `*.${k}`),
  'headers.authorization',
  'req.headers.authorization',
  'connection.clientSecret',
  'connections.*.clientSecret',
];

/** Writes each record as a {@link prettyLine}, made terminal-safe, to stderr. */
function prettyDestination(): DestinationStream {
  return {
    write(line: string) {
      let record: Record<string, unknown>;
      try {
        record = JSON.parse(line) as Record<string, unknown>;
      } catch {
        process.stderr.write(line);
        return;
      }
      process.stderr.write(terminalSafe(prettyLine(record)));
    },
  };
}

/**
 * Makes the root logger. Level from `LOG_LEVEL` (default `info`); format from `format`, else `LOG_FORMAT`, else
 * pretty on a terminal and JSON lines otherwise.
 * @param options extra pino options (merged over the defaults)
 * @throws ConfigError for an unknown format
 */
export function makeLogger(options: LoggerOptions = {}, format: LogFormat | undefined = undefined): Logger {
  const pretty = (format ?? resolveLogFormat()) === 'pretty';
  return pino(
    {
      level: process.env.LOG_LEVEL ?? 'info',
      base: { pid: process.pid },
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      ...options,
    },
    pretty ? prettyDestination() : pino.destination({ fd: 2, sync: false }),
  );
}

/** A logger that drops everything: for tests and library use without logging. */
export const silentLogger: Logger = pino({ level: 'silent' });
