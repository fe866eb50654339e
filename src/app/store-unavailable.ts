/** The error of a store that cannot be used at start; free of the drivers, so that the CLI's entry loads neither. */

/**
 * PostgreSQL or Redis could not be used at start. The message is one line, the URL without its password:
 * `PostgreSQL at 127.0.0.1:5432/postgres (DATABASE_URL): ECONNREFUSED …; start PostgreSQL there, …`; the CLI exits 2.
 */
export class StoreUnavailableError extends Error {
  /** The driver's error code: a socket code (`ECONNREFUSED`), a SQLSTATE (`28P01`) or a Redis word (`WRONGPASS`). */
  readonly code: string;
  constructor(
    store: 'PostgreSQL' | 'Redis',
    where: string,
    code: string,
    detail: string,
    hint: string,
    options?: { cause?: unknown },
  ) {
    const env = store === 'PostgreSQL' ? 'DATABASE_URL' : 'REDIS_URL';
    super(`${store} at ${where} (${env}): ${code}${detail ? ` ${detail}` : ''}; ${hint}`, options);
    this.name = 'StoreUnavailableError';
    this.code = code;
  }
}
