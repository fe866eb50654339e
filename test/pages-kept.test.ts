/**
 * Kept pages (docs/operations.md "Kept pages"), against the simulator over HTTP and a real PostgreSQL: with
 * `target.archive` every page is stored as served (sha256 equal to the simulator's bytes), also when the load fails;
 * `--from-pages` loads them again with no request to the server, and `--accept-guard` loads exactly the pages reviewed
 * while the server would now answer differently.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync, zstdDecompressSync } from 'node:zlib';
import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import { readProgress } from '../src/history/attempt-progress.ts';
import { getAttempt } from '../src/history/attempts.ts';
import { getArchive, listKeptPages, pruneKeptPages } from '../src/history/page-archive.ts';
import { listRunDocuments } from '../src/history/run-documents.ts';
import { CHUNK_BYTES } from '../src/pipeline/page-archive.ts';
import type { AttemptOptions } from '../src/pipeline/run-attempt.ts';
import { makeQueue } from '../src/queue/queue.ts';
import { lines, runCli, simConnectionLines } from './support/cli.ts';
import { deleteKeys } from './support/queue-env.ts';
import { uniqueName } from './support/env.ts';
import { waitFor } from './support/wait.ts';
import { attemptFailure, type Harness, jobEntry, loadedRows, servedRows, useHarness } from './support/harness.ts';

const h = useHarness();

async function failing(config: ReturnType<Harness['config']>, job: string, req: AttemptOptions['request'] = {}) {
  return attemptFailure(h.run(config, job, req));
}

/**
 * Writes a jobs.yaml of one job of Sales/Orders at `path`, kept pages on, and gives a report-etl runner of it.
 * @param report the report's fields after `name` (`outputType: json, paging: 40, parameters: …`)
 * @param target the target's fields before `archive`
 */
function oneJobCli(path: string, job: string, mandant: string, report: string, target: string) {
  writeFileSync(
    path,
    [
      ...simConnectionLines(h.sim.url, 'KP_SECRET'),
      `  ${job}:`,
      '    connection: sim',
      `    report: { mandant: ${mandant}, name: Sales/Orders, ${report} }`,
      `    target: { ${target}, archive: { keepDays: 2 } }`,
      '',
    ].join('\n'),
  );
  return (...args: string[]) =>
    runCli([...args, '--config', path], { env: { KP_SECRET: 'demo-secret', LOG_LEVEL: 'warn' } });
}

/** Requests the simulator made so far, all endpoints together. */
const requests = () => Object.values(h.sim.counters().requests).reduce((a, b) => a + b, 0);

