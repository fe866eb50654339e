/**
 * The document case of `npm run bench`: `docMB` MB of pdf pages of `docPageMB` MB each (the simulator
 * pads Big.avw's pdf pages with PAD_MB of filler) archived as bytea by a fresh worker (mode replace: DELETE + COPY),
 * against psql's own `\copy` of the same bytes as bytea (dumped from the loaded table with `\copy … TO`, so the
 * limit gets exactly the rows the worker made), into a table of the same shape: after a DELETE of its rows in the
 * same transaction (what replace does), and into an empty table. Reports MB/s of both, and the worker's peak RSS
 * over its RSS before the run (the bound: +32 MB for 200 MB pages).
 */
import { rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type pg from 'pg';
import { measureWorker, type PageServer } from './children.ts';
import type { BenchOptions } from './options.ts';
import { psql } from './limit.ts';
import { median, type CaseResult } from './report.ts';
import type { WorkerInput } from './worker-types.ts';

const ROWS_PER_PAGE = 10;
const COLUMNS = '(page, file_name, content_type, content, bytes, sha256)';

/** What the document case needs from bench/run.ts. */
export interface DocumentCaseContext {
  db: pg.Client;
  server: PageServer;
  opts: BenchOptions;
  schema: string;
  /** A scratch directory for the dump. */
  dir: string;
  log: (s: string) => void;
}

/** Measures the document case; see the file comment. */
export async function documentCase(c: DocumentCaseContext): Promise<CaseResult> {
  const { db, opts, schema, log } = c;
  const pages = Math.max(1, Math.round(opts.docMB / opts.docPageMB));
  const table = `${schema}.pdf_docs`;
  const input: WorkerInput = {
    simUrl: c.server.url,
    databaseUrl: opts.databaseUrl,
    redisUrl: opts.redisUrl,
    report: 'Big.avw',
    rows: pages * ROWS_PER_PAGE,
    outputType: 'pdf',
    paging: ROWS_PER_PAGE,
    parameters: { PAD_MB: String(opts.docPageMB) },
    target: table,
    mode: 'replace',
  };
  log(`pdf: ${pages} pages of ${opts.docPageMB} MB; warm-up run (the simulator renders and keeps the pages)`);
  const warm = await measureWorker(input);
  if (!warm.ok) throw new Error(`document warm-up run failed: ${warm.error}`);
  const dump = join(c.dir, 'pdf_docs.copy');
  await psql(opts.databaseUrl, [
    `\\copy (SELECT page, file_name, content_type, content, bytes, sha256 FROM ${table}) TO '${dump}'`,
  ]);
  const dumpBytes = (await stat(dump)).size;
  await db.query(`CREATE TABLE ${table}_lim (LIKE ${table} INCLUDING ALL)`);
  await db.query(`CREATE TABLE ${table}_empty (LIKE ${table} INCLUDING ALL)`);
  await psql(opts.databaseUrl, [`\\copy ${table}_lim ${COLUMNS} FROM '${dump}'`]);
  const runs: CaseResult['runs'] = [];
  let bytes = 0;
  for (let r = 0; r < opts.repeats; r++) {
    const limitFirst = r % 2 === 1;
    const limit = async (): Promise<number> =>
      (await psql(opts.databaseUrl, [`DELETE FROM ${table}_lim`, `\\copy ${table}_lim ${COLUMNS} FROM '${dump}'`])).ms;
    const limFirst = limitFirst ? await limit() : undefined;
    const e2e = await measureWorker(input, opts.workerArgs);
    if (!e2e.ok) throw new Error(`document run failed: ${e2e.error}`);
    if (e2e.rows !== pages) throw new Error(`document run archived ${e2e.rows} documents, expected ${pages}`);
    bytes = e2e.bytes;
    const limitMs = limFirst ?? (await limit());
    await db.query(`TRUNCATE ${table}_empty`);
    const emptyCopyMs = (await psql(opts.databaseUrl, [`\\copy ${table}_empty ${COLUMNS} FROM '${dump}'`])).ms;
    const run = {
      e2eMs: e2e.durationMs,
      limitMs,
      emptyCopyMs,
      firstRowMs: e2e.firstRowMs,
      rssMB: (e2e.maxRssKiB * 1024) / 1e6,
      baseRssMB: (e2e.baseRssKiB * 1024) / 1e6,
      peaks: e2e.peaks,
      cpuMs: e2e.cpuMs,
    };
    runs.push(run);
    log(
      `  run ${r + 1}: e2e ${(run.e2eMs / 1000).toFixed(2)} s (${(bytes / 1e6 / (run.e2eMs / 1000)).toFixed(0)} ` +
        `MB/s), psql \\copy ${(limitMs / 1000).toFixed(2)} s ` +
        `(${(bytes / 1e6 / (limitMs / 1000)).toFixed(0)} MB/s), into empty ${(emptyCopyMs / 1000).toFixed(2)} ` +
        `s, worker CPU ${(run.cpuMs / 1000).toFixed(2)} s, ` +
        `RSS ${run.rssMB.toFixed(0)} MB = ${run.baseRssMB.toFixed(0)} MB before the run + ` +
        `${(run.rssMB - run.baseRssMB).toFixed(0)} MB`,
    );
  }
  await rm(dump, { force: true });
  await db.query(`DROP TABLE IF EXISTS ${table}, ${table}_lim, ${table}_empty`);
  const e2eMs = median(runs.map((x) => x.e2eMs));
  const limitMs = median(runs.map((x) => x.limitMs));
  const emptyCopyMs = median(runs.map((x) => x.emptyCopyMs));
  const rssMB = median(runs.map((x) => x.rssMB));
  const baseRssMB = median(runs.map((x) => x.baseRssMB));
  log(
    `pdf documents: ${(bytes / 1e6 / (e2eMs / 1000)).toFixed(0)} MB/s vs psql \\copy ` +
      `${(bytes / 1e6 / (limitMs / 1000)).toFixed(0)} MB/s (ratio ${(limitMs / e2eMs).toFixed(2)}); ` +
      `worker RSS +${Math.max(...runs.map((x) => x.rssMB - x.baseRssMB)).toFixed(0)} MB over its ` +
      `${baseRssMB.toFixed(0)} MB before the run (max of ${runs.length})`,
  );
  return {
    rows: pages,
    outputType: 'pdf',
    paging: ROWS_PER_PAGE,
    pages,
    bytes,
    csvBytes: dumpBytes,
    e2eMs,
    limitMs,
    emptyCopyMs,
    firstRowMs: median(runs.map((x) => x.firstRowMs)),
    rowsPerSec: (pages / e2eMs) * 1000,
    mbPerSec: bytes / 1e6 / (e2eMs / 1000),
    ratio: limitMs / e2eMs,
    ratioEmpty: emptyCopyMs / e2eMs,
    rssMB,
    rssMaxMB: Math.max(...runs.map((x) => x.rssMB)),
    baseRssMB,
    cpuMs: median(runs.map((x) => x.cpuMs)),
    runs,
  };
}
