/**
 * json / json_compact pages -> COPY rows (docs/report-export-service.md "Output page shapes", json): an object whose
 * member `data` is an array of row objects; other members are skipped. Column order is the key order of the first
 * row, read before any value is written so that the plan can choose binary format. Fast path: the bytes before each
 * value repeat those of the first row and are compared as one span. General path ({@link JsonPageDecoder.slowRow}):
 * keys by name in any order; a missing key is NULL, a key the first row did not have a PageFormatError.
 */
import type { OutputType } from '../vocabulary.ts';
import type { PageDecoder } from './page-decoder.ts';
import { ChunkCarry } from './carry.ts';
import { CopyOutput } from './copy-text.ts';
import { BACKSLASH, isWs, LETTER_N, LF, QUOTE, skipWs, startsWith, TAB } from './bytes.ts';
import { PageFormatError } from './errors.ts';
import { DEFAULT_MAX_VALUE_BYTES, jsonLastKey, valueTooLargeError, type DecoderLimits } from './value-limit.ts';
import { JsonValueScanner, NEED } from './json-values.ts';
import { BinaryFieldWriter, FIELD_OVERHEAD } from '../copy-binary/field-writer.ts';
import { PlanHolder, type PlanRows } from './rows-plan.ts';
import type { ValueFit } from '../warehouse/value-fit.ts';

const DATA = Buffer.from('data');

/** Where the scanner is in the page's top-level structure. */
const PHASE = {
  start: 0,
  keyOrEnd: 1,
  key: 2,
  dataValue: 3,
  otherValue: 4,
  rowOrEnd: 5,
  row: 6,
  afterRow: 7,
  afterMember: 8,
  end: 9,
} as const;
type Phase = (typeof PHASE)[keyof typeof PHASE];

/** Progress through one page; `offset` is the page offset of the scanned buffer's first byte. */
interface JsonPageState {
  page: number;
  phase: Phase;
  row: number;
  offset: number;
  dataSeen: boolean;
}

/** The json / json_compact decoder; see the file comment. */
export class JsonPageDecoder implements PageDecoder {
  readonly outputType: OutputType;
  readonly copyFormat = 'text' as const;
  readonly writesBinary = true;
  columns: string[] | undefined = undefined;
  kinds: number[] = [];
  inspect = true;
  rows = 0;
  format: 'text' | 'binary' = 'text';
  /** Per column: the first row's bytes from the end of the value before (or the row's `{`) to this value. */
  private runs: Buffer[] = [];
  private keyIndex = new Map<string, number>();
  private readonly out = new CopyOutput();
  private readonly sc: JsonValueScanner = new JsonValueScanner();
  /** General path: where each column's value landed in `scratch`, as [start, end) pairs (-1 = missing). */
  private spans = new Int32Array(0);
  private scratch = Buffer.alloc(0);
  private readonly maxValueBytes: number;
  private binary: BinaryFieldWriter | undefined;
  /** The plan's value checks (rows-plan.ts), when a column's type is known before COPY. */
  private fit: ValueFit | undefined;
  private readonly plan = new PlanHolder();

  constructor(outputType: 'json' | 'json_compact', limits: DecoderLimits = { maxValueBytes: DEFAULT_MAX_VALUE_BYTES }) {
    this.outputType = outputType;
    this.maxValueBytes = limits.maxValueBytes;
  }

  planRows(plan: PlanRows): void {
    this.plan.set(plan);
  }

  async *decodePage(body: AsyncIterable<Uint8Array>, page: number): AsyncGenerator<Buffer> {
    const st: JsonPageState = { page, phase: PHASE.start, row: 0, offset: 0, dataSeen: false };
    const carry = new ChunkCarry(this.maxValueBytes, (held, bytes) => {
      throw valueTooLargeError({ page, row: st.row + 1, column: jsonLastKey(held), bytes, limit: this.maxValueBytes });
    });
    for await (const chunk of body) {
      for (let buf = carry.pushStitched(chunk); buf !== undefined;) {
        const consumed = this.parse(buf, st);
        st.offset += consumed;
        buf = carry.next(buf, consumed);
      }
      const rows = this.out.takeFull();
      if (rows !== undefined) yield rows;
    }
    const rest = carry.finish();
    if (rest !== undefined) {
      const before = st.offset;
      const consumed = this.parse(rest, st);
      st.offset += consumed;
      if (consumed < rest.length) {
        this.sc.row = st.phase === PHASE.row || st.phase === PHASE.rowOrEnd ? st.row + 1 : undefined;
        this.sc.base = before;
        this.sc.fail('page ends inside a value', consumed);
      }
    }
    const rows = this.out.take();
    if (rows !== undefined) yield rows;
    if (st.phase !== PHASE.end) {
      throw new PageFormatError('JSON: page ends before the top-level object is complete', { page, offset: st.offset });
    }
  }

