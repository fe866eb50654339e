/**
 * The process logger (pino), writing JSON lines to stderr so that stdout stays free for command output.
 *
 * Secrets are redacted by path (CONVENTIONS.md "Logging"): whatever a caller logs, a client secret,
 * a token or an Authorization header never reaches the log.
 */
import { pino, type Logger, type LoggerOptions } from 'pino';

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

/**
 * Makes the root logger. Level from `LOG_LEVEL` (default `info`).
 * @param options extra pino options (merged over the defaults)
 */
export function makeLogger(options: LoggerOptions = {}): Logger {
  return pino(
    {
      level: process.env.LOG_LEVEL ?? 'info',
      base: { pid: process.pid },
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      ...options,
    },
    pino.destination({ fd: 2, sync: false }),
  );
}

/** A logger that drops everything: for tests and library use without logging. */
export const silentLogger: Logger = pino({ level: 'silent' });
