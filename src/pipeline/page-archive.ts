/**
 * Kept pages, written (docs/operations.md "Kept pages"): with `target.archive` every page an attempt reads from the
 * server is stored as it was sent (after HTTP content decoding), compressed, in etl.attempt_pages and
 * etl.attempt_page_chunks, as it is read: the page's bytes are copied into a chunk of {@link CHUNK_BYTES}, each full
 * chunk is compressed (zstd level 1) on libuv's thread pool and inserted while the next fills, and the reader waits
 * (backpressure) when {@link CHUNKS_IN_FLIGHT} chunks are not stored yet. So no page is held whole, and a slow
 * database slows the download as COPY does.
 *
 * The pages go over a PostgreSQL connection of the archive's own, outside the load transaction and committed chunk by
 * chunk: a failed load keeps them (that is their point), and an attempt whose load transaction holds a pool connection
 * never waits for a second one from a pool its peers may fill. That connection commits without waiting for the WAL to
 * reach the disk (`synchronous_commit = off`: one flush per chunk made the inserts, not the reading, set the pace of
 * a json load), except the archive's completion, whose flush takes every chunk before it along: kept pages a replay
 * may read are durable, and a crash before their completion leaves them incomplete, as a failed reading does.
 */
import { createHash, type Hash } from 'node:crypto';
import { promisify } from 'node:util';
import { constants, zstdCompress } from 'node:zlib';
import pg from 'pg';
import {
  beginArchive,
  beginPage,
  completeArchive,
  finishPage,
  insertPageChunk,
  pagesConnectionName,
  type PageCodec,
} from '../history/page-archive.ts';
import { EtlError, throwIfAborted } from '../errors.ts';
import { databaseError } from '../warehouse/load-errors.ts';
import { statementTurns, type StatementTurns } from '../warehouse/load-transaction.ts';
import { PageDeadlineReached, startPageDeadline } from './deadlines.ts';
import type { Logger } from '../logger.ts';
import type { PageStream } from '../report-api/index.ts';

/**
 * Bytes of a page per stored chunk, before compression: 4 MiB took 0.2 s less of the worker's CPU than 1 MiB on a
 * 1M-row json load (a quarter of the zstd contexts, inserts and thread pool wake-ups) for 16 MiB of chunk buffers
 * instead of 4 (docs/performance.md "Kept pages"). Pages kept in chunks of another size read alike.
 */
export const CHUNK_BYTES = 4 * 1024 * 1024;
/** Chunks compressed or inserted at once per attempt, before the page's reader waits for the oldest. */
const CHUNKS_IN_FLIGHT = 3;
/**
 * zstd at level 1: on the simulator's txt and json pages it stores less than gzip level 1 at about twice its speed,
 * brotli a little less still but several times slower, and compression is what archiving costs (docs/performance.md
 * "Kept pages").
 */
const CODEC: PageCodec = 'zstd';
const ZSTD_LEVEL = 1;
const zstdAsync = promisify(zstdCompress);
/**
 * A chunk compressed on the thread pool with output buffers of 256 KiB (a compressed chunk of json takes two, of txt
 * four or five): zlib's default (16 KiB) takes a round trip to the main thread per 16 KiB of output
 * (docs/performance.md "Kept pages").
 */
const compress = (raw: Buffer): Promise<Buffer> =>
  zstdAsync(raw, {
    params: { [constants.ZSTD_c_compressionLevel]: ZSTD_LEVEL },
    pledgedSrcSize: raw.length,
    chunkSize: 256 * 1024,
  });

/** Where one attempt's pages are kept, and for how long. */
export interface PageArchiveOptions {
  pool: pg.Pool;
  attemptId: string;
  outputType: string;
  keepDays: number;
  /** What the server announced, kept for the replay's checks. */
  announced: { pages: number; rows?: number | undefined };
  logger: Logger;
  /**
   * The attempt's (maxRunMs, a shutdown): once it aborts, the statement the archive's connection runs is cancelled
   * (one waiting for a lock or a stalled disk would hold the attempt) and no other is sent.
   */
  signal?: AbortSignal | undefined;
}

/** One page being kept: its bytes in order, then its end. */
export interface KeptPageSink {
  /** Stores `chunk` (copied: the caller may reuse it); resolves once fewer than the most chunks are in flight. */
  write(chunk: Uint8Array): Promise<void>;
  /** Waits until every chunk is stored, then records the page's size and sha256. */
  end(): Promise<void>;
}

