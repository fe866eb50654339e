/**
 * Bad pages of the new output types (docs/loaded-tables.md "Output types"): each fails the run with PAGE_FORMAT naming
 * the page and what was wrong, recorded in the run history; the target stays exactly as it was (it holds an earlier
 * good load); the report job is deleted. The simulator makes page 2 bad on request (SIM_FAULT,
 * simulator/page-faults.ts).
 */
import { expect, it } from 'vitest';
import { listRunDocuments } from '../src/history/run-documents.ts';
import { USERDEF_ROWS_POINTER } from '../src/simulator/render-userdef.ts';
import type { OutputType } from '../src/vocabulary.ts';
import { attemptFailure, type Harness, jobEntry, useHarness } from './support/harness.ts';

const h = useHarness();

/** A fingerprint of a table's full content. */
async function snapshot(table: string): Promise<string> {
  const { rows } = await h.pool.query(
    `SELECT md5(string_agg(t::text, '|' ORDER BY t::text)) AS m, count(*)::int AS n FROM ${table} t`,
  );
  return `${rows[0].n}:${rows[0].m}`;
}

let n = 0;
/**
 * Loads the job once without a fault (so the target holds rows), then with `fault` on page 2.
 * @returns the failure, its run and run_errors rows
 */
async function failsOnPage2(outputType: OutputType, fault: string, target: Record<string, unknown> = {}) {
  const table = `${h.schema}.f${++n}`;
  const job = (parameters: Record<string, string>) =>
    h.config({
      j: jobEntry(
        { name: 'Sales/Orders', outputType, paging: 20, parameters: { ROWS: '50', ...parameters } },
        { table, ...target },
      ),
    });
  const run = (config: ReturnType<Harness['config']>) => h.run(config, 'j');
  await run(job({}));
  const before = await snapshot(table);
  expect(before).not.toMatch(/^0:/);
  const failed = await attemptFailure(run(job({ SIM_FAULT: fault, SIM_FAULT_PAGE: '2' })));
  expect(await snapshot(table)).toBe(before);
  const runRow = (await h.pool.query('SELECT * FROM etl.attempts WHERE attempt_id = $1', [failed.attemptId])).rows[0];
  const errors = (await h.pool.query('SELECT * FROM etl.run_errors WHERE attempt_id = $1', [failed.attemptId])).rows;
  expect(runRow).toMatchObject({ job: 'j', status: 'failed' });
  expect(errors).toHaveLength(1);
  expect(errors[0]).toMatchObject({ stage: 'parse', error_kind: 'PAGE_FORMAT', retryable: false });
  expect(errors[0].details).toMatchObject({ page: 2 });
  expect(failed.code).toBe('PAGE_FORMAT');
  expect(failed.message).toMatch(/^page 2\b/);
  expect(await listRunDocuments(h.pool, failed.attemptId)).toEqual([]);
  return { err: failed, run: runRow, error: errors[0] };
}

it('txt_cstr: a malformed escape names page, row, column and the escape', async () => {
  const { err } = await failsOnPage2('txt_cstr', 'bad-escape');
  expect(err.message).toMatch(
    /^page 2, row 2, byte offset \d+: column "Kunde": malformed C\/Java string: unknown escape \\q$/,
  );
});

it('txt_allcstr: a malformed escape names page, line and field', async () => {
  const { err } = await failsOnPage2('txt_allcstr', 'bad-escape');
  expect(err.message).toMatch(
    /^page 2, row 3, byte offset \d+: line 3, field 2: malformed C\/Java string: unknown escape \\q$/,
  );
});

it('json_userdef with rowsAt: a page without the array at rowsAt', async () => {
  const { err } = await failsOnPage2('json_userdef', 'no-rows-array', { rowsAt: USERDEF_ROWS_POINTER });
  expect(err.message).toBe('page 2: no array of rows at rowsAt /body/orders: /body has no member "orders"');
});

it('xml: a page that is not well-formed names page, line and column', async () => {
  const { err } = await failsOnPage2('xml', 'broken-xml');
  expect(err.message).toBe('page 2: XML is not well-formed at line 27, column 17: unexpected close tag.');
});

it('pdf: an empty page', async () => {
  const { err } = await failsOnPage2('pdf', 'empty-document');
  expect(err.message).toBe('page 2: empty document: the pdf page has no bytes');
});

it('pdf: a truncated page', async () => {
  const { err } = await failsOnPage2('pdf', 'truncated-document');
  expect(err.message).toMatch(/^page 2, byte offset \d+: truncated PDF: no %%EOF in its last 1024 of \d+ bytes$/);
});

it('excel-xlsx: a truncated page', async () => {
  const { err } = await failsOnPage2('excel-xlsx', 'truncated-document');
  expect(err.message).toMatch(
    /^page 2, byte offset \d+: truncated xlsx package: the zip has no end-of-central-directory record \(\d+ bytes\)$/,
  );
});

it('word-docx: a Content-Type that does not fit the output type', async () => {
  const { err } = await failsOnPage2('word-docx', 'wrong-content-type');
  expect(err.message).toBe(
    'page 2: Content-Type "text/html" does not fit output type word-docx (expected ' +
      'application/vnd.openxmlformats-officedocument.wordprocessingml.document)',
  );
});

it('excel-xlsx_data with load: rows: a truncated workbook', async () => {
  const { err } = await failsOnPage2('excel-xlsx_data', 'truncated-document', { load: 'rows' });
  expect(err.message).toMatch(/^page 2: not a readable xlsx workbook: /);
});
