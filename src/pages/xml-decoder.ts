/**
 * xml_query pages -> COPY rows (docs/report-export-service.md "Output page shapes", xml_query): `result`, a `row` per
 * row, in it a `field` per column with attribute `name`. The fast path (xml-fast.ts) takes the shape servers write;
 * from the first thing it does not know to the end of the page saxes parses instead, with the same rules. Columns
 * follow the first row; a missing field is NULL, an unknown one a PageFormatError. Empty text is NULL: XML cannot
 * tell an empty string from a null.
 */
import { SaxesParser, type SaxesTagPlain } from 'saxes';
import { StringDecoder } from 'node:string_decoder';
import type { PageDecoder } from './page-decoder.ts';
import { CopyOutput } from './copy-text.ts';
import { LF, TAB } from './bytes.ts';
import { writeEscapedString } from './copy-text.ts';
import { PageFormatError } from './errors.ts';
import { classifyXmlValue } from './kinds.ts';
import { ChunkCarry } from './carry.ts';
import { DEFAULT_MAX_VALUE_BYTES, valueTooLargeError, xmlLastFieldName, type DecoderLimits } from './value-limit.ts';
import { checkXmlValue, XmlFastScanner, type XmlPhase } from './xml-fast.ts';
import type { ValueFit } from '../warehouse/value-fit.ts';
import { PlanHolder, type PlanRows } from './rows-plan.ts';
import { BinaryFieldWriter, FIELD_OVERHEAD, REFUSED } from '../copy-binary/field-writer.ts';
import { BinaryValueUnsupported } from '../copy-binary/format.ts';

/** Where the parser is between tags. */
type Place = 'document' | 'result' | 'row' | 'field' | 'after';

/** What saxes is fed before the rest of a page, so that it is in the fast scanner's place. */
const SAXES_PREFIX: Record<XmlPhase, Buffer | undefined> = {
  prolog: undefined,
  rows: Buffer.from('<result>'),
  after: Buffer.from('<result></result>'),
};

async function* resume(
  prefix: Buffer | undefined,
  head: Buffer,
  rest: AsyncIterator<Uint8Array>,
): AsyncGenerator<Uint8Array> {
  if (prefix) yield prefix;
  if (head.length > 0) yield head;
  for (let r = await rest.next(); !r.done; r = await rest.next()) yield r.value;
}

/** The xml_query decoder; see the file comment. */
export class XmlQueryPageDecoder implements PageDecoder {
  readonly outputType = 'xml_query' as const;
  readonly copyFormat = 'text' as const;
  readonly writesBinary = true;
  format: 'text' | 'binary' = 'text';
  columns: string[] | undefined = undefined;
  kinds: number[] = [];
  inspect = true;
  rows = 0;
  private readonly plan = new PlanHolder();
  private index = new Map<string, number>();
  private readonly out = new CopyOutput();
  private readonly fast = new XmlFastScanner(this.out, this);
  private readonly maxValueBytes: number;

  constructor(limits: DecoderLimits = { maxValueBytes: DEFAULT_MAX_VALUE_BYTES }) {
    this.maxValueBytes = limits.maxValueBytes;
  }
  /** See {@link PageDecoder.planRows}: asked for `inspect` once the columns are known (this type writes text). */
  planRows(plan: PlanRows): void {
    this.plan.set(plan);
  }

  /**
   * The first row told the columns (the fast scanner's or saxes'): the plan says whether to inspect the values and
   * whether to write binary rows (then written by the fast scanner and {@link writeRow} alike).
   */
  learnColumns(names: string[]): void {
    this.columns = names;
    this.kinds = names.map(() => 0);
    const plan = this.plan.ask(names);
    this.inspect = plan.inspect;
    this.fit = this.fast.fit = plan.fit;
    if (plan.binary) {
      this.binary = this.fast.binary = new BinaryFieldWriter(plan.binary.encodings, plan.binary.timezone);
      this.format = 'binary';
      this.inspect = false;
    }
  }

  /** Set when the plan chose binary format. */
  private binary: BinaryFieldWriter | undefined;
  /** The plan's value checks, when a column's type is known before COPY. */
  private fit: ValueFit | undefined;

