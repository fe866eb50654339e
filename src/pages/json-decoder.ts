/**
 * json / json_compact pages -> COPY text format (docs/report-export-service.md "Output page shapes", json): an object with one member
 * `data`, an array of row objects keyed by column name. A hand-made streaming scanner: a row that a chunk
 * cut off is carried to the next chunk (see ChunkCarry), so memory stays flat whatever the page size, and
 * values go byte by byte into a reusable output buffer (see JsonValueScanner) with no string per value.
 * Column order is the key order of the first row; later rows are matched by key: fast path when the key
 * bytes equal the first row's key at the same position, else by name through a Map. A missing key is NULL;
 * a key the first row did not have is a PageFormatError. Other top-level members than `data` are skipped.
 * The first row's keys are read before any value is written, so that the reader may choose COPY binary format
 * (when the plan chooses it, pages/rows-plan.ts), in which each value is written by its column's encoder.
 */
import type { OutputType } from '../vocabulary.ts';
import type { PageDecoder } from './page-decoder.ts';
import { ChunkCarry } from './carry.ts';
import { BACKSLASH, CopyOutput, LETTER_N, LF, TAB } from './copy-text.ts';
import { PageFormatError } from './errors.ts';
import { DEFAULT_MAX_VALUE_BYTES, jsonLastKey, valueTooLargeError, type DecoderLimits } from './value-limit.ts';
import { JsonValueScanner, NEED, skipWs } from './json-values.ts';
import { BinaryFieldWriter, FIELD_OVERHEAD } from '../copy-binary/field-writer.ts';
import { PlanHolder, scanAcrossPlan, type PlanRows } from './rows-plan.ts';
import { ByteRun, viewOf } from './byte-run.ts';

const QUOTE = 0x22;
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

/** Progress through one page. */
interface JsonPageState {
  page: number;
  phase: Phase;
  /** Rows completed in this page. */
  row: number;
  /** Page offset of the first byte of the buffer being scanned. */
  offset: number;
  dataSeen: boolean;
}

function isWs(c: number): boolean {
  return c === 0x20 || c === LF || c === 0x0d || c === TAB;
}

function sameBytes(b: Uint8Array, s: number, e: number, key: Uint8Array): boolean {
  const len = key.length;
  if (e - s !== len) return false;
  for (let k = 0; k < len; k++) if (b[s + k] !== key[k]) return false;
  return true;
}

/** The json / json_compact decoder; see the file comment. Made by makePageDecoder('json' | 'json_compact'). */
export class JsonPageDecoder implements PageDecoder {
  readonly outputType: OutputType;
  readonly copyFormat = 'text' as const;
  readonly writesBinary = true;
  columns: string[] | undefined = undefined;
  kinds: number[] = [];
  inspect = true;
  rows = 0;
  format: 'text' | 'binary' = 'text';
  /** The first row's keys as raw bytes between the quotes, for the fast path. */
  private keys: Buffer[] = [];
  /** Per column: the bytes from the end of the value before (or the row's '{') to this column's value, once seen. */
  private before: (ByteRun | undefined)[] = [];
  /** A DataView over the bytes being parsed (parse()). */
  private view = viewOf(Buffer.alloc(8));
  private keyIndex = new Map<string, number>();
  private readonly out = new CopyOutput();
  private readonly sc: JsonValueScanner = new JsonValueScanner();
  /** Slow path: where each column's value landed in `scratch`, as [start, end) pairs (-1 = missing). */
  private spans = new Int32Array(0);
  private scratch = Buffer.alloc(0);

  private readonly maxValueBytes: number;
  /** Set when the plan chose binary format: rows go out in COPY binary format. */
  private binary: BinaryFieldWriter | undefined;
  private readonly plan = new PlanHolder();
  /** The first row's keys were just read: the parse stopped there, so that the rows follow the plan. */
  private justLearned = false;

  constructor(outputType: 'json' | 'json_compact', limits: DecoderLimits = { maxValueBytes: DEFAULT_MAX_VALUE_BYTES }) {
    this.outputType = outputType;
    this.maxValueBytes = limits.maxValueBytes;
  }

  /** See {@link PageDecoder.planRows}. */
  planRows(plan: PlanRows): void {
    this.plan.set(plan);
  }

