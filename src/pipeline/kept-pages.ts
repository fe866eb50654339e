/**
 * Kept pages, read (docs/operations.md "Kept pages"): an attempt's pages from etl.attempt_page_chunks as
 * {@link PageStream}s, the way the report client serves the server's, so that the same reader, decoders and COPY load
 * them (`replay --from-pages`, `--accept-guard`, `preview --from-pages`) and `report-etl pages` writes them out. A page
 * is read one chunk at a time (one query, one decompression each, by the codec recorded with the page) as its
 * consumer pulls, and checked against the sha256 it was served with at its end; a load that failed on a page it left
 * before its end asks whether that page was damaged ({@link KeptPages.damaged}). A page opened with a signal fails
 * with its reason once it aborts (maxRunMs, a shutdown, the page's deadline), and the chunk query in hand is cancelled:
 * one waiting for a lock does not hold the attempt.
 */
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { promisify } from 'node:util';
import { gunzip, zstdDecompress } from 'node:zlib';
import pg from 'pg';
import { coerceError, EtlError } from '../errors.ts';
import {
  getArchive,
  keptPageExists,
  listKeptPages,
  pagesConnectionName,
  readPageChunk,
  type AttemptArchive,
  type KeptPage,
  type PageCodec,
} from '../history/page-archive.ts';
import type { PageStream, ReportClient } from '../report-api/index.ts';
import { readDocument, type RunDocument } from '../warehouse/documents.ts';
import { statementTurns } from '../warehouse/load-transaction.ts';

/** How each codec's chunks are decompressed: pages kept before zstd are gzip. */
const DECOMPRESS: Record<PageCodec, (data: Buffer) => Promise<Buffer>> = {
  gzip: promisify(gunzip),
  zstd: promisify(zstdDecompress),
};

/** The pages of one archive, opened by number as a report client opens the server's; close it after. */
export interface KeptPages extends Pick<ReportClient, 'openPage'> {
  readonly archive: AttemptArchive;
  readonly pages: readonly KeptPage[];
  /**
   * After a load of them failed: whether a page it opened and left before its end (where its sha256 is checked) is
   * damaged, as a decoder that stopped on its bytes cannot tell. Reads those pages to their end; never throws.
   * @returns the page's PAGES_NOT_KEPT error (not retryable), undefined when they are whole or cannot be read
   */
  damaged(): Promise<EtlError | undefined>;
  /** Closes the connection the pages are read over; never throws. */
  close(): Promise<void>;
}

/**
 * Opens the kept pages of `archive` over a connection of their own (of `pool`'s settings, outside the pool: the load
 * transaction that reads them holds a pool connection already).
 * @throws EtlError PAGES_NOT_KEPT (not retryable) when the archive is not complete, a page was not stored whole, or
 *   the pages were deleted since `archive` was read; the database's errors
 */
export async function openKeptPages(pool: pg.Pool, archive: AttemptArchive): Promise<KeptPages> {
  const client = new pg.Client({ ...pool.options, application_name: pagesConnectionName(archive.attemptId) });
  client.on('error', () => undefined); // a broken connection fails the query that uses it
  await client.connect();
  try {
    const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    const pid = rows[0]!.pid;
    const pages = await listKeptPages(client, archive.attemptId);
    // Pruned since `archive` was read: its pages are gone, not none (an empty report's are).
    if (!(await getArchive(client, archive.attemptId))) throw deletedWhileRead(archive.attemptId);
    const broken = pages.find((p) => p.sha256 === undefined);
    if (!archive.complete || broken || pages.some((p, i) => p.page !== i + 1))
      throw new EtlError(
        'PAGES_NOT_KEPT',
        `the kept pages of attempt ${archive.attemptId} are not complete (${
          broken ? `page ${broken.page} was ` + 'not stored whole' : 'its reading stopped before the last page'
        }): replay the run from the server instead`,
        { retryable: false },
      );
    // Pages opened whose reading did not reach their end, where their sha256 is checked; damage found by a page's
    // reader, which the load may not have seen (a decoder that failed on its bytes first).
    const unfinished = new Set<KeptPage>();
    const found: EtlError[] = [];
    const ended = (kept: KeptPage, err?: unknown): void => {
      unfinished.delete(kept);
      if (err instanceof EtlError && err.code === 'PAGES_NOT_KEPT') found.push(err);
    };
    // A page left by its reader may still be reading a chunk when another is read: their queries take turns.
    const turns = statementTurns(pool, pid);
    const store: KeptStore = {
      chunk: (page, chunk) => turns.run(() => readPageChunk(client, archive.attemptId, page, chunk)),
      has: (page) => turns.run(() => keptPageExists(client, archive.attemptId, page)),
    };
    return {
      archive,
      pages,
      openPage: (_reportJobId, page, signal) => {
        const kept = pages[page - 1];
        if (kept) unfinished.add(kept);
        const stream = pageStream(store, archive.attemptId, kept, (err) => ended(kept!, err));
        if (stream && signal) abortWith(stream, signal, () => turns.cancel());
        return Promise.resolve(stream);
      },
      async damaged() {
        if (found[0]) return found[0];
        for (const kept of unfinished) {
          const damage = await pageDamage(store, archive.attemptId, kept);
          if (damage) return damage;
        }
        return undefined;
      },
      close: () => client.end().catch(() => undefined),
    };
  } catch (err) {
    await client.end().catch(() => undefined);
    throw err;
  }
}

