/**
 * The error of a store that cannot be used at start (app/bootstrap.ts). Its own module, free of the database and
 * Redis drivers, so that the command line's entry can recognise it without loading them (start-up cost).
 */

/** Which store a {@link StoreUnavailableError} is about, and the environment variable that points at it. */
export type StoreName = 'PostgreSQL' | 'Redis';

/**
 * PostgreSQL or Redis could not be used at start: not reachable (refused, unknown host, timeout) or it refused us
 * (password, unknown database). The message is one line for a person: `PostgreSQL at 127.0.0.1:5432/postgres
 * (DATABASE_URL): ECONNREFUSED connect ECONNREFUSED 127.0.0.1:5432; start PostgreSQL there, or set DATABASE_URL …`.
 * The URL is shown without its password. The CLI prints the message and exits 2.
 */
export class StoreUnavailableError extends Error {
  readonly store: StoreName;
  /** The driver's error code: a Node socket code (`ECONNREFUSED`, `ENOTFOUND`, `ETIMEDOUT`), a SQLSTATE (`28P01`, `3D000`) or a Redis error word (`WRONGPASS`). */
  readonly code: string;
  /** Where: `host:port/database` (PostgreSQL) or `host:port` (Redis), never a password. */
  readonly where: string;
  constructor(
    store: StoreName,
    where: string,
    code: string,
    detail: string,
    hint: string,
    options?: { cause?: unknown },
  ) {
    super(
      `${store} at ${where} (${store === 'PostgreSQL' ? 'DATABASE_URL' : 'REDIS_URL'}): ${code}${detail ? ` ${detail}` : ''}; ${hint}`,
      options,
    );
    this.name = 'StoreUnavailableError';
    this.store = store;
    this.code = code;
    this.where = where;
  }
}
