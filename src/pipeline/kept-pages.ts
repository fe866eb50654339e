/**
 * Kept pages, read (docs/operations.md "Kept pages"): an attempt's pages from etl.attempt_page_chunks as
 * {@link PageStream}s, the way the report client serves the server's, so that the same reader, decoders and COPY load
 * them (`replay --from-pages`, `--accept-guard`, `preview --from-pages`) and `report-etl pages` writes them out. A page
 * is read one chunk at a time (one query, one decompression each, by the codec recorded with the page) as its
 * consumer pulls, and checked against the sha256 it was served with at its end.
 */
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { promisify } from 'node:util';
import { gunzip, zstdDecompress } from 'node:zlib';
import pg from 'pg';
import { coerceError, EtlError } from '../errors.ts';
import {
  listKeptPages,
  readPageChunk,
  type AttemptArchive,
  type KeptPage,
  type PageCodec,
} from '../history/page-archive.ts';
import type { PageStream, ReportClient } from '../report-api/index.ts';
import { readDocument, type RunDocument } from '../warehouse/documents.ts';

/** How each codec's chunks are decompressed: pages kept before zstd are gzip. */
const DECOMPRESS: Record<PageCodec, (data: Buffer) => Promise<Buffer>> = {
  gzip: promisify(gunzip),
  zstd: promisify(zstdDecompress),
};

/** The pages of one archive, opened by number as a report client opens the server's; close it after. */
export interface KeptPages extends Pick<ReportClient, 'openPage'> {
  readonly archive: AttemptArchive;
  readonly pages: readonly KeptPage[];
  /** Closes the connection the pages are read over; never throws. */
  close(): Promise<void>;
}

/**
 * Opens the kept pages of `archive` over a connection of their own (of `pool`'s settings, outside the pool: the load
 * transaction that reads them holds a pool connection already).
 * @throws EtlError PAGES_NOT_KEPT (not retryable) when the archive is not complete or a page was not stored whole;
 *   the database's errors
 */
export async function openKeptPages(pool: pg.Pool, archive: AttemptArchive): Promise<KeptPages> {
  const client = new pg.Client({ ...pool.options, application_name: 'report-etl pages' });
  client.on('error', () => undefined); // a broken connection fails the query that uses it
  await client.connect();
  try {
    const pages = await listKeptPages(client, archive.attemptId);
    const broken = pages.find((p) => p.sha256 === undefined);
    if (!archive.complete || broken || pages.some((p, i) => p.page !== i + 1))
      throw new EtlError(
        'PAGES_NOT_KEPT',
        `the kept pages of attempt ${archive.attemptId} are not complete (${
          broken ? `page ${broken.page} was ` + 'not stored whole' : 'its reading stopped before the last page'
        }): replay the run from the server instead`,
        { retryable: false },
      );
    return {
      archive,
      pages,
      openPage: (_reportJobId, page) => Promise.resolve(pageStream(client, archive.attemptId, pages[page - 1])),
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

/**
 * A kept page as a stream of its bytes as served; null past the last page (the server's 404). Its body fails with
 * EtlError PAGES_NOT_KEPT (not retryable) when a chunk does not decompress or the bytes lost their sha256.
 */
function pageStream(db: pg.Client, attemptId: string, kept: KeptPage | undefined): PageStream | null {
  if (!kept) return null;
  const hash = createHash('sha256');
  let chunk = 0;
  const next = (): void => {
    const n = chunk++;
    readPageChunk(db, attemptId, kept.page, n)
      .then(async (data) => {
        if (data === undefined) {
          const sha256 = hash.digest('hex');
          if (sha256 !== kept.sha256)
            throw new EtlError(
              'PAGES_NOT_KEPT',
              `kept page ${kept.page} of attempt ${attemptId} is damaged: its sha256 is ${sha256}, it was served ` +
                `with ${kept.sha256}: replay the run from the server instead`,
              { retryable: false },
            );
          body.push(null);
          return;
        }
        const raw = await DECOMPRESS[kept.codec](data).catch((err: unknown) => {
          throw new EtlError(
            'PAGES_NOT_KEPT',
            `kept page ${kept.page} of attempt ${attemptId} is damaged: its chunk ${n} does not decompress as ` +
              `${kept.codec} (${coerceError(err).message}): replay the run from the server instead`,
            { retryable: false, cause: err },
          );
        });
        hash.update(raw);
        // An empty chunk (an empty page's) pushes nothing: read the next one instead.
        if (raw.length === 0) next();
        else body.push(raw);
      })
      .catch((err: unknown) => body.destroy(err instanceof Error ? err : new Error(String(err))));
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
