/**
 * The process logger (pino), writing to stderr so that stdout stays free for command output: JSON lines, or on a
 * terminal one readable line per record (log-format.ts; `--log-format`, `LOG_FORMAT`).
 *
 * Secrets are redacted by path (docs/architecture.md "Errors"): whatever a caller logs, a client secret,
 * a token or an Authorization header never reaches the log.
 */
import { pino, type DestinationStream, type Logger, type LoggerOptions } from 'pino';
import { prettyLine, resolveLogFormat, type LogFormat } from './log-format.ts';
import { terminalSafe } from './terminal-text.ts';

export type { Logger };

/** Object paths pino blanks out in every log line. */
export const REDACT_PATHS = [
  'clientSecret',
  'client_secret',
  'accessToken',
  'access_token',
  'refreshToken',
  'refresh_token',
  'authorization',
  'Authorization',
  'password',
  '*.clientSecret',
  '*.client_secret',
  '*.accessToken',
  '*.access_token',
  '*.refreshToken',
  '*.refresh_token',
  '*.authorization',
  '*.Authorization',
  '*.password',
  'headers.authorization',
  'req.headers.authorization',
  'connection.clientSecret',
  'connections.*.clientSecret',
];

/** Writes each record as a {@link prettyLine} to stderr. */
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
      // A terminal gets the server's words without control characters (terminal-text.ts).
      process.stderr.write(terminalSafe(prettyLine(record)));
    },
  };
}

/**
 * Makes the root logger. Level from `LOG_LEVEL` (default `info`); format from `format`, else `LOG_FORMAT`, else
 * pretty on a terminal and JSON lines otherwise.
 * @param options extra pino options (merged over the defaults)
 * @throws Error for an unknown format
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