  async *decodePage(body: AsyncIterable<Uint8Array>, page: number): AsyncGenerator<Buffer> {
    const st: JsonPageState = { page, phase: PHASE.start, row: 0, offset: 0, dataSeen: false };
    const carry = new ChunkCarry(this.maxValueBytes, (held, bytes) => {
      throw valueTooLargeError({ page, row: st.row + 1, column: jsonLastKey(held), bytes, limit: this.maxValueBytes });
    });
    for await (const chunk of body) {
      // A row cut off by the last chunk is completed from a small copy of this one's start; the rest is parsed in place.
      for (let buf = carry.pushStitched(chunk); buf !== undefined;) {
        const consumed = this.parseAll(buf, st);
        buf = carry.next(buf, consumed);
      }
      const rows = this.out.takeFull();
      if (rows !== undefined) yield rows;
    }
    const rest = carry.finish();
    if (rest !== undefined) {
      const before = st.offset;
      const consumed = this.parseAll(rest, st);
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

  /** parse() over the whole of `buf`, in the plan's format from the first row on (rows-plan.ts). */
  private parseAll(buf: Buffer, st: JsonPageState): number {
    return scanAcrossPlan(
      buf,
      st,
      (b) => this.parse(b, st),
      () => {
        const learned = this.justLearned;
        this.justLearned = false;
        return learned;
      },
    );
  }

  /** Scans b as far as whole units go; returns the index after the last whole unit. */
  private parse(b: Buffer, st: JsonPageState): number {
    const n = b.length;
    const sc = this.sc;
    const out = this.out;
    this.view = viewOf(b);
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
            // Keys first: the row is read again, written, once the reader has seen the columns.
            if (this.firstRowKeys(b, i, n) === NEED) break;
            this.applyPlan(this.columns!);
            sc.row = undefined;
            break;
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
          const isData = sameBytes(b, i + 1, ke - 1, DATA);
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

  /** Decodes a key (content between b[s] and the closing quote at e - 1) to a string. */
  private keyName(b: Buffer, s: number, e: number): string {
    for (let k = s; k < e - 1; k++) if (b[k] === BACKSLASH) return JSON.parse(b.toString('utf8', s - 1, e)) as string;
    return b.toString('utf8', s, e - 1);
  }

  /** Index after `"key" :` and whitespace, starting at the quote b[i]; or NEED. Sets nothing. */
  private afterKey(b: Buffer, ke: number, n: number): number {
    let i = skipWs(b, ke, n);
    if (i >= n) return NEED;
    if (b[i] !== 0x3a) this.sc.fail("expected ':' after a column name", i);
    i = skipWs(b, i + 1, n);
    return i >= n ? NEED : i;
  }

  /** Index after ',' or '}' that follows a value (and whitespace); `closed` tells which. Or NEED. */
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

  /** The first row's keys become the columns (values are checked, not written); returns NEED or the row's end. */
  private firstRowKeys(b: Buffer, i: number, n: number): number {
    const sc = this.sc;
    const names: string[] = [];
    const raws: Buffer[] = [];
    i = skipWs(b, i + 1, n);
    if (i >= n) return NEED;
    if (b[i] === 0x7d) sc.fail('the first row has no columns', i);
    if (b[i] !== QUOTE) sc.fail('expected a column name', i);
    for (;;) {
      const ke = sc.stringEnd(b, i + 1, n);
      if (ke === NEED) return NEED;
      const name = this.keyName(b, i + 1, ke);
      if (names.includes(name)) sc.fail(`column ${JSON.stringify(name)} appears twice in the first row`, i);
      names.push(name);
      raws.push(Buffer.from(b.subarray(i + 1, ke - 1)));
      const v = this.afterKey(b, ke, n);
      if (v === NEED) return NEED;
      const e = sc.skip(b, v, n, 0);
      if (e === NEED) return NEED;
      const next = this.afterValue(b, e, n);
      if (next === NEED) return NEED;
      if (next <= -2) {
        this.columns = names;
        this.keys = raws;
        this.kinds = names.map(() => 0);
        this.keyIndex = new Map(names.map((name, k) => [name, k]));
        return -2 - next;
      }
      i = next;
    }
  }

  /** Asks the plan how to write the rows, now that the first row told the columns; the parse stops here. */
  private applyPlan(columns: readonly string[]): void {
    const plan = this.plan.ask(columns);
    this.inspect = plan.inspect;
    if (plan.binary) {
      this.binary = this.sc.binary = new BinaryFieldWriter(plan.binary.encodings, plan.binary.timezone);
      this.format = 'binary';
      this.inspect = false;
    }
    this.justLearned = true;
  }

  /**
   * A row after the first: fast path while keys come in the first row's order, else {@link slowRow}. Faster still
   * where the bytes before a value — whitespace, comma, the key, colon — are those of the row they were learned from
   * (a server writes every row alike): they are compared as one run, eight bytes at a time (byte-run.ts).
   */
  private row(b: Buffer, rowStart: number, n: number, rowOp: number): number {
    const sc = this.sc;
    const keys = this.keys;
    const ncols = keys.length;
    const kinds = this.kinds;
    const inspect = this.inspect;
    const binary = this.binary !== undefined;
    const before = this.before;
    const dv = this.view;
    if (binary) sc.op = this.binary!.rowStart(sc.out, sc.op);
    // `at`: after the row's '{', then after each value.
    let at = rowStart + 1;
    let col = 0;
    let i: number;
    for (;;) {
      const run = col < ncols ? before[col] : undefined;
      let v: number;
      // A value right behind the run (more whitespace than the learned row had goes the general way).
      if (run !== undefined && n - at > run.length && run.at(dv, b, at) && !isWs(b[at + run.length]!))
        v = at + run.length;
      else {
        // Whitespace, ',' or '}', then the key compared with the first row's key of this column as it is read.
        if (col === 0) {
          i = skipWs(b, at, n);
          if (i >= n) return NEED;
          if (b[i] === 0x7d) {
            i++;
            break;
          }
          if (b[i] !== QUOTE) sc.fail('expected a column name', i);
        } else {
          const next = this.afterValue(b, at, n);
          if (next === NEED) return NEED;
          if (next <= -2) {
            i = -2 - next;
            break;
          }
          i = next;
        }
        if (col >= ncols) return this.slowRow(b, rowStart, n, rowOp);
        const key = keys[col]!;
        const ks = i + 1;
        const ke = ks + key.length;
        if (ke >= n) return this.slowRow(b, rowStart, n, rowOp);
        let same = b[ke] === QUOTE;
        for (let k = 0; same && k < key.length; k++) same = b[ks + k] === key[k];
        if (!same) return this.slowRow(b, rowStart, n, rowOp);
        v = this.afterKey(b, ke + 1, n);
        if (v === NEED) return NEED;
        if (before[col] === undefined) before[col] = new ByteRun(b.subarray(at, v));
      }
      let e: number;
      if (binary) e = sc.valueBinary(b, v, n, col);
      else {
        if (col > 0) sc.out[sc.op++] = TAB;
        e = sc.value(b, v, n);
      }
      if (e === NEED) return NEED;
      if (inspect) kinds[col]! |= sc.kind;
      col++;
      at = e;
    }
    if (col < ncols) this.fillNulls(col, ncols, n - i);
    if (!binary) sc.out[sc.op++] = LF;
    return i;
  }

  /**
   * Writes NULL for columns col..ncols-1 (missing keys), making room first: for them and again for the `rest` input
   * bytes of the chunk, whose room parse() reserved and these NULLs (written from no input) may have taken.
   */
  private fillNulls(col: number, ncols: number, rest: number): void {
    const sc = this.sc;
    const out = this.out;
    out.pos = sc.op;
    out.reserve(4 * (ncols - col) + 1 + this.chunkRoom(rest));
    sc.out = out.buf;
    const o = sc.out;
    let op = out.pos;
    const binary = this.binary;
    for (; col < ncols; col++) {
      if (binary) {
        op = binary.writeNull(o, op);
        continue;
      }
      if (col > 0) o[op++] = TAB;
      o[op++] = BACKSLASH;
      o[op++] = LETTER_N;
    }
    sc.op = op;
  }

  /** A row whose keys are out of order, escaped or missing: values go to `scratch`, then out in column order. */
  private slowRow(b: Buffer, rowStart: number, n: number, rowOp: number): number {
    const sc = this.sc;
    const ncols = this.keys.length;
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
          const next = this.afterValue(b, e, n);
          if (next === NEED) return NEED;
          if (next <= -2) {
            i = -2 - next;
            break;
          }
          i = next;
        }
      } else i++;
      // Room: the row's values plus a tab and \N per column, and again the rest of the chunk's (see fillNulls); what
      // the fast path wrote for the row is dropped.
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