  /** Scans b as far as whole units go; returns the index after the last whole unit. */
  private parse(b: Buffer, st: JsonPageState): number {
    const n = b.length;
    const sc = this.sc;
    const out = this.out;
    out.reserve(this.chunkRoom(n));
    sc.out = out.buf;
    sc.op = out.pos;
    sc.page = st.page;
    sc.base = st.offset;
    sc.row = undefined;
    sc.inspect = this.inspect;
    let i = 0;
    let consumed: number;
    try {
      for (;;) {
        i = skipWs(b, i, n);
        consumed = i;
        if (i >= n) break;
        const c = b[i]!;
        const phase = st.phase;
        if (phase === PHASE.row || phase === PHASE.rowOrEnd) {
          if (phase === PHASE.rowOrEnd && c === 0x5d) {
            st.phase = PHASE.afterMember;
            i++;
            continue;
          }
          if (c !== 0x7b) sc.fail('a row must be an object', i);
          sc.row = st.row + 1;
          if (this.columns === undefined) {
            // Keys first; the plan may change the format and the room a row needs, then the row is read again.
            if (this.firstRowKeys(b, i, n) === NEED) break;
            this.applyPlan(this.columns!);
            out.pos = sc.op;
            out.reserve(this.chunkRoom(n - i));
            sc.out = out.buf;
            sc.op = out.pos;
            sc.inspect = this.inspect;
          }
          const mark = sc.op;
          const e = this.row(b, i, n, mark);
          sc.row = undefined;
          if (e === NEED) {
            sc.op = mark;
            break;
          }
          st.row++;
          this.rows++;
          st.phase = PHASE.afterRow;
          i = e;
        } else if (phase === PHASE.afterRow) {
          if (c === 0x2c) st.phase = PHASE.row;
          else if (c === 0x5d) st.phase = PHASE.afterMember;
          else sc.fail("expected ',' or ']' after a row", i);
          i++;
        } else if (phase === PHASE.start) {
          if (c !== 0x7b) sc.fail('a page must be an object {"data":[...]}', i);
          st.phase = PHASE.keyOrEnd;
          i++;
        } else if (phase === PHASE.keyOrEnd || phase === PHASE.key) {
          if (c === 0x7d && phase === PHASE.keyOrEnd) {
            st.phase = PHASE.end;
            i++;
            continue;
          }
          if (c !== QUOTE) sc.fail('expected a member name', i);
          const ke = sc.stringEnd(b, i + 1, n);
          if (ke === NEED) break;
          const colon = skipWs(b, ke, n);
          if (colon >= n) break;
          if (b[colon] !== 0x3a) sc.fail("expected ':'", colon);
          const isData = ke - i - 2 === DATA.length && startsWith(b, i + 1, DATA);
          if (isData && st.dataSeen) sc.fail('member data appears twice', i);
          st.dataSeen ||= isData;
          st.phase = isData ? PHASE.dataValue : PHASE.otherValue;
          i = colon + 1;
        } else if (phase === PHASE.dataValue) {
          if (c !== 0x5b) sc.fail('member data must be an array of rows', i);
          st.phase = PHASE.rowOrEnd;
          i++;
        } else if (phase === PHASE.otherValue) {
          const e = sc.skip(b, i, n, 0);
          if (e === NEED) break;
          st.phase = PHASE.afterMember;
          i = e;
        } else if (phase === PHASE.afterMember) {
          if (c === 0x2c) st.phase = PHASE.key;
          else if (c === 0x7d) st.phase = PHASE.end;
          else sc.fail("expected ',' or '}'", i);
          i++;
        } else {
          sc.fail('data after the end of the top-level object', i);
        }
      }
    } finally {
      out.pos = sc.op;
    }
    return consumed;
  }

  /** Output bytes `bytes` of input may need: twice (COPY escapes), in binary three times (length words, int8). */
  private chunkRoom(bytes: number): number {
    return (this.binary ? 3 : 2) * bytes + FIELD_OVERHEAD;
  }