  /** Pages (or page ends) saxes parsed since the decoder was made: for tests and diagnostics. */
  saxesPages = 0;

  async *decodePage(body: AsyncIterable<Uint8Array>, page: number): AsyncGenerator<Buffer> {
    const fast = this.fast;
    fast.startPage(page);
    const chunks = body[Symbol.asyncIterator]();
    let row = 0;
    const carry = new ChunkCarry(this.maxValueBytes, (held, bytes) => {
      throw valueTooLargeError({
        page,
        row: row + 1,
        column: xmlLastFieldName(held),
        bytes,
        limit: this.maxValueBytes,
      });
    });
    let rest: Buffer | undefined;
    try {
      chunks: for (;;) {
        const next = await chunks.next();
        if (next.done) {
          const buf = carry.finish();
          if (buf !== undefined) {
            fast.rowBase = row;
            const r = fast.scan(buf);
            row += r.rows;
            this.rows += r.rows;
            if (r.fallback || r.consumed < buf.length || fast.phase !== 'after') rest = buf.subarray(r.consumed);
          }
          break;
        }
        // A row cut off by the last chunk is completed from a small copy of this one's start; the rest is scanned in
        // place (carry.ts pushStitched).
        for (let buf = carry.pushStitched(next.value); buf !== undefined;) {
          fast.rowBase = row;
          const r = fast.scan(buf);
          row += r.rows;
          this.rows += r.rows;
          const taken = this.out.takeFull();
          if (taken !== undefined) yield taken;
          if (r.fallback) {
            rest = carry.remainder(buf, r.consumed);
            break chunks;
          }
          buf = carry.next(buf, r.consumed);
        }
      }
      const taken = this.out.take();
      if (taken !== undefined) yield taken;
      if (rest === undefined && fast.phase === 'after') return;
      // Not the fast shape (or a broken page): saxes from the last row boundary on, behind the open elements.
      this.index = new Map((this.columns ?? []).map((n, k) => [n, k]));
      this.saxesPages++;
      yield* this.saxesPage(resume(SAXES_PREFIX[fast.phase], rest ?? Buffer.alloc(0), chunks), page, row);
    } finally {
      // Stopped early (an error downstream): let the body release its connection.
      await chunks.return?.();
    }
  }

