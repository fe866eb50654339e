/**
 * Every output type of the service's table end to end (simulator over HTTP → runAttempt → PostgreSQL), value for value:
 * txt_cstr as typed rows; txt_all/txt_allcstr as lines; json_userdef(_compact) as jsonb per page and as typed rows at
 * `rowsAt`; xml as xml per page; documents archived per page (and excel-xlsx_data's `load: rows`).
 */
import { describe, expect, it } from 'vitest';
import ExcelJS from 'exceljs';
import { reportData } from '../src/simulator/catalogue.ts';
import { GROUP_ROWS } from '../src/simulator/render-text-variants.ts';
import { xlsxValue } from '../src/simulator/render-documents.ts';
import { USERDEF_ROWS_POINTER, xmlElementName } from '../src/simulator/render-userdef.ts';
import { makeZonedFormatter } from '../src/simulator/time-format.ts';
import { listRunDocuments } from '../src/history/run-documents.ts';
import { DOCUMENT_FORMATS, DOCUMENT_OUTPUT_TYPES } from '../src/vocabulary.ts';
import { columnTypes, jobEntry, loadedRows, servedRows, useHarness } from './support/harness.ts';
import { checkDocx, checkPdf } from './support/documents.ts';

const h = useHarness();

const SALES = 'Sales/Orders.avw';

it(
  'txt_cstr loads the served rows value for value (umlauts, emoji, CR/LF, tabs, ' +
    "backslashes, quotes) with txt's types",
  async () => {
    const table = `${h.schema}.cstr`;
    const params = { ROWS: '700' };
    const config = h.config({
      j: jobEntry({ name: 'Sales/Orders', outputType: 'txt_cstr', paging: 150, parameters: params }, { table }),
    });
    const r = await h.run(config, 'j');
    expect(r).toMatchObject({ status: 'succeeded', rows: 700, pages: 5 });
    expect(await loadedRows(h.pool, table, SALES, params)).toEqual(servedRows(SALES, params, 1));
    expect(await columnTypes(h.pool, table)).toMatchObject({
      auftrag_nr: 'bigint',
      kunde: 'text',
      betrag: 'numeric',
      erfasst_am: 'timestamp with time zone',
      beleg_id: 'bigint',
    });
    const { rows } = await h.pool.query(
      `SELECT count(*)::int AS n FROM ${table} WHERE bemerkung LIKE '%🚀👍🏽 mit' || chr(9) ` +
        `|| 'Tab' OR kunde LIKE '%\\%'`,
    );
    expect(rows[0].n).toBeGreaterThan(0);
  },
);

/** The lines the simulator's txt_all layout has for a report, per page: [page, line, fields]. */
function expectedLines(path: string, params: Record<string, string>, paging: number): string[] {
  const data = reportData(path, params, 1)!;
  const zone = makeZonedFormatter('Europe/Zurich');
  const out: string[] = [];
  const pages = Math.ceil(data.rowCount / paging);
  for (let p = 1; p <= pages; p++) {
    const lines: (string | null)[][] = [[path, 'Seite', String(p)], data.columns.map((c) => c.name)];
    for (let r = (p - 1) * paging; r < Math.min(data.rowCount, p * paging); r++) {
      const g = Math.floor(r / GROUP_ROWS) + 1;
      if (r % GROUP_ROWS === 0) lines.push(['Gruppe', String(g)]);
      lines.push(
        data.cells(r).map((v) => (v === null || v === undefined ? null : typeof v === 'number' ? zone.txt(v) : v)),
      );
      if (r % GROUP_ROWS === GROUP_ROWS - 1 || r === data.rowCount - 1)
        lines.push(['Summe Gruppe', String(g), String(r - (g - 1) * GROUP_ROWS + 1)]);
    }
    if (p === pages) lines.push(['Gesamt', String(data.rowCount)]);
    lines.forEach((fields, i) => out.push(JSON.stringify([p, i + 1, fields])));
  }
  return out;
}