  /** The key whose content is b[s..e - 1) (e: after the closing quote), unescaped. */
  private keyName(b: Buffer, s: number, e: number): string {
    for (let k = s; k < e - 1; k++) if (b[k] === BACKSLASH) return JSON.parse(b.toString('utf8', s - 1, e)) as string;
    return b.toString('utf8', s, e - 1);
  }

  /** Index of the value after `:` (whitespace skipped), from the end of a key; or NEED. */
  private afterKey(b: Buffer, ke: number, n: number): number {
    let i = skipWs(b, ke, n);
    if (i >= n) return NEED;
    if (b[i] !== 0x3a) this.sc.fail("expected ':' after a column name", i);
    i = skipWs(b, i + 1, n);
    return i >= n ? NEED : i;
  }

  /** After a value: the index of the next key's quote, -2 - (index after `}`) at the row's end, or NEED. */
  private afterValue(b: Buffer, i: number, n: number): number {
    i = skipWs(b, i, n);
    if (i >= n) return NEED;
    const c = b[i];
    if (c === 0x2c) {
      i = skipWs(b, i + 1, n);
      if (i >= n) return NEED;
      if (b[i] !== QUOTE) this.sc.fail('expected a column name', i);
      return i;
    }
    if (c === 0x7d) return -2 - (i + 1);
    this.sc.fail("expected ',' or '}' in a row", i);
  }

  /** The first row's keys become the columns and its spans before values the fast path's; NEED or the row's end. */
  private firstRowKeys(b: Buffer, i: number, n: number): number {
    const sc = this.sc;
    const names: string[] = [];
    const runs: Buffer[] = [];
    let at = i + 1;
    i = skipWs(b, at, n);
    if (i >= n) return NEED;
    if (b[i] === 0x7d) sc.fail('the first row has no columns', i);
    if (b[i] !== QUOTE) sc.fail('expected a column name', i);
    for (;;) {
      const ke = sc.stringEnd(b, i + 1, n);
      if (ke === NEED) return NEED;
      const name = this.keyName(b, i + 1, ke);
      if (names.includes(name)) sc.fail(`column ${JSON.stringify(name)} appears twice in the first row`, i);
      names.push(name);
      const v = this.afterKey(b, ke, n);
      if (v === NEED) return NEED;
      runs.push(Buffer.from(b.subarray(at, v)));
      at = sc.skip(b, v, n, 0);
      if (at === NEED) return NEED;
      const next = this.afterValue(b, at, n);
      if (next === NEED) return NEED;
      if (next <= -2) {
        this.columns = names;
        this.runs = runs;
        this.kinds = names.map(() => 0);
        this.keyIndex = new Map(names.map((name, k) => [name, k]));
        return -2 - next;
      }
      i = next;
    }
  }

  private applyPlan(columns: readonly string[]): void {
    const plan = this.plan.ask(columns);
    this.inspect = plan.inspect;
    this.fit = plan.fit;
    if (plan.binary) {
      this.binary = this.sc.binary = new BinaryFieldWriter(plan.binary.encodings, plan.binary.timezone);
      this.format = 'binary';
      this.inspect = false;
    }
  }

  /** A row, fast path (see the file comment); any other shape goes to {@link slowRow}. */
  private row(b: Buffer, rowStart: number, n: number, rowOp: number): number {
    const sc = this.sc;
    const runs = this.runs;
    const ncols = runs.length;
    const kinds = this.kinds;
    const inspect = this.inspect;
    const binary = this.binary !== undefined;
    const fit = this.fit;
    if (binary) sc.op = this.binary!.rowStart(sc.out, sc.op);
    let at = rowStart + 1;
    for (let col = 0; col < ncols; col++) {
      const run = runs[col]!;
      const v = at + run.length;
      // More whitespace than the first row had also goes the general way: the span must end at the value.
      if (v >= n || isWs(b[v]!) || !startsWith(b, at, run)) return this.slowRow(b, rowStart, n, rowOp);
      let e: number;
      if (binary) e = sc.valueBinary(b, v, n, col);
      else {
        if (col > 0) sc.out[sc.op++] = TAB;
        e = sc.value(b, v, n);
      }
      if (e === NEED) return NEED;
      if (inspect) kinds[col]! |= sc.kind;
      if (fit !== undefined && (b[v] === QUOTE ? fit.onText[col] : fit.onNumber[col]) !== 0)
        this.checkValue(fit, b, v, e, col);
      at = e;
    }
    const i = skipWs(b, at, n);
    if (i >= n) return NEED;
    if (b[i] !== 0x7d) return this.slowRow(b, rowStart, n, rowOp);
    if (!binary) sc.out[sc.op++] = LF;
    return i + 1;
  }