/** sha256 of each page the simulator serves for a report, fetched straight over HTTP. */
async function servedPageHashes(outputType: string, paging: number, parameters: Record<string, string>) {
  const token = await request(`${h.sim.url}/oauth/oauth2/v1/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: 'grant_type=client_credentials&client_id=demo-client&client_secret=demo-secret',
  });
  const { access_token } = (await token.body.json()) as { access_token: string };
  const headers = { authorization: `Bearer ${access_token}`, 'content-type': 'application/json' };
  const start = await request(`${h.sim.url}/api/svcreport/v1/report/7777/Sales%2FOrders.avw`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ outputType, paging, parameters }),
  });
  const { id } = (await start.body.json()) as { id: string };
  const hashes: string[] = [];
  try {
    await waitFor('the report job to finish', async () => {
      const job = await request(`${h.sim.url}/api/svcreport/v1/jobs/${id}`, { headers });
      return ((await job.body.json()) as { state: string }).state === 'FinishedSuccess';
    });
    for (let page = 1; ; page++) {
      const res = await request(`${h.sim.url}/api/svcreport/v1/jobs/${id}/output/${page}`, { headers });
      if (res.statusCode === 404) {
        await res.body.dump();
        break;
      }
      expect(res.statusCode).toBe(200);
      hashes.push(
        createHash('sha256')
          .update(Buffer.from(await res.body.arrayBuffer()))
          .digest('hex'),
      );
    }
  } finally {
    await (await request(`${h.sim.url}/api/svcreport/v1/jobs/${id}`, { method: 'DELETE', headers })).body.dump();
  }
  return hashes;
}

/** Stores page `page` of an attempt's kept pages again as gzip chunks, as pages were kept before zstd. */
async function regzip(attemptId: string, page: number): Promise<void> {
  const { rows } = await h.pool.query<{ chunk: number; data: Buffer }>(
    'SELECT chunk, data FROM etl.attempt_page_chunks WHERE attempt_id = $1 AND page = $2',
    [attemptId, page],
  );
  expect(rows.length).toBeGreaterThan(0);
  for (const r of rows)
    await h.pool.query(
      'UPDATE etl.attempt_page_chunks SET data = $4 WHERE attempt_id = $1 AND page = $2 AND chunk = $3',
      [attemptId, page, r.chunk, gzipSync(zstdDecompressSync(r.data), { level: 1 })],
    );
  await h.pool.query(`UPDATE etl.attempt_pages SET codec = 'gzip' WHERE attempt_id = $1 AND page = $2`, [
    attemptId,
    page,
  ]);
}

describe('target.archive', () => {
  it('keeps every page as served: its sha256, content type and size, compressed', async () => {
    const table = `${h.schema}.kept_json`;
    const config = h.config({
      k: jobEntry(
        { name: 'Sales/Orders', outputType: 'json', paging: 100, parameters: { ROWS: '350' } },
        { table, archive: { keepDays: 3 } },
      ),
    });
    const runKey = uniqueName('k');
    const result = await h.run(config, 'k', { runKey });
    expect(result.pages).toBe(4);
    const pages = await listKeptPages(h.pool, result.attemptId);
    expect(pages.map((p) => p.page)).toEqual([1, 2, 3, 4]);
    const served = await servedPageHashes('json', 100, { ROWS: '350' });
    expect(pages.map((p) => p.sha256)).toEqual(served);

    // report-etl pages writes them to files, byte for byte as served.
    const out = mkdtempSync(join(tmpdir(), 'kept-out-'));
    try {
      const r = await runCli(['pages', runKey, '--job', 'k', '--out', out], { env: { LOG_LEVEL: 'warn' } });
      expect(r.code).toBe(0);
      expect(readdirSync(out).sort()).toEqual(['1.json', '2.json', '3.json', '4.json']);
      const written = ['1', '2', '3', '4'].map((n) =>
        createHash('sha256')
          .update(readFileSync(join(out, `${n}.json`)))
          .digest('hex'),
      );
      expect(written).toEqual(served);
      expect(lines(r.stdout)[0]).toContain(`1.json  application/json`);
      const none = await runCli(['pages', uniqueName('nope')], { env: { LOG_LEVEL: 'warn' } });
      expect(none.code).toBe(2);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
    expect(pages.every((p) => p.contentType.startsWith('application/json'))).toBe(true);
    expect(pages.map((p) => p.codec)).toEqual(['zstd', 'zstd', 'zstd', 'zstd']);
    expect(pages.reduce((n, p) => n + p.bytes!, 0)).toBe(result.bytes);
    expect(pages.every((p) => p.storedBytes! < p.bytes!)).toBe(true);
    const archive = await getArchive(h.pool, result.attemptId);
    expect(archive).toMatchObject({ complete: true, announcedPages: 4, announcedRows: 350, outputType: 'json' });
    expect(archive!.keepUntil.getTime()).toBeGreaterThan(Date.now() + 2.9 * 86_400_000);
  });

  it('keeps a page of several chunks whole, and loads it again from them', async () => {
    const table = `${h.schema}.kept_big`;
    const params = { ROWS: '150000' };
    const config = h.config({
      b: jobEntry(
        { name: 'Sales/Orders', outputType: 'txt', paging: 140000, parameters: params },
        { table, archive: { keepDays: 1 } },
      ),
    });
    const runKey = uniqueName('b');
    const kept = await h.run(config, 'b', { runKey });
    const pages = await listKeptPages(h.pool, kept.attemptId);
    expect(pages.map((p) => p.sha256)).toEqual(await servedPageHashes('txt', 140000, params));
    const { rows } = await h.pool.query<{ page: number; n: string }>(
      'SELECT page, count(*) AS n FROM etl.attempt_page_chunks WHERE attempt_id = $1 GROUP BY page ORDER BY page',
      [kept.attemptId],
    );
    // More chunks than are in flight at once: chunk buffers are filled again after their compression.
    expect(Number(rows[0]!.n)).toBeGreaterThan(3);
    expect(rows.map((r) => Number(r.n))).toEqual(pages.map((p) => Math.ceil(p.bytes! / CHUNK_BYTES)));

    await h.pool.query(`TRUNCATE ${table}`);
    const again = await h.run(config, 'b', { runKey, trigger: 'replay', pagesOf: kept.attemptId });
    expect(again).toMatchObject({ status: 'succeeded', rows: 150000, pages: 2 });
    // Its progress is recorded as a server load's is (page being read, pages read, rows read), so that one killed
    // mid-load says where it stopped.
    const progressOf = async (attemptId: string) => readProgress((await getAttempt(h.pool, attemptId))!.progress);
    const server = await progressOf(kept.attemptId);
    // The request past the last page, for the 404 that ends them, is no page 3 of 2.
    expect(server).toMatchObject({ page: 2, pagesRead: 2, pages: 2, rows: 150000 });
    expect(await progressOf(again.attemptId)).toEqual({ ...server, at: expect.any(String) as unknown });
    expect(await loadedRows(h.pool, table, 'Sales/Orders.avw', params)).toEqual(
      servedRows('Sales/Orders.avw', params, 1),
    );
  });

  it('deletes kept pages once their keepDays ran out, the attempt staying', async () => {
    const table = `${h.schema}.kept_pruned`;
    const config = h.config({
      p: jobEntry(
        { name: 'Sales/Orders', outputType: 'txt', parameters: { ROWS: '30' } },
        { table, archive: { keepDays: 1 } },
      ),
    });
    const old = await h.run(config, 'p');
    const fresh = await h.run(config, 'p');
    await h.pool.query(
      `UPDATE etl.attempt_archives SET keep_until = now() - interval '1 minute' WHERE attempt_id = $1`,
      [old.attemptId],
    );
    expect(await pruneKeptPages(h.pool, ['p'], new Date())).toBe(1);
    expect(await getArchive(h.pool, old.attemptId)).toBeUndefined();
    expect(await listKeptPages(h.pool, old.attemptId)).toEqual([]);
    const chunks = await h.pool.query('SELECT count(*)::int AS n FROM etl.attempt_page_chunks WHERE attempt_id = $1', [
      old.attemptId,
    ]);
    expect(chunks.rows[0].n).toBe(0);
    expect(await getAttempt(h.pool, old.attemptId)).toBeDefined();
    expect(await getArchive(h.pool, fresh.attemptId)).toMatchObject({ complete: true });
  });

  it("keeps nothing when unset, and takes the connection's or the defaults' archive", async () => {
    const table = `${h.schema}.kept_none`;
    const entry = jobEntry({ name: 'Sales/Orders', outputType: 'txt', parameters: { ROWS: '20' } }, { table });
    const off = await h.run(h.config({ n: entry }), 'n');
    expect(await getArchive(h.pool, off.attemptId)).toBeUndefined();
    const byConnection = await h.run(h.config({ n: entry }, { archive: { keepDays: 1 } }), 'n');
    expect(await getArchive(h.pool, byConnection.attemptId)).toMatchObject({ complete: true, outputType: 'txt' });
  });

  it(
    'a load that failed on a frozen schema keeps its pages; --from-pages loads them after the table is fixed, ' +
      'with zero requests to the server',
    async () => {
      const table = `${h.schema}.kept_frozen`;
      const params = { ROWS: '250' };
      await h.pool.query(`CREATE TABLE ${table} (something_else text)`);
      const config = h.config({
        f: jobEntry(
          { name: 'Sales/Orders', outputType: 'txt', paging: 100, parameters: params },
          { table, schemaChanges: 'freeze', archive: { keepDays: 7 } },
        ),
      });
      const runKey = uniqueName('f');
      const failed = await failing(config, 'f', { runKey, trigger: 'manual' });
      expect(failed.code).toBe('SCHEMA_CHANGED');
      expect(await getArchive(h.pool, failed.attemptId)).toMatchObject({ complete: true, announcedPages: 3 });
      // Page 2 as a page kept before zstd was: gzip chunks, read by the codec recorded with the page.
      await regzip(failed.attemptId, 2);

      await h.pool.query(`DROP TABLE ${table}`);
      const before = requests();
      const replayed = await h.run(config, 'f', { runKey, trigger: 'replay', pagesOf: failed.attemptId });
      expect(requests()).toBe(before);
      expect(replayed).toMatchObject({ status: 'succeeded', rows: 250, pages: 3 });
      expect(await loadedRows(h.pool, table, 'Sales/Orders.avw', params)).toEqual(
        servedRows('Sales/Orders.avw', params, 1),
      );
      const attempt = await getAttempt(h.pool, replayed.attemptId);
      expect(attempt).toMatchObject({ pages_from: failed.attemptId, status: 'succeeded' });
      expect(Number(attempt?.attempt)).toBe(2);
      // Pages are kept once, by the attempt that read them from the server.
      expect(await getArchive(h.pool, replayed.attemptId)).toBeUndefined();
    },
  );

  it(
    'a guard trip accepted loads exactly the rows of the pages reviewed, while the server now answers ' + 'differently',
    async () => {
      const table = `${h.schema}.kept_guard`;
      const job = (rows: string) =>
        h.config({
          g: jobEntry(
            { name: 'Sales/Orders', outputType: 'json', paging: 10, parameters: { ROWS: rows } },
            { table, mode: 'replace', guard: { maxShrinkPercent: 50 }, archive: { keepDays: 7 } },
          ),
        });
      await h.run(job('400'), 'g');
      const runKey = uniqueName('g');
      const tripped = await failing(job('12'), 'g', { runKey });
      expect(tripped.code).toBe('GUARD_TRIPPED');
      expect(Number((await h.pool.query(`SELECT count(*) AS n FROM ${table}`)).rows[0].n)).toBe(400);

      // The server would now answer with 30 rows; the reviewed pages had 12.
      const before = requests();
      const accepted = await h.run(job('30'), 'g', {
        runKey,
        trigger: 'replay',
        acceptGuard: true,
        pagesOf: tripped.attemptId,
      });
      expect(requests()).toBe(before);
      expect(accepted.rows).toBe(12);
      expect(await loadedRows(h.pool, table, 'Sales/Orders.avw', { ROWS: '12' })).toEqual(
        servedRows('Sales/Orders.avw', { ROWS: '12' }, 1),
      );
      const attempt = await getAttempt(h.pool, accepted.attemptId);
      expect(attempt?.accepted_guard).toContain('12 rows');
      expect(attempt?.pages_from).toBe(tripped.attemptId);
    },
  );

  it(
    'documents count as kept pages: not stored twice, written by pages from their target; a failed documents ' +
      'load keeps its pages, and a replay loads them',
    async () => {
      const table = `${h.schema}.kept_pdf`;
      const params = { ROWS: '100' };
      const job = (guard: Record<string, number>) =>
        h.config({
          d: jobEntry(
            { name: 'Sales/Orders', outputType: 'pdf', paging: 40, parameters: params },
            { table, mode: 'append', guard, archive: { keepDays: 2 } },
          ),
        });
      const config = job({});
      const served = await servedPageHashes('pdf', 40, params);
      expect(served).toHaveLength(3);
      const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

      // A load that fails keeps the pages: the documents did not reach their target.
      const runKey = uniqueName('d');
      const failed = await failing(job({ minRows: 4 }), 'd', { runKey });
      expect(failed.code).toBe('GUARD_TRIPPED');
      expect(await getArchive(h.pool, failed.attemptId)).toMatchObject({ complete: true, announcedPages: 3 });
      expect((await listKeptPages(h.pool, failed.attemptId)).map((p) => p.sha256)).toEqual(served);

      // Accepted, they are loaded from the kept pages with no request to the server: the documents as served.
      const before = requests();
      const replayed = await h.run(job({ minRows: 4 }), 'd', {
        runKey,
        trigger: 'replay',
        acceptGuard: true,
        pagesOf: failed.attemptId,
      });
      expect(requests()).toBe(before);
      expect(replayed).toMatchObject({ status: 'succeeded', pages: 3 });
      const { rows } = await h.pool.query<{ content: Buffer }>(
        `SELECT content FROM ${table} WHERE _etl_run_key = $1 ORDER BY page`,
        [runKey],
      );
      expect(rows.map((r) => sha(r.content))).toEqual(served);

      // A load that succeeds keeps no pages of its own: its documents are its kept pages.
      const okKey = uniqueName('d');
      const ok = await h.run(config, 'd', { runKey: okKey });
      expect(await getArchive(h.pool, ok.attemptId)).toBeUndefined();
      expect(await listKeptPages(h.pool, ok.attemptId)).toEqual([]);
      const out = mkdtempSync(join(tmpdir(), 'kept-docs-'));
      try {
        for (const key of [okKey, runKey, ok.attemptId]) {
          rmSync(out, { recursive: true, force: true });
          const r = await runCli(['pages', key, '--out', out], { env: { LOG_LEVEL: 'warn' } });
          expect(r.code, r.stderr).toBe(0);
          expect(readdirSync(out).sort()).toEqual(['1.pdf', '2.pdf', '3.pdf']);
          expect(['1', '2', '3'].map((n) => sha(readFileSync(join(out, `${n}.pdf`))))).toEqual(served);
          expect(lines(r.stdout)[0]).toContain('1.pdf  application/pdf');
        }
      } finally {
        rmSync(out, { recursive: true, force: true });
      }
    },
  );

  it('refuses pages that were not kept, or are of another run, with PAGES_NOT_KEPT and nothing loaded', async () => {
    const table = `${h.schema}.kept_refused`;
    const config = h.config({
      r: jobEntry({ name: 'Sales/Orders', outputType: 'json', parameters: { ROWS: '5' } }, { table }),
    });
    const other = await h.run(config, 'r', { runKey: uniqueName('r') });
    const err = await failing(config, 'r', { runKey: uniqueName('r'), trigger: 'replay', pagesOf: other.attemptId });
    expect(err.code).toBe('PAGES_NOT_KEPT');
    expect(err.retryable).toBe(false);
    expect(err.message).toContain(`attempt ${other.attemptId} kept no pages`);
  });

  it('report-etl preview --from-pages shows what preview shows, from the kept pages, with no request', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kept-preview-'));
    const path = join(dir, 'jobs.yaml');
    const job = uniqueName('kprev');
    const table = `${h.schema}.kept_preview`;
    const report = { name: 'Sales/Orders', outputType: 'json', paging: 40, parameters: { ROWS: '90' } };
    const cli = oneJobCli(
      path,
      job,
      '7777',
      'outputType: json, paging: 40, parameters: { ROWS: "90" }',
      `table: ${table}`,
    );
    try {
      const runKey = uniqueName('pv');
      const kept = await h.run(h.config({ [job]: jobEntry(report, { table, archive: { keepDays: 2 } }) }), job, {
        runKey,
      });
      await h.pool.query(`DROP TABLE ${table}`);
      const fromServer = await cli('preview', job, '--rows', '4');
      expect(fromServer.code).toBe(0);

      const before = requests();
      const fromPages = await cli('preview', '--from-pages', runKey, '--rows', '4');
      expect(fromPages.code).toBe(0);
      expect(requests()).toBe(before);
      const out = lines(fromPages.stdout);
      expect(out[0]).toBe(
        `${job}: the pages attempt 1 (${kept.attemptId}) of run ${runKey} kept, with no request to the server`,
      );
      // Columns, types and the first rows: as preview shows them from the server.
      expect(out.slice(1)).toEqual(lines(fromServer.stdout));
      expect(out[1]).toBe(`${job}: first 4 of 90 rows, into ${table} — nothing was loaded`);
      // An attempt id names that attempt's pages.
      const byAttempt = await cli('preview', '--from-pages', kept.attemptId, '--rows', '4');
      expect(lines(byAttempt.stdout).slice(1)).toEqual(lines(fromServer.stdout));

      const refused = await cli('preview', '--from-pages', runKey, '-p', 'ROWS=3');
      expect(refused.code).toBe(2);
      expect(refused.stderr).toContain('-p and --logical-time do not go with --from-pages');
      const unknown = await cli('preview', '--from-pages', uniqueName('nope'));
      expect(unknown.code).toBe(2);
      const stray = await cli('preview', job, '--job', job);
      expect(stray.code).toBe(2);
      expect(stray.stderr).toContain('--job goes with --from-pages');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('preview --from-pages of a documents run that loaded previews its documents, from their target', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kept-preview-docs-'));
    const path = join(dir, 'jobs.yaml');
    const job = uniqueName('kpdoc');
    const table = `${h.schema}.kept_preview_docs`;
    // The preview from the server asks for pages of 10 rows: the job's pages are of 10 too, so the same documents.
    const report = { name: 'Sales/Orders', outputType: 'pdf', paging: 10, parameters: { ROWS: '25' } };
    const cli = oneJobCli(
      path,
      job,
      '7777',
      'outputType: pdf, paging: 10, parameters: { ROWS: "25" }',
      `table: ${table}, mode: append`,
    );
    try {
      const runKey = uniqueName('pd');
      const loaded = await h.run(h.config({ [job]: jobEntry(report, { table, mode: 'append' }) }), job, { runKey });
      expect(loaded).toMatchObject({ status: 'succeeded', pages: 3 });
      // It kept no pages of its own: its documents are its kept pages.
      expect(await getArchive(h.pool, loaded.attemptId)).toBeUndefined();
      const docs = await listRunDocuments(h.pool, loaded.attemptId);
      expect(docs).toHaveLength(3);
      const fromServer = await cli('preview', job, '--rows', '2');
      expect(fromServer.stderr).toBe('');
      expect(fromServer.code).toBe(0);

      const before = requests();
      for (const id of [runKey, loaded.attemptId]) {
        const fromPages = await cli('preview', '--from-pages', id, '--rows', '2');
        expect(fromPages.stderr).toBe('');
        expect(fromPages.code).toBe(0);
        const out = lines(fromPages.stdout);
        expect(out[0]).toBe(
          `${job}: the documents attempt 1 (${loaded.attemptId}) of run ${runKey} loaded into ${table}, with no ` +
            'request to the server',
        );
        // The first document, its columns and values: as preview shows them from the server, but for the file name's
        // time (the preview's) and the report's rows, which a documents run does not record.
        const timeless = (ls: string[]) => ls.map((l) => l.replace(/_\d{8}T\d{9}Z_/, '_<time>_'));
        expect(timeless(out.slice(2))).toEqual(timeless(lines(fromServer.stdout).slice(1)));
        expect(lines(fromServer.stdout)[0]).toBe(
          `${job}: first 1 documents (one per page) of a report with 25 rows, into ${table} — nothing was loaded`,
        );
        expect(out[1]).toBe(
          `${job}: first 1 documents (one per page) of the 3 the run loaded, into ${table} — nothing was loaded`,
        );
        expect(out.find((l) => l.startsWith('1 '))).toContain(`${docs[0]!.sha256.slice(0, 39)}…`);
      }
      expect(requests()).toBe(before);

      // A target that lost its documents: said, exit 1.
      await h.pool.query(`DELETE FROM ${table}`);
      const gone = await cli('preview', '--from-pages', runKey);
      expect(gone.code).toBe(1);
      expect(gone.stderr).toContain('DOCUMENT_NOT_FOUND');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("a mandant's run of a list job: preview --from-pages, and pages and revert with --job <job>", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kept-mandants-'));
    const path = join(dir, 'jobs.yaml');
    const job = uniqueName('kmand');
    const table = `${h.schema}.kept_mandants`;
    const report = { name: 'Sales/Orders', outputType: 'json', paging: 40, parameters: { ROWS: '50' } };
    const cli = oneJobCli(
      path,
      job,
      '[7777, 8888]',
      'outputType: json, paging: 40, parameters: { ROWS: "50" }',
      `table: ${table}, mode: append`,
    );
    const out = mkdtempSync(join(tmpdir(), 'kept-mandants-out-'));
    try {
      const config = h.config({
        [job]: jobEntry({ ...report, mandant: [7777, 8888] }, { table, mode: 'append', archive: { keepDays: 2 } }),
      });
      const runKey = uniqueName('pm');
      const kept = await h.run(config, `${job}[8888]`, { runKey });

      const preview = await cli('preview', '--from-pages', runKey, '--rows', '3');
      expect(preview.stderr).toBe('');
      expect(preview.code).toBe(0);
      expect(lines(preview.stdout)[0]).toBe(
        `${job}[8888]: the pages attempt 1 (${kept.attemptId}) of run ${runKey} kept, with no request to the server`,
      );
      // --job names the job of jobs.yaml; the run's job is its mandant's run subject.
      const previewByJob = await cli('preview', '--from-pages', runKey, '--job', job, '--rows', '3');
      expect(previewByJob.code).toBe(0);
      const byAttempt = await cli('preview', '--from-pages', kept.attemptId, '--job', job, '--rows', '3');
      expect(byAttempt.code).toBe(0);
      const pages = await cli('pages', runKey, '--job', job, '--out', out);
      expect(pages.stderr).toBe('');
      expect(pages.code).toBe(0);
      expect(readdirSync(out)).toEqual(['1.json', '2.json']);
      const revert = await cli('revert', runKey, '--job', job);
      expect(revert.code).toBe(0);
      expect(await h.pool.query(`SELECT count(*)::int AS n FROM ${table}`).then((r) => r.rows[0].n)).toBe(0);
      const other = await cli('pages', runKey, '--job', `${job}x`);
      expect(other.code).toBe(2);
    } finally {
      rmSync(dir, { recursive: true, force: true });
      rmSync(out, { recursive: true, force: true });
    }
  });

  it("preview --from-pages of a mandant's replace run says which rows a load would replace", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kept-mandant-replace-'));
    const job = uniqueName('kmrep');
    const table = `${h.schema}.kept_mandant_replace`;
    const report = { name: 'Sales/Orders', outputType: 'json', paging: 40, parameters: { ROWS: '50' } };
    const fields = 'outputType: json, paging: 40, parameters: { ROWS: "50" }';
    const cli = oneJobCli(join(dir, 'jobs.yaml'), job, '[7777, 8888]', fields, `table: ${table}`);
    try {
      const config = h.config({
        [job]: jobEntry({ ...report, mandant: [7777, 8888] }, { table, archive: { keepDays: 2 } }),
      });
      const runKey = uniqueName('pr');
      await h.run(config, `${job}[8888]`, { runKey });
      const fromServer = await cli('preview', job, '--mandant', '8888', '--rows', '2');
      const fromPages = await cli('preview', '--from-pages', runKey, '--job', job, '--rows', '2');
      expect(fromPages.code).toBe(0);
      const replaces = `a load replaces the rows of mandant 8888 (mandant = 8888) of ${table} (it holds 50`;
      expect(fromServer.stdout).toContain(replaces);
      expect(fromPages.stdout).toContain(replaces);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('report-etl replay --from-pages queues the run with its kept pages, refuses a run that kept none', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kept-pages-'));
    const path = join(dir, 'jobs.yaml');
    const prefix = uniqueName('qk');
    const job = uniqueName('kept');
    const table = `${h.schema}.kept_cli`;
    const entry = (archive: boolean) =>
      jobEntry(
        { name: 'Sales/Orders', outputType: 'txt', paging: 100, parameters: { ROWS: '150' } },
        { table, schemaChanges: 'freeze', ...(archive ? { archive: { keepDays: 2 } } : {}) },
      );
    writeFileSync(
      path,
      [
        ...simConnectionLines(h.sim.url, 'KP_SECRET'),
        `  ${job}:`,
        '    connection: sim',
        '    report: { mandant: 7777, name: Sales/Orders, outputType: txt, paging: 100, parameters: { ROWS: "150" } }',
        `    target: { table: ${table}, schemaChanges: freeze, archive: { keepDays: 2 } }`,
        '',
      ].join('\n'),
    );
    const queue = makeQueue(h.redis, prefix);
    try {
      await h.pool.query(`CREATE TABLE ${table} (not_the_report text)`);
      const runKey = uniqueName('rk');
      const failed = await failing(h.config({ [job]: entry(true) }), job, { runKey });
      expect(failed.code).toBe('SCHEMA_CHANGED');
      const noPagesKey = uniqueName('rk');
      const noPages = await failing(h.config({ [job]: entry(false) }), job, { runKey: noPagesKey });
      expect(noPages.code).toBe('SCHEMA_CHANGED');

      const cli = (...args: string[]) =>
        runCli([...args, '--config', path, '--queue-prefix', prefix], {
          env: { KP_SECRET: 'demo-secret', LOG_LEVEL: 'warn' },
        });
      const refused = await cli('replay', noPagesKey, '--from-pages');
      expect(refused.code).toBe(2);
      expect(refused.stderr).toContain(`run ${noPagesKey} of job ${job} has no kept pages`);

      const r = await cli('replay', runKey, '--from-pages');
      expect(r.code).toBe(0);
      expect(r.stdout).toContain(`it loads the pages attempt 1 (${failed.attemptId}) kept, without asking the server`);
      const queued = await queue.getJobs(['waiting', 'prioritized', 'delayed']);
      const replay = queued.find((q) => q.data.runKey === runKey);
      expect(replay?.id).toMatch(/__replay_[0-9a-f-]{36}_from_pages$/);
      expect(replay!.data).toMatchObject({ job, runKey, trigger: 'replay', pagesOf: failed.attemptId });

      // What a worker does with it, once the table is fixed: no request to the server.
      await h.pool.query(`DROP TABLE ${table}`);
      const before = requests();
      const { job: _j, ...request } = replay!.data;
      const done = await h.run(h.config({ [job]: entry(true) }), job, request);
      expect(requests()).toBe(before);
      expect(done).toMatchObject({ status: 'succeeded', rows: 150, pages: 2 });
    } finally {
      await queue.close();
      await deleteKeys(h.redis, prefix);
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
