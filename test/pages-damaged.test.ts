/**
 * Kept pages gone bad in the database (docs/operations.md "Kept pages"): a chunk that no longer decompresses, bytes
 * altered so that the decoder stops on them before their sha256 is checked, pages deleted while they are read. Each
 * fails `replay --from-pages` (and `preview --from-pages`) with PAGES_NOT_KEPT in plain words and loads nothing;
 * `report-etl pages` writes the other pages and names the bad one.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { zstdCompressSync, zstdDecompressSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { resolveJob } from '../src/config/load.ts';
import { getArchive } from '../src/history/page-archive.ts';
import { silentLogger } from '../src/logger.ts';
import { openKeptPages } from '../src/pipeline/kept-pages.ts';
import { previewKeptPages } from '../src/pipeline/preview-kept.ts';
import { runCli } from './support/cli.ts';
import { uniqueName } from './support/env.ts';
import { attemptFailure, type Harness, jobEntry, useHarness } from './support/harness.ts';

const h = useHarness();

/** A json job of 3 pages (100, 100, 50 rows) that keeps them, into `table`. */
const keeping = (job: string, table: string) =>
  h.config({
    [job]: jobEntry(
      { name: 'Sales/Orders', outputType: 'json', paging: 100, parameters: { ROWS: '250' } },
      { table, mode: 'replace', archive: { keepDays: 2 } },
    ),
  });

/** Runs the job once (its pages kept), empties its table, and gives the attempt whose pages are kept. */
async function keptRun(job: string, table: string) {
  const config = keeping(job, table);
  const runKey = uniqueName(job);
  const kept = await h.run(config, job, { runKey });
  expect(kept.pages).toBe(3);
  await h.pool.query(`TRUNCATE ${table}`);
  return { config, runKey, attemptId: kept.attemptId };
}

/** Replays the run from the pages of `attemptId`, which must fail; gives its error. */
async function failedReplay(config: ReturnType<Harness['config']>, job: string, runKey: string, attemptId: string) {
  return attemptFailure(h.run(config, job, { runKey, trigger: 'replay', pagesOf: attemptId }));
}

const rowsIn = async (table: string) =>
  Number((await h.pool.query<{ n: string }>(`SELECT count(*) AS n FROM ${table}`)).rows[0]!.n);