describe.each(['txt_all', 'txt_allcstr'] as const)('%s', (outputType) => {
  it('loads every line of every page losslessly as page, line, fields text[]', async () => {
    const table = `${h.schema}.${outputType}`;
    const params = { ROWS: '60' };
    const config = h.config({
      j: jobEntry({ name: 'Sales/Orders', outputType, paging: 25, parameters: params }, { table }),
    });
    const r = await h.run(config, 'j');
    expect(r).toMatchObject({ status: 'succeeded', pages: 3 });
    expect(await columnTypes(h.pool, table)).toEqual({ page: 'integer', line: 'integer', fields: 'text[]' });
    const { rows } = await h.pool.query<{ r: string }>(
      `SELECT json_build_array(page, line, fields)::text AS r FROM ${table} ORDER BY page, line`,
    );
    const loaded = rows.map((x) => JSON.stringify(JSON.parse(x.r)));
    expect(loaded).toEqual(expectedLines(SALES, params, 25));
    expect(r.rows).toBe(loaded.length);
  });
});

describe.each(['json_userdef', 'json_userdef_compact'] as const)('%s', (outputType) => {
  it('loads one jsonb document per page, numbers digit-exact', async () => {
    const table = `${h.schema}.${outputType}_doc`;
    const params = { ROWS: '130' };
    const config = h.config({
      j: jobEntry({ name: 'Sales/Orders', outputType, paging: 50, parameters: params }, { table }),
    });
    const r = await h.run(config, 'j');
    expect(r).toMatchObject({ status: 'succeeded', rows: 3, pages: 3 });
    expect(await columnTypes(h.pool, table)).toEqual({ page: 'integer', document: 'jsonb' });
    const { rows } = await h.pool.query<{ page: number; n: number; report: string }>(
      `SELECT page, jsonb_array_length(document #> '{body,orders}') AS n, document #>> '{meta,report}' AS ` +
        `report FROM ${table} ORDER BY page`,
    );
    expect(rows).toEqual([
      { page: 1, n: 50, report: SALES },
      { page: 2, n: 50, report: SALES },
      { page: 3, n: 30, report: SALES },
    ]);
    // Every value, as text, from the loaded documents: jsonb keeps numbers exact (Beleg ID beyond 2^53).
    const values = await h.pool.query<{ r: (string | null)[] }>(
      `SELECT ARRAY[o->>'Auftrag Nr', o->>'Kunde', o->>'Menge Stk', o->>'Betrag', o->>'Rabatt %',
         (extract(epoch FROM (o->>'Erfasst Am')::timestamptz) * 1000)::bigint::text, o->>'Bemerkung',
         o->>'Beleg ID'] AS r
       FROM ${table}, jsonb_array_elements(document #> '{body,orders}') AS o`,
    );
    expect(values.rows.map((x) => JSON.stringify(x.r)).sort()).toEqual(servedRows(SALES, params, 1));
  });

  it(`loads the rows at rowsAt ${USERDEF_ROWS_POINTER} as typed rows like json`, async () => {
    const table = `${h.schema}.${outputType}_rows`;
    const params = { ROWS: '230' };
    const config = h.config({
      j: jobEntry(
        { name: 'Sales/Orders', outputType, paging: 100, parameters: params },
        { table, rowsAt: USERDEF_ROWS_POINTER },
      ),
    });
    const r = await h.run(config, 'j');
    expect(r).toMatchObject({ status: 'succeeded', rows: 230, pages: 3 });
    expect(await loadedRows(h.pool, table, SALES, params)).toEqual(servedRows(SALES, params, 1));
    expect(await columnTypes(h.pool, table)).toMatchObject({
      auftrag_nr: 'bigint',
      betrag: 'numeric',
      erfasst_am: 'timestamp with time zone',
      beleg_id: 'bigint',
      kunde: 'text',
    });
  });
});

it('json_userdef rowsAt infers numeric for integers on page 1 and decimals later (drift across pages)', async () => {
  const table = `${h.schema}.userdef_drift`;
  const config = h.config({
    j: jobEntry(
      { name: 'Drift', outputType: 'json_userdef_compact', paging: 50, parameters: { ROWS: '200' } },
      { table, rowsAt: USERDEF_ROWS_POINTER },
    ),
  });
  await h.run(config, 'j');
  expect(await columnTypes(h.pool, table)).toEqual({ nr: 'bigint', wert: 'numeric' });
  expect(await loadedRows(h.pool, table, 'Drift.avw', { ROWS: '200' })).toEqual(
    servedRows('Drift.avw', { ROWS: '200' }, 1),
  );
});