  /**
   * Checks the JSON value b[v..e) of column `col` (value-fit.ts): a string's content (unescaped) as text, a number
   * as a number; null needs nothing.
   * @throws ValueDoesNotFitError when the column would change it
   */
  private checkValue(fit: ValueFit, b: Buffer, v: number, e: number, col: number): void {
    const sc = this.sc;
    const row = sc.row ?? 0;
    if (b[v] === QUOTE) {
      if (fit.onText[col] === 0) return;
      let k = v + 1;
      while (k < e - 1 && b[k] !== BACKSLASH) k++;
      if (k === e - 1) return fit.check(col, b, v + 1, e - 1, true, sc.page, row);
      // Raw control bytes (which JSON.parse refuses and the text path passes on) as the escapes they stand for.
      let json = '';
      for (const ch of b.toString('utf8', v, e))
        json += ch < ' ' ? `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}` : ch;
      const t = Buffer.from(JSON.parse(json) as string, 'utf8');
      return fit.check(col, t, 0, t.length, true, sc.page, row);
    }
    if (b[v] !== 0x6e && fit.onNumber[col] !== 0) fit.check(col, b, v, e, false, sc.page, row);
  }

  /** General path: values go to `scratch` by key name, then out in column order, NULL for a missing key. */
  private slowRow(b: Buffer, rowStart: number, n: number, rowOp: number): number {
    const sc = this.sc;
    const ncols = this.runs.length;
    const rowOut = sc.out;
    const binary = this.binary !== undefined;
    const room = 3 * (n - rowStart) + FIELD_OVERHEAD;
    if (this.scratch.length < room) this.scratch = Buffer.allocUnsafe(room);
    if (this.spans.length < 2 * ncols) this.spans = new Int32Array(2 * ncols);
    const spans = this.spans.fill(-1, 0, 2 * ncols);
    sc.out = this.scratch;
    sc.op = 0;
    try {
      let i = skipWs(b, rowStart + 1, n);
      if (i >= n) return NEED;
      if (b[i] !== 0x7d) {
        for (;;) {
          const ke = sc.stringEnd(b, i + 1, n);
          if (ke === NEED) return NEED;
          const name = this.keyName(b, i + 1, ke);
          const col = this.keyIndex.get(name);
          if (col === undefined)
            return sc.fail(`column ${JSON.stringify(name)} is not among the first row's columns`, i);
          if (spans[2 * col]! >= 0) sc.fail(`column ${JSON.stringify(name)} appears twice in a row`, i);
          const v = this.afterKey(b, ke, n);
          if (v === NEED) return NEED;
          spans[2 * col] = sc.op;
          const e = binary ? sc.valueBinary(b, v, n, col) : sc.value(b, v, n);
          if (e === NEED) return NEED;
          spans[2 * col + 1] = sc.op;
          if (this.inspect) this.kinds[col]! |= sc.kind;
          if (this.fit !== undefined) this.checkValue(this.fit, b, v, e, col);
          const next = this.afterValue(b, e, n);
          if (next === NEED) return NEED;
          if (next <= -2) {
            i = -2 - next;
            break;
          }
          i = next;
        }
      } else i++;
      // Room for the row's values, a tab and \N per column, and again for the rest of the chunk, whose room parse()
      // reserved and these NULLs (written from no input) may take.
      const out = this.out;
      out.pos = rowOp;
      out.reserve(sc.op + 4 * ncols + 2 + this.chunkRoom(n - i));
      const o = out.buf;
      let op = out.pos;
      const scratch = this.scratch;
      if (binary) {
        o[op++] = ncols >>> 8;
        o[op++] = ncols;
      }
      for (let col = 0; col < ncols; col++) {
        if (col > 0 && !binary) o[op++] = TAB;
        const s = spans[2 * col]!;
        if (s < 0 && binary) {
          o[op] = o[op + 1] = o[op + 2] = o[op + 3] = 0xff;
          op += 4;
        } else if (s < 0) {
          o[op++] = BACKSLASH;
          o[op++] = LETTER_N;
        } else {
          scratch.copy(o, op, s, spans[2 * col + 1]!);
          op += spans[2 * col + 1]! - s;
        }
      }
      if (!binary) o[op++] = LF;
      sc.out = o;
      sc.op = op;
      return i;
    } finally {
      if (sc.out === this.scratch) {
        sc.out = rowOut;
        sc.op = rowOp;
      }
    }
  }
}