describe('damaged kept pages', () => {
  it('a chunk that no longer decompresses: PAGES_NOT_KEPT naming its page, and pages writes the others', async () => {
    const table = `${h.schema}.damaged_chunk`;
    const { config, runKey, attemptId } = await keptRun('dc', table);
    await h.pool.query(
      `UPDATE etl.attempt_page_chunks SET data = overlay(data placing '\\xdeadbeefdeadbeef'::bytea from 9)
        WHERE attempt_id = $1 AND page = 2`,
      [attemptId],
    );

    const err = await failedReplay(config, 'dc', runKey, attemptId);
    expect(err.code).toBe('PAGES_NOT_KEPT');
    expect(err.retryable).toBe(false);
    expect(err.message).toContain(`kept page 2 of attempt ${attemptId} is damaged`);
    expect(err.message).toContain('replay the run from the server instead');
    expect(await rowsIn(table)).toBe(0);

    const out = mkdtempSync(join(tmpdir(), 'damaged-out-'));
    try {
      const r = await runCli(['pages', attemptId, '--out', out], { env: { LOG_LEVEL: 'warn' } });
      expect(r.code, r.stderr).toBe(1);
      expect(r.stderr).toContain(`page 2: kept page 2 of attempt ${attemptId} is damaged`);
      expect(r.stderr).not.toMatch(/\n\s+at /);
      expect(readdirSync(out).sort()).toEqual(['1.json', '3.json']);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });

  it('bytes altered so that the decoder stops on them: PAGES_NOT_KEPT, not a page format error', async () => {
    const table = `${h.schema}.damaged_bytes`;
    const { config, runKey, attemptId } = await keptRun('db', table);
    const { rows } = await h.pool.query<{ data: Buffer }>(
      'SELECT data FROM etl.attempt_page_chunks WHERE attempt_id = $1 AND page = 2 AND chunk = 0',
      [attemptId],
    );
    // Valid zstd of bytes that are no longer the page: its first member name loses its opening quote.
    const text = zstdDecompressSync(rows[0]!.data).toString('latin1');
    const altered = text.replace('"', "'");
    expect(altered).not.toBe(text);
    await h.pool.query(
      'UPDATE etl.attempt_page_chunks SET data = $2 WHERE attempt_id = $1 AND page = 2 AND chunk = 0',
      [attemptId, zstdCompressSync(Buffer.from(altered, 'latin1'))],
    );

    const err = await failedReplay(config, 'db', runKey, attemptId);
    expect(err.code).toBe('PAGES_NOT_KEPT');
    expect(err.message).toContain(`kept page 2 of attempt ${attemptId} is damaged: its sha256 is`);
    expect(await rowsIn(table)).toBe(0);
  });

  it('preview --from-pages of a first page its decoder stops on says it is damaged, not malformed', async () => {
    const table = `${h.schema}.damaged_preview`;
    const { config, attemptId } = await keptRun('dv', table);
    const { rows } = await h.pool.query<{ data: Buffer }>(
      'SELECT data FROM etl.attempt_page_chunks WHERE attempt_id = $1 AND page = 1 AND chunk = 0',
      [attemptId],
    );
    const text = zstdDecompressSync(rows[0]!.data).toString('latin1');
    await h.pool.query(
      'UPDATE etl.attempt_page_chunks SET data = $2 WHERE attempt_id = $1 AND page = 1 AND chunk = 0',
      [attemptId, zstdCompressSync(Buffer.from(text.replace('"', "'"), 'latin1'))],
    );
    const preview = previewKeptPages({
      job: resolveJob(config, 'dv'),
      kept: (await getArchive(h.pool, attemptId))!,
      rows: 5,
      pool: h.pool,
      logger: silentLogger,
    });
    await expect(preview).rejects.toMatchObject({
      code: 'PAGES_NOT_KEPT',
      message: expect.stringContaining(`kept page 1 of attempt ${attemptId} is damaged`) as unknown,
    });
  });

  it('pages deleted while they are read (keepDays ran out) say so, not that they are damaged', async () => {
    const table = `${h.schema}.damaged_pruned`;
    const { attemptId } = await keptRun('dp', table);
    const kept = await openKeptPages(h.pool, (await getArchive(h.pool, attemptId))!);
    try {
      const page = await kept.openPage(attemptId, 1);
      await h.pool.query('DELETE FROM etl.attempt_archives WHERE attempt_id = $1', [attemptId]);
      const err = await (async () => {
        for await (const _ of page!.body as AsyncIterable<Buffer>);
      })().then(
        () => undefined,
        (e: unknown) => e as Error & { code?: string },
      );
      expect(err?.code).toBe('PAGES_NOT_KEPT');
      expect(err?.message).toContain(`the kept pages of attempt ${attemptId} were deleted while they were read`);
    } finally {
      await kept.close();
    }
  });

  it('pages deleted after their archive was read are refused as deleted, not opened as none', async () => {
    const table = `${h.schema}.damaged_gone`;
    const { attemptId } = await keptRun('dg', table);
    const archive = (await getArchive(h.pool, attemptId))!;
    await h.pool.query('DELETE FROM etl.attempt_archives WHERE attempt_id = $1', [attemptId]);
    await expect(openKeptPages(h.pool, archive)).rejects.toMatchObject({
      code: 'PAGES_NOT_KEPT',
      message: expect.stringContaining(`the kept pages of attempt ${attemptId} were deleted`) as unknown,
    });
  });
});
