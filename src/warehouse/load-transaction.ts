/**
 * The load transaction (docs/architecture.md "Limits"): BEGIN … COMMIT on one client of the pool, holding the
 * target's load lock, whose statements end in PostgreSQL's own terms: the attempt's deadline is its lock_timeout and
 * statement_timeout (a second and two past it, so that this process's cancel, which can say who held the lock, goes
 * first); an abort cancels the statement in hand with one pg_cancel_backend and refuses later ones. States: open,
 * committing (COMMIT or ROLLBACK under way: nothing cancels it), done.
 */
import pg from 'pg';
import { releaseClient } from '../db.ts';
import { isConnectionLoss } from '../errors.ts';
import type { TableName } from './identifiers.ts';
import { ensureSchema, lockTarget } from './target-table.ts';

/** What ended a statement of the load, and what it waited for then (pg_stat_activity, pg_locks); null: unknown. */
export interface CancelledStatement {
  /** An abort's cancel, or PostgreSQL's lock_timeout or statement_timeout at the deadline. */
  by: 'cancel' | 'lock_timeout' | 'statement_timeout';
  /** `wait_event_type` (`Lock`, `IO` …; null: working) and `wait_event` (`relation`, `advisory` …). */
  waitEventType: string | null;
  waitEvent: string | null;
  /** The relation it waited to lock, and the sessions holding it (`pid 42 (psql, idle in transaction)`). */
  relation: string | null;
  heldBy: string | null;
}

/** A statement of the load ended by an abort's cancel or the deadline's timeouts; `cause` is PostgreSQL's error. */
export class StatementCancelledError extends Error {
  readonly cancelled: CancelledStatement;
  constructor(cancelled: CancelledStatement, cause: unknown) {
    super(`PostgreSQL's statement was ended (it was ${describeWait(cancelled)})`, { cause });
    this.name = 'StatementCancelledError';
    this.cancelled = cancelled;
  }
}

/** `waiting for a lock on s.t (relation) held by pid 42 (psql, idle in transaction)`, `waiting (IO: …)`, `working`. */
export function describeWait(c: CancelledStatement): string {
  if (c.waitEventType === 'Lock') {
    const holder = c.heldBy ? `held by ${c.heldBy}` : 'another session held';
    return `waiting for a lock${c.relation ? ` on ${c.relation}` : ''} (${c.waitEvent ?? c.by}) ${holder}`;
  }
  return c.waitEventType ? `waiting (${c.waitEventType}: ${c.waitEvent})` : 'working';
}

/** Where the load transaction loads, and what ends it. */
export interface LoadTransactionOptions {
  target: TableName;
  /** The session's TimeZone: the zone of timestamps written without offset. */
  timezone: string;
  signal?: AbortSignal | undefined;
  /** The attempt's deadline (`performance.now()` ms), which becomes the transaction's timeouts. */
  deadline?: number | undefined;
}

/** lock_timeout is this past the budget left at BEGIN, statement_timeout twice this (see the file comment), ms. */
const BACKSTOP_MS = 1_000;

/** See the file comment: begin(), then commit() or rollback(). */
export class LoadTransaction {
  /** The client to run the load's statements on; one sent after an abort is refused with the abort's reason. */
  readonly tx: pg.PoolClient;
  #state: 'open' | 'committing' | 'done' = 'open';
  #pid: number | undefined;
  #cancel: Promise<CancelledStatement | undefined> | undefined;
  readonly #pool: pg.Pool;
  readonly #client: pg.PoolClient;
  readonly #o: LoadTransactionOptions;