it('xml loads one xml document per page, values exact (XML specials, CR, line breaks)', async () => {
  const table = `${h.schema}.xmldoc`;
  const params = { ROWS: '90' };
  const config = h.config({
    j: jobEntry({ name: 'Sales/Orders', outputType: 'xml', paging: 40, parameters: params }, { table }),
  });
  const r = await h.run(config, 'j');
  expect(r).toMatchObject({ status: 'succeeded', rows: 3, pages: 3 });
  expect(await columnTypes(h.pool, table)).toEqual({ page: 'integer', document: 'xml' });
  const data = reportData(SALES, params, 1)!;
  const names = data.columns.map((c) => xmlElementName(c.name));
  const kunde = names[1]!;
  const { rows } = await h.pool.query<{ page: number; n: number }>(
    `SELECT page, (xpath('count(/report/orders/order)', document))[1]::text::int AS n FROM ${table} ORDER BY page`,
  );
  expect(rows).toEqual([
    { page: 1, n: 40 },
    { page: 2, n: 40 },
    { page: 3, n: 10 },
  ]);
  // Text content unescaped by PostgreSQL's own XPath: compare every customer name, in order.
  const k = await h.pool.query<{ v: string }>(
    `SELECT x.v FROM ${table}, XMLTABLE('/report/orders/order' PASSING document COLUMNS v text PATH ` +
      `'${kunde}') AS x ORDER BY page`,
  );
  expect(k.rows.map((x) => x.v)).toEqual(Array.from({ length: 90 }, (_, i) => data.row(i)[1]));
});