  /** Parses (the rest of) a page with saxes; `row` = rows of the page already done. */
  private async *saxesPage(body: AsyncIterable<Uint8Array>, page: number, startRow: number): AsyncGenerator<Buffer> {
    const out = this.out;
    let place: Place = 'document';
    let row = startRow;
    let column = -1;
    let text = '';
    let sinceRow = 0;
    let values: (string | undefined)[] = [];
    let firstNames: string[] | undefined;
    const parser = new SaxesParser({ xmlns: false, position: true });
    const failure = (what: string): PageFormatError =>
      new PageFormatError(`XML: ${what} (line ${parser.line}, column ${parser.column})`, {
        page,
        row: place === 'row' || place === 'field' ? row + 1 : undefined,
      });
    parser.on('error', (err) => {
      throw failure(err.message);
    });
    parser.on('opentag', (tag: SaxesTagPlain) => {
      if (place === 'row' && tag.name === 'field') {
        const name = tag.attributes.name;
        if (typeof name !== 'string') throw failure('a field element without a name attribute');
        if (firstNames !== undefined) {
          if (firstNames.includes(name)) throw failure(`field ${JSON.stringify(name)} appears twice in the first row`);
          firstNames.push(name);
          column = firstNames.length - 1;
        } else {
          const col = this.index.get(name);
          if (col === undefined) throw failure(`field ${JSON.stringify(name)} is not among the first row's columns`);
          if (values[col] !== undefined) throw failure(`field ${JSON.stringify(name)} appears twice in a row`);
          column = col;
        }
        text = '';
        place = 'field';
      } else if (place === 'result' && tag.name === 'row') {
        place = 'row';
        if (this.columns === undefined) firstNames = [];
        values = this.columns === undefined ? [] : new Array<string | undefined>(this.columns.length);
      } else if (place === 'document' && tag.name === 'result') {
        place = 'result';
      } else {
        throw failure(`unexpected element <${tag.name}> in ${place === 'document' ? 'the document' : `<${place}>`}`);
      }
    });
    const onText = (t: string): void => {
      if (place === 'field') text += t;
      else if (t.trim() !== '') throw failure(`text outside a field: ${JSON.stringify(t.slice(0, 40))}`);
    };
    parser.on('text', onText);
    parser.on('cdata', onText);
    parser.on('closetag', (tag: SaxesTagPlain) => {
      if (place === 'field') {
        if (text.includes('\0')) throw failure('NUL character in a value: PostgreSQL text cannot hold it');
        values[column] = text;
        place = 'row';
      } else if (place === 'row') {
        if (firstNames !== undefined) {
          if (firstNames.length === 0) throw failure('the first row has no fields');
          this.learnColumns(firstNames);
          this.index = new Map(firstNames.map((n, k) => [n, k]));
          firstNames = undefined;
        }
        this.writeRow(values, page, row + 1);
        sinceRow = 0;
        row++;
        this.rows++;
        place = 'result';
      } else if (place === 'result') {
        place = 'after';
      } else {
        throw failure(`unexpected closing tag </${tag.name}>`);
      }
    });

    const decoder = new StringDecoder('utf8');
    let first = true;
    for await (const chunk of body) {
      // saxes holds a text node whole until the next tag: bound what a row may take, as the fast path does.
      sinceRow += chunk.length;
      if (sinceRow > this.maxValueBytes)
        throw valueTooLargeError({
          page,
          row: row + 1,
          column: (place as Place) === 'field' ? (this.columns?.[column] ?? firstNames?.[column]) : undefined,
          bytes: sinceRow,
          limit: this.maxValueBytes,
        });
      let s = decoder.write(chunk as Buffer);
      if (first && s.length > 0) {
        if (s.charCodeAt(0) === 0xfeff) s = s.slice(1);
        first = false;
      }
      parser.write(s);
      const rows = out.take();
      if (rows !== undefined) yield rows;
    }
    parser.write(decoder.end());
    parser.close();
    if ((place as Place) !== 'after')
      throw failure(place === 'document' ? 'no <result> element' : 'the document ends inside an element');
    const rows = out.take();
    if (rows !== undefined) yield rows;
  }

  /**
   * Writes one row's values (saxes') in column order; empty and missing -> NULL.
   * @throws BinaryValueUnsupported in binary format, for a value its column's encoder does not take
   */
  private writeRow(values: (string | undefined)[], page: number, row: number): void {
    const out = this.out;
    const ncols = this.columns!.length;
    const binary = this.binary;
    if (binary) {
      out.reserve(2 + 4 * ncols);
      out.pos = binary.rowStart(out.buf, out.pos);
    }
    const inspect = this.inspect;
    const fit = this.fit;
    for (let col = 0; col < ncols; col++) {
      const v = values[col];
      if (fit !== undefined && v !== undefined && v !== '' && (fit.onText[col] !== 0 || fit.onNumber[col] !== 0)) {
        const bytes = Buffer.from(v, 'utf8');
        checkXmlValue(fit, col, bytes, 0, bytes.length, page, row);
      }
      if (binary) {
        if (v === undefined || v === '') {
          out.reserve(4);
          out.pos = binary.writeNull(out.buf, out.pos);
          continue;
        }
        const bytes = Buffer.from(v, 'utf8');
        out.reserve(bytes.length + FIELD_OVERHEAD);
        const p = binary.write(out.buf, out.pos, col, bytes, 0, bytes.length);
        if (p === REFUSED) throw new BinaryValueUnsupported(col, page, row);
        out.pos = p;
        continue;
      }
      out.reserve(3);
      if (col > 0) out.buf[out.pos++] = TAB;
      if (v === undefined || v === '') {
        out.writeNull();
        continue;
      }
      // writeEscapedString may move the pending bytes to a new slab: the value's start is kept relative to `start`.
      const mark = out.mark();
      writeEscapedString(out, v);
      if (inspect) this.kinds[col]! |= classifyXmlValue(out.buf, out.start + mark, out.pos);
    }
    if (!binary) {
      out.reserve(1);
      out.buf[out.pos++] = LF;
    }
  }
}