/**
 * The documents (pdf, xlsx, docx) a load committed, opened by page number from their target as a report client opens
 * the server's pages: a documents run's kept pages (docs/operations.md "Kept pages"). Null past the last document.
 * @param docs the loading attempt's (history/run-documents.ts listRunDocuments)
 * @returns pages whose bodies fail with readDocument's errors: DocumentNotFoundError when the target no longer holds a
 *   document, EtlError INTERNAL when its bytes lost their sha256
 */
export function documentPages(db: pg.Pool, docs: readonly RunDocument[]): Pick<ReportClient, 'openPage'> {
  return {
    openPage(_reportJobId, page) {
      const doc = docs.find((d) => d.page === page);
      if (!doc) return Promise.resolve(null);
      const body = Readable.from(readDocument(db, doc));
      return Promise.resolve({ page, contentType: doc.contentType, contentLength: doc.bytes, body, resumes: () => 0 });
    },
  };
}

/** The error of kept pages the janitor or the run history's retention deleted as they were opened or read. */
function deletedWhileRead(attemptId: string): EtlError {
  return new EtlError(
    'PAGES_NOT_KEPT',
    `the kept pages of attempt ${attemptId} were deleted while they were read (target.archive.keepDays ran ` +
      'out, or the run history was pruned): replay the run from the server instead',
    { retryable: false },
  );
}

/** Fails `stream`'s body with `signal`'s reason once it aborts, and calls `cancel` (the chunk query in hand). */
function abortWith(stream: PageStream, signal: AbortSignal, cancel: () => void): void {
  const onAbort = (): void => {
    stream.body.destroy(coerceError(signal.reason));
    cancel();
  };
  if (signal.aborted) return onAbort();
  signal.addEventListener('abort', onAbort, { once: true });
  stream.body.once('close', () => signal.removeEventListener('abort', onAbort));
}

/** The kept pages opened, in the database: their queries take turns on their connection. */
interface KeptStore {
  /** Chunk `chunk` of page `page`, compressed; undefined past its last. */
  chunk(page: number, chunk: number): Promise<Buffer | undefined>;
  /** Whether page `page` is still stored (not pruned meanwhile). */
  has(page: number): Promise<boolean>;
}

/** Raw chunk `n` of a kept page, decompressed; undefined past its last. */
async function rawChunk(store: KeptStore, attemptId: string, kept: KeptPage, n: number): Promise<Buffer | undefined> {
  const data = await store.chunk(kept.page, n);
  if (data === undefined) return undefined;
  return DECOMPRESS[kept.codec](data).catch((err: unknown) => {
    throw new EtlError(
      'PAGES_NOT_KEPT',
      `kept page ${kept.page} of attempt ${attemptId} is damaged: its chunk ${n} does not decompress as ` +
        `${kept.codec} (${coerceError(err).message}): replay the run from the server instead`,
      { retryable: false, cause: err },
    );
  });
}

/**
 * The error of a kept page whose bytes, read to their end, have the sha256 `sha256`; undefined when it matches. Pages
 * deleted while they were read (keepDays ran out, the run history's retention) end early, and are said to be gone.
 */
async function pageEnd(store: KeptStore, attemptId: string, kept: KeptPage, sha256: string) {
  if (sha256 === kept.sha256) return undefined;
  if (!(await store.has(kept.page))) return deletedWhileRead(attemptId);
  return new EtlError(
    'PAGES_NOT_KEPT',
    `kept page ${kept.page} of attempt ${attemptId} is damaged: its sha256 is ${sha256}, it was served ` +
      `with ${kept.sha256}: replay the run from the server instead`,
    { retryable: false },
  );
}

/**
 * Reads a kept page to its end, for its sha256 alone.
 * @returns the PAGES_NOT_KEPT error of a damaged page; undefined when it is whole, or cannot be read (the database)
 */
async function pageDamage(store: KeptStore, attemptId: string, kept: KeptPage): Promise<EtlError | undefined> {
  const hash = createHash('sha256');
  try {
    for (let n = 0; ; n++) {
      const raw = await rawChunk(store, attemptId, kept, n);
      if (raw === undefined) return await pageEnd(store, attemptId, kept, hash.digest('hex'));
      hash.update(raw);
    }
  } catch (err) {
    return err instanceof EtlError && err.code === 'PAGES_NOT_KEPT' ? err : undefined;
  }
}

/**
 * A kept page as a stream of its bytes as served; null past the last page (the server's 404). Its body fails with
 * EtlError PAGES_NOT_KEPT (not retryable) when a chunk does not decompress or the bytes lost their sha256.
 * @param ended told once the body ended, or failed (with its error: also when its reader left it before)
 */
function pageStream(
  store: KeptStore,
  attemptId: string,
  kept: KeptPage | undefined,
  ended: (err?: unknown) => void,
): PageStream | null {
  if (!kept) return null;
  const hash = createHash('sha256');
  let chunk = 0;
  const next = (): void => {
    rawChunk(store, attemptId, kept, chunk++)
      .then(async (raw) => {
        if (raw === undefined) {
          const damage = await pageEnd(store, attemptId, kept, hash.digest('hex'));
          if (damage) throw damage;
          ended();
          body.push(null);
          return;
        }
        hash.update(raw);
        // An empty chunk (an empty page's) pushes nothing: read the next one instead.
        if (raw.length === 0) next();
        else body.push(raw);
      })
      .catch((err: unknown) => {
        ended(err);
        body.destroy(err instanceof Error ? err : new Error(String(err)));
      });
  };
  const body = new Readable({ highWaterMark: 64 * 1024, read: next });
  return {
    page: kept.page,
    contentType: kept.contentType,
    ...(kept.bytes !== undefined ? { contentLength: kept.bytes } : {}),
    body,
    resumes: () => 0,
  };
}