describe('documents', () => {
  it('pdf: one row per page with file name, content type, bytes, sha256 and a PDF that renders', async () => {
    const table = `${h.schema}.pdf_docs`;
    const params = { ROWS: '45' };
    const config = h.config({
      j: jobEntry({ name: 'Sales/Orders', outputType: 'pdf', paging: 20, parameters: params }, { table }),
    });
    const r = await h.run(config, 'j');
    expect(r).toMatchObject({ status: 'succeeded', rows: 3, pages: 3 });
    expect(await columnTypes(h.pool, table)).toEqual({
      page: 'integer',
      file_name: 'text',
      content_type: 'text',
      bytes: 'bigint',
      sha256: 'text',
      content: 'bytea',
    });
    const { rows } = await h.pool.query(
      `SELECT page, file_name, content_type, bytes::int, sha256, octet_length(content) AS len, ` +
        `encode(sha256(content), 'hex') AS sum, content FROM ${table} ORDER BY page`,
    );
    expect(rows.map((x) => x.page)).toEqual([1, 2, 3]);
    for (const x of rows) {
      expect(x.file_name).toMatch(new RegExp(`^Orders_7777_\\d{8}T\\d{9}Z_${x.page}\\.pdf$`));
      expect(x.content_type).toBe('application/pdf');
      expect(x.bytes).toBe(x.len);
      expect(x.sha256).toBe(x.sum);
      expect(await checkPdf(x.content)).toContain(`${SALES} - Seite ${x.page}`);
    }
    const docs = await listRunDocuments(h.pool, r.attemptId);
    expect(docs.map((d) => [d.page, d.fileName, d.sha256, d.bytes, d.targetTable])).toEqual(
      rows.map((x) => [x.page, x.file_name, x.sha256, x.bytes, table]),
    );
  });

  it.each(['excel-xlsx_data', 'excel-xlsx_matrix', 'excel-xlsx'] as const)(
    '%s: a workbook per page that reads back with the served values',
    async (outputType) => {
      const table = `${h.schema}.${outputType.replaceAll('-', '_')}`;
      const params = { ROWS: '30' };
      const config = h.config({
        j: jobEntry({ name: 'Sales/Orders', outputType, paging: 20, parameters: params }, { table }),
      });
      const r = await h.run(config, 'j');
      expect(r).toMatchObject({ status: 'succeeded', rows: 2, pages: 2 });
      const data = reportData(SALES, params, 1)!;
      const { rows } = await h.pool.query<{ page: number; content: Buffer; content_type: string; file_name: string }>(
        `SELECT page, content, content_type, file_name FROM ${table} ORDER BY page`,
      );
      expect(rows.map((x) => x.content_type)).toEqual([
        DOCUMENT_FORMATS[outputType].contentType,
        DOCUMENT_FORMATS[outputType].contentType,
      ]);
      expect(rows[1]!.file_name).toMatch(/_2\.xlsx$/);
      for (const x of rows) {
        const wb = new ExcelJS.Workbook();
        await wb.xlsx.load(x.content as unknown as ArrayBuffer);
        const ws = wb.worksheets[0]!;
        const from = (x.page - 1) * 20;
        const to = Math.min(30, from + 20);
        const cell = (row: number, col: number): unknown => {
          const v = ws.getRow(row).getCell(col).value;
          return v instanceof Date ? v.getTime() : v;
        };
        const want = (r: number, c: number): unknown => {
          const v = xlsxValue(data, r, c);
          return v instanceof Date ? v.getTime() : v;
        };
        for (let r = from; r < to; r++) {
          for (let c = 0; c < data.columns.length; c++) {
            if (outputType === 'excel-xlsx_matrix') expect(cell(c + 1, r - from + 2)).toEqual(want(r, c));
            else expect(cell(r - from + (outputType === 'excel-xlsx' ? 3 : 2), c + 1)).toEqual(want(r, c));
          }
        }
      }
    },
  );

  it('word-docx: a valid Office Open XML package per page holding the rows', async () => {
    const table = `${h.schema}.docx_docs`;
    const config = h.config({ j: jobEntry({ name: 'Stock/Levels', outputType: 'word-docx', paging: 15 }, { table }) });
    const r = await h.run(config, 'j');
    expect(r).toMatchObject({ status: 'succeeded', rows: 3, pages: 3 });
    const data = reportData('Stock/Levels.avw', {}, 1)!;
    const { rows } = await h.pool.query<{ page: number; content: Buffer }>(
      `SELECT page, content FROM ${table} ORDER BY page`,
    );
    for (const x of rows) {
      const text = await checkDocx(x.content);
      expect(text).toContain(`Stock/Levels.avw - Seite ${x.page}`);
      expect(text).toContain(data.row((x.page - 1) * 15)[0]);
    }
  });

  it('append keeps the documents of every run, each run listed with its own', async () => {
    const table = `${h.schema}.pdf_append`;
    const config = h.config({
      j: jobEntry({ name: 'Stock/Levels', outputType: 'pdf', paging: 30 }, { table, mode: 'append' }),
    });
    const a = await h.run(config, 'j');
    const b = await h.run(config, 'j');
    const { rows } = await h.pool.query(
      `SELECT count(*)::int AS n, count(DISTINCT file_name)::int AS names FROM ${table}`,
    );
    expect(rows[0]).toEqual({ n: 4, names: 4 });
    expect((await listRunDocuments(h.pool, a.attemptId)).map((d) => d.page)).toEqual([1, 2]);
    expect((await listRunDocuments(h.pool, b.attemptId)).map((d) => d.page)).toEqual([1, 2]);
  });

  it('excel-xlsx_data with load: rows loads the first sheet as typed rows', async () => {
    const table = `${h.schema}.xlsx_rows`;
    const params = { ROWS: '75' };
    const config = h.config({
      j: jobEntry(
        { name: 'Sales/Orders', outputType: 'excel-xlsx_data', paging: 30, parameters: params },
        { table, load: 'rows' },
      ),
    });
    const r = await h.run(config, 'j');
    expect(r).toMatchObject({ status: 'succeeded', rows: 75, pages: 3 });
    expect(await columnTypes(h.pool, table)).toMatchObject({
      auftrag_nr: 'bigint',
      kunde: 'text',
      betrag: 'numeric',
      erfasst_am: 'timestamp with time zone',
      beleg_id: 'text',
    });
    const data = reportData(SALES, params, 1)!;
    const expected = Array.from({ length: 75 }, (_, i) =>
      JSON.stringify(
        data.columns.map((_, c) => {
          // What an xlsx cell can hold: exceljs writes no cell for '', and XML turns a CR LF in text into LF.
          const v = xlsxValue(data, i, c);
          return v === null || v === ''
            ? null
            : v instanceof Date
              ? String(v.getTime())
              : String(v).replaceAll('\r\n', '\n');
        }),
      ),
    ).sort();
    expect(await loadedRows(h.pool, table, SALES, params)).toEqual(expected);
  });
});

it('every document type is covered above', () => {
  expect([...DOCUMENT_OUTPUT_TYPES].sort()).toEqual([
    'excel-xlsx',
    'excel-xlsx_data',
    'excel-xlsx_matrix',
    'pdf',
    'word-docx',
  ]);
});
