/**
 * etl.attempt_archives, etl.attempt_pages, etl.attempt_page_chunks: the kept pages of attempts (docs/operations.md
 * "Kept pages"), one small typed function per SQL operation. The pages are written outside the load transaction, so
 * that a failed load keeps them; the pipeline's page archive (pipeline/page-archive.ts) compresses and streams them.
 */
import type { Queryable } from '../db.ts';

/**
 * The codecs a kept page's chunks may be compressed with (each chunk on its own): zstd for new pages, gzip for pages
 * kept before zstd (docs/operations.md "Kept pages").
 */
export type PageCodec = 'gzip' | 'zstd';

/** An attempt's kept pages as a whole. */
export interface AttemptArchive {
  attemptId: string;
  job: string;
  runKey: string;
  /** The attempt's number within its run. */
  attempt: number;
  outputType: string;
  /** What the server announced: pages=, and rows= where pages hold report rows. */
  announcedPages: number;
  announcedRows: number | undefined;
  /** Every page stored to its last byte. */
  complete: boolean;
  keepUntil: Date;
}

/** One kept page; `bytes` and `sha256` (hex) are of the page as served, undefined until it was stored whole. */
export interface KeptPage {
  page: number;
  contentType: string;
  codec: PageCodec;
  bytes: number | undefined;
  storedBytes: number | undefined;
  sha256: string | undefined;
}

/** Begins an attempt's archive (or begins it again: a second pass over the pages drops the first's pages). */
export async function beginArchive(
  db: Queryable,
  a: { attemptId: string; outputType: string; announcedPages: number; announcedRows?: number | undefined },
  keepDays: number,
): Promise<void> {
  await db.query(
    `INSERT INTO etl.attempt_archives (attempt_id, output_type, announced_pages, announced_rows, keep_until)
     VALUES ($1, $2, $3, $4, now() + make_interval(days => $5))
     ON CONFLICT (attempt_id) DO UPDATE SET complete = false`,
    [a.attemptId, a.outputType, a.announcedPages, a.announcedRows ?? null, keepDays],
  );
  await db.query('DELETE FROM etl.attempt_pages WHERE attempt_id = $1', [a.attemptId]);
}

/** Records that page `page` is being stored. */
export async function beginPage(
  db: Queryable,
  attemptId: string,
  page: number,
  contentType: string,
  codec: PageCodec,
): Promise<void> {
  await db.query(
    `INSERT INTO etl.attempt_pages (attempt_id, page, content_type, codec) VALUES ($1, $2, $3, $4)
     ON CONFLICT (attempt_id, page) DO NOTHING`,
    [attemptId, page, contentType, codec],
  );
}

/** Stores chunk `chunk` (0-based) of a page: one compressed member. */
export async function insertPageChunk(
  db: Queryable,
  attemptId: string,
  page: number,
  chunk: number,
  data: Buffer,
): Promise<void> {
  await db.query('INSERT INTO etl.attempt_page_chunks (attempt_id, page, chunk, data) VALUES ($1, $2, $3, $4)', [
    attemptId,
    page,
    chunk,
    data,
  ]);
}

/** Records a page stored to its last byte: its size and sha256 as served, and what its chunks take. */
export async function finishPage(
  db: Queryable,
  attemptId: string,
  page: number,
  figures: { bytes: number; storedBytes: number; sha256: string },
): Promise<void> {
  await db.query(
    'UPDATE etl.attempt_pages SET bytes = $3, stored_bytes = $4, sha256 = $5 WHERE attempt_id = $1 AND page = $2',
    [attemptId, page, figures.bytes, figures.storedBytes, figures.sha256],
  );
}

/** Records an archive complete: every page up to the server's 404 was stored whole. */
export async function completeArchive(db: Queryable, attemptId: string): Promise<void> {
  await db.query('UPDATE etl.attempt_archives SET complete = true WHERE attempt_id = $1', [attemptId]);
}

interface ArchiveRow {
  attempt_id: string;
  job: string;
  run_key: string;
  attempt: number;
  output_type: string;
  announced_pages: number;
  announced_rows: string | null;
  complete: boolean;
  keep_until: Date;
}

const ARCHIVE_COLUMNS = `x.attempt_id, a.job, a.run_key, a.attempt, x.output_type, x.announced_pages,
  x.announced_rows, x.complete, x.keep_until`;

function archiveOf(r: ArchiveRow): AttemptArchive {
  return {
    attemptId: r.attempt_id,
    job: r.job,
    runKey: r.run_key,
    attempt: r.attempt,
    outputType: r.output_type,
    announcedPages: r.announced_pages,
    announcedRows: r.announced_rows === null ? undefined : Number(r.announced_rows),
    complete: r.complete,
    keepUntil: r.keep_until,
  };
}