/** The kept pages of one attempt as it reads them. */
export interface PageArchive {
  /** Begins a pass over the pages; a second pass (a COPY started over in text) drops the first one's pages. */
  begin(): Promise<void>;
  /** A sink for page `page`, whose Content-Type was `contentType`. */
  page(page: number, contentType: string): KeptPageSink;
  /** Every page up to the server's 404 was stored: a replay may read them. */
  complete(): Promise<void>;
  /** Whether {@link PageArchive.complete} was done (and no pass began since). */
  readonly completed: boolean;
  /** Closes the archive's connection; never throws. */
  close(): Promise<void>;
}

/**
 * Makes the page archive of an attempt; its connection (of `pool`'s settings, outside the pool) opens with
 * {@link PageArchive.begin}.
 * @throws from its methods: the database's errors, which fail the attempt (a connection loss retryably)
 */
export function makePageArchive(o: PageArchiveOptions): PageArchive {
  let client: pg.Client | undefined;
  let completed = false;
  // Chunks compress in parallel on the thread pool, and their INSERTs take turns on the archive's connection.
  let turns: StatementTurns | undefined;
  // Chunk buffers compressed already, for the next chunks of any page: a page's megabytes are not allocated anew.
  const spare: Buffer[] = [];
  const onAbort = (): void => turns?.cancel();
  const serially = <T>(fn: (db: pg.Client) => Promise<T>): Promise<T> => {
    const db = client;
    const t = turns;
    if (!db || !t) return Promise.reject(new Error('page archive used before begin()'));
    return t
      .run(() => {
        throwIfAborted(o.signal);
        return fn(db);
      })
      .catch((err: unknown) => {
        throw archiveError(err);
      });
  };
  return {
    get completed() {
      return completed;
    },
    async begin() {
      completed = false;
      if (!client) {
        throwIfAborted(o.signal);
        const c = new pg.Client({ ...o.pool.options, application_name: pagesConnectionName(o.attemptId) });
        c.on('error', (err) => o.logger.warn({ err: err.message }, "the page archive's connection broke"));
        try {
          await c.connect();
          const { rows } = await c.query<{ pid: number }>(
            `SELECT pg_backend_pid() AS pid, set_config('synchronous_commit', 'off', false)`,
          );
          turns = statementTurns(o.pool, rows[0]!.pid);
        } catch (err) {
          await c.end().catch(() => undefined);
          throw archiveError(err);
        }
        client = c;
        o.signal?.addEventListener('abort', onAbort, { once: true });
      }
      const { attemptId, outputType, announced } = o;
      await serially((db) =>
        beginArchive(
          db,
          { attemptId, outputType, announcedPages: announced.pages, announcedRows: announced.rows },
          o.keepDays,
        ),
      );
    },
    page(page, contentType) {
      return keptPageSink(serially, o.attemptId, page, contentType, spare);
    },
    async complete() {
      // Committed synchronously: the WAL up to it, so every chunk stored before it, is on disk once it returns.
      await serially(async (db) => {
        await db.query('BEGIN');
        try {
          await db.query('SET LOCAL synchronous_commit = on');
          await completeArchive(db, o.attemptId);
          await db.query('COMMIT');
        } catch (err) {
          await db.query('ROLLBACK').catch(() => undefined);
          throw err;
        }
      });
      completed = true;
    },
    async close() {
      const c = client;
      client = undefined;
      await turns?.idle();
      o.signal?.removeEventListener('abort', onAbort);
      await c?.end().catch(() => undefined);
    },
  };
}

/**
 * A database error of the archive's connection as EtlError DATABASE saying that it was the kept pages that could not
 * be stored (not the target), retryable as {@link databaseError} says.
 */
function archiveError(err: unknown): unknown {
  if (err instanceof EtlError) return err;
  const e = databaseError(err, 'load');
  if (!(e instanceof EtlError)) return e;
  return new EtlError('DATABASE', `the kept pages (target.archive) could not be stored: ${e.message}`, {
    stage: e.stage,
    retryable: e.retryable,
    cause: err,
    details: e.details,
  });
}

/** Runs one statement on the archive's connection once the statements before it are done. */
type Serially = <T>(fn: (db: pg.Client) => Promise<T>) => Promise<T>;

