/**
 * Document pages (docs/report-export-service.md "Output types": pdf, excel-xlsx_data, excel-xlsx_matrix, excel-xlsx,
 * word-docx; their page layout is not shown): real files made with well-kept libraries — pdfkit (a PDF that viewers and
 * pdftoppm render), exceljs (xlsx workbooks), docx (a Word package) — one file per output page holding that page's
 * rows.
 * - pdf: a title line, then one text line per row (values separated by " | "); `padBytes` adds an attachment
 *   stream of that many deterministic bytes (for benchmarks of large pages).
 * - excel-xlsx_data: sheet "Daten": the header row (column names), then one row per report row: integers that fit
 *   a double exactly and decimals as numbers (xlsx stores doubles), larger integers as text, timestamps as dates
 *   (UTC), text as text, NULL as an empty cell.
 * - excel-xlsx_matrix: sheet "Matrix": the same values transposed (a column per row, the column names down column A).
 * - excel-xlsx: sheet "Bericht": a title row, a bold header row, the rows, a total row.
 * - word-docx: a heading and a table of the rows.
 * Rendering is asynchronous and gives the whole file: the page handler keeps it per job and page, so a resumed
 * download gets the same bytes.
 */
import PDFDocument from 'pdfkit';
import ExcelJS from 'exceljs';
import { Document, HeadingLevel, Packer, Paragraph, Table, TableCell, TableRow } from 'docx';
import type { DocumentOutputType } from '../vocabulary.ts';
import type { ReportData } from './catalogue.ts';
import type { RenderContext } from './render-context.ts';

/** A fixed date for the documents' metadata, so that the same rows give a document of the same content. */
const FIXED_DATE = new Date(Date.UTC(2026, 0, 1));

/** The value of a cell as displayed text. */
function display(data: ReportData, r: number, c: number, ctx: RenderContext): string {
  const v = data.cells(r)[c];
  if (v === null || v === undefined) return '';
  return typeof v === 'number' ? ctx.zone.iso(v) : v;
}

/** The value of a cell as an xlsx cell value (see the file comment). */
export function xlsxValue(data: ReportData, r: number, c: number): string | number | Date | null {
  const v = data.cells(r)[c];
  if (v === null || v === undefined) return null;
  if (typeof v === 'number') return new Date(v);
  const kind = data.columns[c]!.kind;
  if (kind === 'integer') return Number.isSafeInteger(Number(v)) ? Number(v) : v;
  if (kind === 'decimal') return Number(v);
  return v;
}

/** Deterministic filler bytes (xorshift32), for padded benchmark PDFs. */
function filler(bytes: number, seed: number): Buffer {
  const buf = Buffer.allocUnsafe(bytes);
  let x = seed | 1;
  let i = 0;
  for (; i + 4 <= bytes; i += 4) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    buf.writeInt32LE(x | 0, i);
  }
  for (; i < bytes; i++) buf[i] = i & 0xff;
  return buf;
}

async function renderPdf(
  data: ReportData,
  from: number,
  to: number,
  ctx: RenderContext,
  padBytes: number,
): Promise<Buffer> {
  // A padded benchmark PDF is not compressed: deflating hundreds of MB of filler would only cost time.
  const doc = new PDFDocument({
    size: 'A4',
    margin: 40,
    compress: padBytes === 0,
    info: { Title: ctx.report ?? 'Report', CreationDate: FIXED_DATE, ModDate: FIXED_DATE },
  });
  const parts: Buffer[] = [];
  doc.on('data', (b: Buffer) => parts.push(b));
  const ended = new Promise<void>((resolve, reject) => {
    doc.on('end', resolve);
    doc.on('error', reject);
  });
  doc.fontSize(14).text(`${ctx.report ?? 'Report'} - Seite ${ctx.page}`);
  doc.fontSize(8).text(data.columns.map((c) => c.name).join(' | '));
  for (let r = from; r < to; r++) {
    doc.text(data.columns.map((_, c) => display(data, r, c, ctx).replace(/[\r\n\t]+/g, ' ')).join(' | '));
  }
  if (padBytes > 0) {
    const pad = doc.ref({ Type: 'EmbeddedFile', Length: padBytes });
    pad.end(filler(padBytes, ctx.page));
  }
  doc.end();
  await ended;
  return Buffer.concat(parts);
}

async function renderXlsx(
  type: 'excel-xlsx_data' | 'excel-xlsx_matrix' | 'excel-xlsx',
  data: ReportData,
  from: number,
  to: number,
  ctx: RenderContext,
): Promise<Buffer> {
  const wb = new ExcelJS.Workbook();
  wb.creator = 'report-etl simulator';
  wb.created = FIXED_DATE;
  wb.modified = FIXED_DATE;
  const names = data.columns.map((c) => c.name);
  if (type === 'excel-xlsx_data') {
    const ws = wb.addWorksheet('Daten');
    ws.addRow(names);
    for (let r = from; r < to; r++) ws.addRow(names.map((_, c) => xlsxValue(data, r, c)));
  } else if (type === 'excel-xlsx_matrix') {
    const ws = wb.addWorksheet('Matrix');
    names.forEach((name, c) => {
      const row: (string | number | Date | null)[] = [name];
      for (let r = from; r < to; r++) row.push(xlsxValue(data, r, c));
      ws.addRow(row);
    });
  } else {
    const ws = wb.addWorksheet('Bericht');
    ws.addRow([`${ctx.report ?? 'Report'} - Seite ${ctx.page}`]).font = { bold: true, size: 14 };
    ws.addRow(names).font = { bold: true };
    for (let r = from; r < to; r++) ws.addRow(names.map((_, c) => xlsxValue(data, r, c)));
    ws.addRow(['Gesamt', to - from]).font = { italic: true };
  }
  return Buffer.from(await wb.xlsx.writeBuffer());
}

async function renderDocx(data: ReportData, from: number, to: number, ctx: RenderContext): Promise<Buffer> {
  const cell = (text: string): TableCell => new TableCell({ children: [new Paragraph(text)] });
  const rows = [new TableRow({ children: data.columns.map((c) => cell(c.name)) })];
  for (let r = from; r < to; r++)
    rows.push(new TableRow({ children: data.columns.map((_, c) => cell(display(data, r, c, ctx))) }));
  const doc = new Document({
    creator: 'report-etl simulator',
    title: ctx.report ?? 'Report',
    sections: [
      {
        children: [
          new Paragraph({ text: `${ctx.report ?? 'Report'} - Seite ${ctx.page}`, heading: HeadingLevel.HEADING_1 }),
          new Table({ rows }),
        ],
      },
    ],
  });
  return Packer.toBuffer(doc);
}

/**
 * Renders rows [from, to) as one document of `type`.
 * @param padBytes pdf only: bytes of filler attachment (0: none)
 */
export async function renderDocument(
  type: DocumentOutputType,
  data: ReportData,
  from: number,
  to: number,
  ctx: RenderContext,
  padBytes = 0,
): Promise<Buffer> {
  switch (type) {
    case 'pdf':
      return renderPdf(data, from, to, ctx, padBytes);
    case 'word-docx':
      return renderDocx(data, from, to, ctx);
    default:
      return renderXlsx(type, data, from, to, ctx);
  }
}