/** The kept pages of one attempt, complete or not; undefined when it kept none (or they were pruned). */
export async function getArchive(db: Queryable, attemptId: string): Promise<AttemptArchive | undefined> {
  const { rows } = await db.query<ArchiveRow>(
    `SELECT ${ARCHIVE_COLUMNS} FROM etl.attempt_archives x JOIN etl.attempts a USING (attempt_id)
      WHERE x.attempt_id = $1`,
    [attemptId],
  );
  return rows[0] ? archiveOf(rows[0]) : undefined;
}

/**
 * The newest complete kept pages of a run: of the attempt that read them from the server (an attempt that loaded kept
 * pages keeps none of its own). Undefined when none is left.
 */
export async function newestCompleteArchive(
  db: Queryable,
  job: string,
  runKey: string,
): Promise<AttemptArchive | undefined> {
  const { rows } = await db.query<ArchiveRow>(
    `SELECT ${ARCHIVE_COLUMNS} FROM etl.attempt_archives x JOIN etl.attempts a USING (attempt_id)
      WHERE a.job = $1 AND a.run_key = $2 AND x.complete
      ORDER BY a.attempt DESC LIMIT 1`,
    [job, runKey],
  );
  return rows[0] ? archiveOf(rows[0]) : undefined;
}

/** The kept pages of an attempt, by page number. */
export async function listKeptPages(db: Queryable, attemptId: string): Promise<KeptPage[]> {
  const { rows } = await db.query<{
    page: number;
    content_type: string;
    codec: PageCodec;
    bytes: string | null;
    stored_bytes: string | null;
    sha256: string | null;
  }>(
    `SELECT page, content_type, codec, bytes, stored_bytes, sha256 FROM etl.attempt_pages
      WHERE attempt_id = $1 ORDER BY page`,
    [attemptId],
  );
  return rows.map((r) => ({
    page: r.page,
    contentType: r.content_type,
    codec: r.codec,
    bytes: r.bytes === null ? undefined : Number(r.bytes),
    storedBytes: r.stored_bytes === null ? undefined : Number(r.stored_bytes),
    sha256: r.sha256 ?? undefined,
  }));
}

/** Chunk `chunk` of a kept page, compressed; undefined past its last (one chunk a query: no page is read whole). */
export async function readPageChunk(
  db: Queryable,
  attemptId: string,
  page: number,
  chunk: number,
): Promise<Buffer | undefined> {
  const { rows } = await db.query<{ data: Buffer }>(
    'SELECT data FROM etl.attempt_page_chunks WHERE attempt_id = $1 AND page = $2 AND chunk = $3',
    [attemptId, page, chunk],
  );
  return rows[0]?.data;
}

/** Whether page `page` of an attempt's kept pages is still stored (not pruned, nor deleted with its attempt). */
export async function keptPageExists(db: Queryable, attemptId: string, page: number): Promise<boolean> {
  const { rowCount } = await db.query('SELECT 1 FROM etl.attempt_pages WHERE attempt_id = $1 AND page = $2', [
    attemptId,
    page,
  ]);
  return (rowCount ?? 0) > 0;
}

/**
 * Deletes the kept pages of `jobs` whose keepDays ran out, at most `batchSize` attempts' pages per statement (a page's
 * chunks cascade); the attempts stay until history.keep. Retention of the run history deletes kept pages with their
 * attempts (history/retention.ts).
 * @returns how many attempts' pages were deleted
 */
export async function pruneKeptPages(
  db: Queryable,
  jobs: readonly string[],
  now: Date,
  o: { batchSize?: number; maxBatches?: number } = {},
): Promise<number> {
  const batchSize = o.batchSize ?? 20;
  const maxBatches = o.maxBatches ?? 20;
  let deleted = 0;
  if (jobs.length === 0) return 0;
  for (let i = 0; i < maxBatches; i++) {
    const { rowCount } = await db.query(
      `DELETE FROM etl.attempt_archives WHERE attempt_id IN (
         SELECT x.attempt_id FROM etl.attempt_archives x JOIN etl.attempts a USING (attempt_id)
          WHERE a.job = ANY($1::text[]) AND x.keep_until < $2 AND a.status <> 'running'
          LIMIT $3 FOR UPDATE OF x SKIP LOCKED)`,
      [jobs, now, batchSize],
    );
    deleted += rowCount ?? 0;
    if ((rowCount ?? 0) < batchSize) break;
  }
  return deleted;
}

/**
 * The application_name of the connection that stores or reads the kept pages of attempt `attemptId`
 * (`report-etl pages <attempt id>`, 53 characters): pg_stat_activity tells whose pages a waiting session is about.
 */
export function pagesConnectionName(attemptId: string): string {
  return `report-etl pages ${attemptId}`;
}