/**
 * Keeps every page of a report job from its first, for a load that failed before it read them all (a guard, a frozen
 * schema, a value that does not fit, the database): the pages were fine, and a replay `--from-pages` needs them whole.
 * Drops what an earlier pass kept. Stops, incomplete, past the announced pages. Each page, its request to its last
 * byte, has `pageTimeoutMs` as the load's pages have (docs/architecture.md "Limits"): a server trickling a page does
 * not hold the failed attempt until its maxRunMs.
 * @param openPage the report client's, for the report job, aborting the request and body on `signal` (null: the
 *   server's 404 after the last page)
 * @param pageTimeoutMs ms each page may take; undefined or Infinity for no limit
 * @returns how many pages were kept
 * @throws the server's and the database's errors; PageDeadlineReached naming its page; AbortedError
 */
export async function keepAllPages(
  archive: PageArchive,
  openPage: (page: number, signal: AbortSignal) => Promise<PageStream | null>,
  announcedPages: number,
  signal?: AbortSignal,
  pageTimeoutMs?: number,
): Promise<number> {
  await archive.begin();
  for (let page = 1; page <= announcedPages + 1; page++) {
    throwIfAborted(signal);
    const stop = new AbortController();
    const deadline = startPageDeadline(pageTimeoutMs, stop);
    try {
      const stream = await openPage(page, signal ? AbortSignal.any([signal, stop.signal]) : stop.signal);
      if (!stream) {
        await archive.complete();
        return page - 1;
      }
      if (page > announcedPages) {
        stream.body.destroy();
        break;
      }
      const sink = archive.page(page, stream.contentType);
      for await (const chunk of stream.body as AsyncIterable<Uint8Array>) await sink.write(chunk);
      await sink.end();
    } catch (err) {
      // The page's own deadline (not the attempt's signal, whose abort speaks for itself).
      const reason: unknown = stop.signal.reason;
      if (reason instanceof PageDeadlineReached && !signal?.aborted)
        throw new Error(`page ${page}: ${reason.message} while it was kept`, { cause: err });
      throw err;
    } finally {
      clearTimeout(deadline);
    }
  }
  return announcedPages;
}

/**
 * @param spare chunk buffers to fill before allocating one; each goes back once its chunk is compressed (at most
 *   {@link CHUNKS_IN_FLIGHT} + 1 are in use at once)
 */
function keptPageSink(
  serially: Serially,
  attemptId: string,
  page: number,
  contentType: string,
  spare: Buffer[],
): KeptPageSink {
  const hash: Hash = createHash('sha256');
  const begun = serially((db) => beginPage(db, attemptId, page, contentType, CODEC));
  begun.catch(() => undefined); // awaited before the first insert and at the end, which throw it
  const inFlight: Promise<number>[] = [];
  const nextBuffer = (): Buffer => spare.pop() ?? Buffer.allocUnsafe(CHUNK_BYTES);
  let buffer = nextBuffer();
  let filled = 0;
  let chunks = 0;
  let bytes = 0;
  let stored = 0;
  let failed: unknown;

  /** Compresses and inserts the buffer's bytes as the next chunk; the promise gives the stored size. */
  function flush(): void {
    const full = buffer;
    const raw = full.subarray(0, filled);
    const n = chunks++;
    buffer = nextBuffer();
    filled = 0;
    const done = (async () => {
      const data = await compress(raw);
      spare.push(full);
      await begun;
      await serially((db) => insertPageChunk(db, attemptId, page, n, data));
      return data.length;
    })();
    // Kept for the await that takes it; never an unhandled rejection meanwhile.
    done.catch((err: unknown) => (failed ??= err));
    inFlight.push(done);
  }

  async function drain(most: number): Promise<void> {
    while (inFlight.length > most) stored += await inFlight.shift()!;
    if (failed !== undefined) throw failed;
  }

  return {
    async write(chunk) {
      hash.update(chunk);
      bytes += chunk.length;
      let at = 0;
      while (at < chunk.length) {
        const n = Math.min(chunk.length - at, CHUNK_BYTES - filled);
        buffer.set(chunk.subarray(at, at + n), filled);
        filled += n;
        at += n;
        if (filled === CHUNK_BYTES) flush();
      }
      await drain(CHUNKS_IN_FLIGHT - 1);
    },
    async end() {
      if (filled > 0 || chunks === 0) flush();
      spare.push(buffer);
      await drain(0);
      await begun;
      const figures = { bytes, storedBytes: stored, sha256: hash.digest('hex') };
      await serially((db) => finishPage(db, attemptId, page, figures));
    },
  };
}
