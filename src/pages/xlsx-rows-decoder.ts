/**
 * excel-xlsx_data pages with `target.load: rows` (docs/loaded-tables.md "Output types"): the first sheet, streamed by
 * exceljs, as typed rows under its header row (every page repeats it). Numbers as JavaScript's shortest round trip,
 * dates as ISO UTC, rich text joined, a formula's cached result, errors such as #DIV/0! as text.
 */
import { Readable } from 'node:stream';
import type ExcelJS from 'exceljs';
import { CopyOutput, writeEscapedString } from './copy-text.ts';
import { LF, TAB } from './bytes.ts';
import { checkContentType } from './document-checks.ts';
import { PageFormatError } from './errors.ts';
import { KIND, classifyNumber } from './kinds.ts';
import type { ValueFit } from '../warehouse/value-fit.ts';
import type { PageDecoder, PageMeta } from './page-decoder.ts';
import { PlanHolder, type PlanRows } from './rows-plan.ts';

/** A cell value as the COPY text and its KIND bit, or null. */
function cellText(v: unknown): [string, number] | null {
  if (v === null || v === undefined) return null;
  if (typeof v === 'number') {
    const s = String(v);
    const b = Buffer.from(s, 'latin1');
    return [s, classifyNumber(b, 0, b.length) || KIND.numeric];
  }
  if (typeof v === 'boolean') return [v ? 'true' : 'false', KIND.boolean];
  if (typeof v === 'string') return [v, KIND.text];
  if (v instanceof Date) return [v.toISOString(), KIND.timestamp];
  if (typeof v === 'object') {
    const o = v as Record<string, unknown>;
    if (Array.isArray(o.richText)) return [(o.richText as { text: string }[]).map((r) => r.text).join(''), KIND.text];
    if ('result' in o) return cellText(o.result);
    if ('formula' in o || 'sharedFormula' in o) return null;
    if (typeof o.text === 'string') return [o.text, KIND.text];
    if (typeof o.error === 'string') return [o.error, KIND.text];
  }
  return [String(v), KIND.text];
}

/** The excel-xlsx_data rows decoder; see the file comment. */
export class XlsxRowsPageDecoder implements PageDecoder {
  readonly outputType = 'excel-xlsx_data' as const;
  readonly copyFormat = 'text' as const;
  readonly writesBinary = false;
  readonly format = 'text' as const;
  private readonly plan = new PlanHolder();
  columns: string[] | undefined = undefined;
  kinds: number[] = [];
  inspect = true;
  rows = 0;
  private readonly out = new CopyOutput();

  /** See {@link PageDecoder.planRows}: asked for `inspect` once page 1's header row told the columns (text only). */
  planRows(plan: PlanRows): void {
    this.plan.set(plan);
  }

  async *decodePage(body: AsyncIterable<Uint8Array>, page: number, meta: PageMeta = {}): AsyncGenerator<Buffer> {
    checkContentType('excel-xlsx_data', meta.contentType, page);
    // Loaded on first use: exceljs costs every worker ~10 MB of RSS, and only this load mode needs it.
    const { default: excel } = await import('exceljs');
    const input = Readable.from(body, { objectMode: false });
    const reader = new excel.stream.xlsx.WorkbookReader(input, {
      worksheets: 'emit',
      sharedStrings: 'cache',
      styles: 'cache',
      hyperlinks: 'ignore',
      entries: 'ignore',
    });
    let sheet = 0;
    let row = 0;
    try {
      for await (const worksheet of reader) {
        sheet++;
        for await (const r of worksheet as AsyncIterable<ExcelJS.Row>) {
          if (sheet !== 1) continue;
          const values = (r.values as unknown[]).slice(1);
          if (this.columns === undefined || row === 0) {
            this.header(values, page, r.number);
            row = 1;
            continue;
          }
          this.write(values, page, r.number);
          row++;
          const rows = this.out.take();
          if (rows !== undefined) yield rows;
        }
      }
    } catch (err) {
      if (err instanceof PageFormatError) throw err;
      throw new PageFormatError(`not a readable xlsx workbook: ${(err as Error).message}`, { page }, { cause: err });
    } finally {
      input.destroy();
    }
    if (sheet === 0) throw new PageFormatError('the xlsx workbook has no worksheet', { page });
    const rows = this.out.take();
    if (rows !== undefined) yield rows;
  }

  private header(values: unknown[], page: number, sheetRow: number): void {
    const names = values.map((v, k) => {
      const t = cellText(v);
      if (t === null || t[0] === '')
        throw new PageFormatError(`header row ${sheetRow}: column ${k + 1} has no name`, { page });
      return t[0];
    });
    if (this.columns === undefined) {
      this.columns = names;
      this.kinds = names.map(() => 0);
      const plan = this.plan.ask(names);
      this.inspect = plan.inspect;
      this.fit = plan.fit;
      return;
    }
    if (names.length !== this.columns.length || names.some((n, k) => n !== this.columns![k])) {
      throw new PageFormatError(
        `header ${JSON.stringify(names)} differs from page 1's ${JSON.stringify(this.columns)}`,
        { page },
      );
    }
  }

  /** The plan's value checks, when a column's type is known before COPY. */
  private fit: ValueFit | undefined;

  private write(values: unknown[], page: number, sheetRow: number): void {
    const ncols = this.columns!.length;
    if (values.length > ncols && values.slice(ncols).some((v) => v !== null && v !== undefined)) {
      throw new PageFormatError(`sheet row ${sheetRow} has a value beyond the ${ncols} columns of the header`, {
        page,
        row: sheetRow - 1,
      });
    }
    const out = this.out;
    for (let k = 0; k < ncols; k++) {
      out.reserve(3);
      if (k > 0) out.buf[out.pos++] = TAB;
      const t = cellText(values[k]);
      if (t === null) {
        out.writeNull();
        continue;
      }
      if (t[0].includes('\0'))
        throw new PageFormatError(`column "${this.columns![k]}": NUL character in a value`, {
          page,
          row: sheetRow - 1,
        });
      if (this.inspect) this.kinds[k]! |= t[1];
      const fit = this.fit;
      if (fit !== undefined && (fit.onText[k] !== 0 || fit.onNumber[k] !== 0)) {
        const bytes = Buffer.from(t[0], 'utf8');
        const number = t[1] === KIND.integer || t[1] === KIND.numeric;
        fit.check(k, bytes, 0, bytes.length, !number, page, sheetRow - 1);
      }
      writeEscapedString(out, t[0]);
    }
    out.reserve(1);
    out.buf[out.pos++] = LF;
    this.rows++;
  }
}