  private constructor(pool: pg.Pool, client: pg.PoolClient, o: LoadTransactionOptions) {
    this.#pool = pool;
    this.#client = client;
    this.#o = o;
    this.tx = new Proxy(client, { get: (c, key) => (key === 'query' ? this.#query : Reflect.get(c, key)) });
    o.signal?.addEventListener('abort', this.#onAbort, { once: true });
  }

  /**
   * Opens the load transaction of `o.target`: its schema exists (created outside, see ensureSchema), timestamps
   * without offset are read in `o.timezone` with DateStyle ISO, DMY (txt), loads into the target wait for each other.
   * @throws the signal's reason when it aborted; the database's error (rolled back)
   */
  static async begin(pool: pg.Pool, o: LoadTransactionOptions): Promise<LoadTransaction> {
    o.signal?.throwIfAborted();
    await ensureSchema(pool, o.target.schema);
    const lt = new LoadTransaction(pool, await pool.connect(), o);
    try {
      await lt.tx.query('BEGIN');
      const left = o.deadline === undefined ? undefined : Math.max(0, Math.ceil(o.deadline - performance.now()));
      const past = (n: number): string | null => (left === undefined ? null : String(left + n * BACKSTOP_MS));
      const { rows } = await lt.tx.query<{ pid: number }>(
        `SELECT pg_backend_pid() AS pid, set_config('DateStyle', 'ISO, DMY', true), set_config('TimeZone', $1, true),
           set_config('lock_timeout', coalesce($2, current_setting('lock_timeout')), true),
           set_config('statement_timeout', coalesce($3, current_setting('statement_timeout')), true)`,
        [o.timezone, past(1), past(2)],
      );
      lt.#pid = rows[0]!.pid;
      await lockTarget(lt.tx, o.target);
      return lt;
    } catch (err) {
      throw await lt.rollback(err);
    }
  }

  /**
   * COMMITs and gives the client back.
   * @throws the signal's reason when it aborted before (rolled back then); COMMIT's error
   */
  async commit(): Promise<void> {
    if (this.#o.signal?.aborted) throw await this.rollback(this.#o.signal.reason);
    if (this.#state !== 'open') throw new Error('the load transaction has ended');
    this.#state = 'committing';
    let lost = false;
    try {
      await this.#client.query('COMMIT');
    } catch (err) {
      lost = isConnectionLoss(err);
      throw err;
    } finally {
      this.#release(lost);
    }
  }

  /**
   * Rolls back, after `cause` or as asked, and gives the client back; nothing once ended.
   * @returns the error to throw for `cause`: StatementCancelledError when an abort's cancel or the deadline's timeouts
   *   ended its statement, else `cause`
   */
  async rollback(cause?: unknown): Promise<unknown> {
    if (this.#state !== 'open') return cause;
    this.#state = 'committing';
    // A cancel under way ends before the ROLLBACK is sent, so that it cannot hit it.
    const ended = (await this.#cancel) ?? this.#timeoutOf(cause);
    const broken = this.#cancel !== undefined || [cause, (cause as Error | undefined)?.cause].some(isConnectionLoss);
    if (!broken) await this.#client.query('ROLLBACK').catch(() => undefined);
    this.#release(broken);
    return ended ? new StatementCancelledError(ended, cause) : cause;
  }

  readonly #query = ((...args: unknown[]) => {
    if (this.#state !== 'open') throw new Error('the load transaction has ended');
    this.#o.signal?.throwIfAborted();
    return Reflect.apply(this.#client.query, this.#client, args);
  }) as pg.PoolClient['query'];

  readonly #onAbort = (): void => {
    if (this.#state === 'open' && this.#pid !== undefined) this.#cancel = cancelStatement(this.#pool, this.#pid);
  };

  /** The deadline's timeouts as what ended `cause`'s statement, when they did. */
  #timeoutOf(cause: unknown): CancelledStatement | undefined {
    const codes = [cause, (cause as Error | undefined)?.cause].map((e) => (e as { code?: unknown } | undefined)?.code);
    const by = codes.includes('55P03') ? 'lock_timeout' : codes.includes('57014') ? 'statement_timeout' : undefined;
    if (this.#o.deadline === undefined || !by) return undefined;
    return { by, waitEventType: by === 'lock_timeout' ? 'Lock' : null, waitEvent: null, relation: null, heldBy: null };
  }

  #release(broken: boolean): void {
    this.#state = 'done';
    this.#o.signal?.removeEventListener('abort', this.#onAbort);
    releaseClient(this.#client, broken);
  }
}

/**
 * Runs `fn` in a load transaction, which it commits with `lt.commit()`; returning without, or throwing, rolls back.
 * @throws what begin, `fn` or the commit threw, after ROLLBACK (see {@link LoadTransaction.rollback})
 */
export async function withLoadTransaction<T>(
  pool: pg.Pool,
  o: LoadTransactionOptions,
  fn: (lt: LoadTransaction) => Promise<T>,
): Promise<T> {
  const lt = await LoadTransaction.begin(pool, o);
  try {
    const value = await fn(lt);
    await lt.rollback();
    return value;
  } catch (err) {
    throw await lt.rollback(err);
  }
}

/**
 * Statements taking turns on one connection of its own beside a load (the page archive's, the kept pages'), the one in
 * hand cancellable with {@link cancelStatement}: an aborted attempt does not wait for one stuck behind a lock. pg
 * queues a client's queries too, but that is deprecated.
 */
export interface StatementTurns {
  /** Runs `fn` once every statement given before it has settled, a failed one too. */
  run<T>(fn: () => Promise<T>): Promise<T>;
  /** Cancels the statement in hand on the connection, if any; never throws. */
  cancel(): void;
  /** Settles once every statement given so far has settled; never rejects. */
  idle(): Promise<void>;
}

/** The turns of the statements of the connection whose backend is `pid` (`pool` lends the connection to cancel). */
export function statementTurns(pool: pg.Pool, pid: number): StatementTurns {
  let last: Promise<unknown> = Promise.resolve();
  let running = false;
  return {
    run<T>(fn: () => Promise<T>): Promise<T> {
      const next = last.then(async () => {
        running = true;
        try {
          return await fn();
        } finally {
          running = false;
        }
      });
      last = next.catch(() => undefined);
      return next;
    },
    cancel() {
      if (running) void cancelStatement(pool, pid);
    },
    idle: () => last.then(() => undefined),
  };
}

/**
 * Cancels the statement backend `pid` runs, unless it is idle or waits for this process (a COPY waiting for rows ends
 * by the abort itself), on an idle client of the pool, else a connection of its own (loads filling the pool must not
 * hold it up). What it waited for is read first (MATERIALIZED).
 * @returns what it waited for; undefined: nothing cancelled, or no connection to spare (the timeouts remain)
 */
export async function cancelStatement(pool: pg.Pool, pid: number): Promise<CancelledStatement | undefined> {
  const own = pool.idleCount > 0 ? undefined : new pg.Client({ ...pool.options, connectionTimeoutMillis: 2_000 });
  own?.on('error', () => undefined);
  try {
    await own?.connect();
    const { rows } = await (own ?? pool).query<CancelledStatement>(
      `WITH s AS MATERIALIZED (
         SELECT a.pid, a.wait_event_type, a.wait_event,
           (SELECT l.relation::regclass::text FROM pg_locks l
             WHERE l.pid = a.pid AND NOT l.granted AND l.relation IS NOT NULL LIMIT 1) AS relation,
           (SELECT string_agg(format('pid %s (%s, %s)', b.pid, coalesce(nullif(b.application_name, ''), b.usename),
                   b.state), ', ')
              FROM pg_stat_activity b WHERE b.pid = ANY (pg_blocking_pids(a.pid))) AS held_by
         FROM pg_stat_activity a
        WHERE a.pid = $1 AND a.state = 'active' AND a.wait_event_type IS DISTINCT FROM 'Client')
       SELECT 'cancel' AS by, wait_event_type AS "waitEventType", wait_event AS "waitEvent", relation,
              held_by AS "heldBy"
         FROM s WHERE pg_cancel_backend(pid)`,
      [pid],
    );
    return rows[0];
  } catch {
    return undefined;
  } finally {
    await own?.end().catch(() => undefined);
  }
}
