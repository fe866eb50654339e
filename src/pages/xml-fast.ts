/**
 * The fast path of the xml_query decoder: a byte scanner for the shape servers write (docs/report-export-service.md
 * "Output page shapes", xml_query) — `<?xml …?><result><row><field name="…">text</field>…</row>…</result>`,
 * whitespace between elements allowed — writing COPY rows straight from the page bytes (UTF-8 checked per span,
 * entities and character references decoded). Every row's open tags must repeat the first row's byte for byte.
 * Anything else (CDATA, comments, other attributes, fields out of order or missing, a raw CR or control character, an
 * unknown entity, invalid UTF-8) makes {@link XmlFastScanner.scan} report `fallback` at the last row boundary, and the
 * decoder hands the rest of the page to saxes (xml-decoder.ts).
 */
import { isUtf8 } from 'node:buffer';
import { type CopyOutput } from './copy-text.ts';
import { BACKSLASH, CR, hexDigit, LF, skipWs, startsWith, TAB, writeUtf8 } from './bytes.ts';
import { classifyXmlValue, KIND } from './kinds.ts';
import type { ValueFit } from '../warehouse/value-fit.ts';
import { BINARY, BinaryValueUnsupported } from '../copy-binary/format.ts';
import { REFUSED, type BinaryFieldWriter } from '../copy-binary/field-writer.ts';

const LT = 0x3c;
const GT = 0x3e;
const SLASH = 0x2f;
const AMP = 0x26;
const QUOT = 0x22;
const SEMI = 0x3b;
const BRACKET = 0x5d;

const BOM = [0xef, 0xbb, 0xbf];
const XML_DECL = Buffer.from('<?xml');
const DECL_END = Buffer.from('?>');
const RESULT_OPEN = Buffer.from('<result>');
const RESULT_CLOSE = Buffer.from('</result>');
const ROW_OPEN = Buffer.from('<row>');
const ROW_CLOSE = Buffer.from('</row>');
const FIELD_OPEN = Buffer.from('<field');
const FIELD_CLOSE = Buffer.from('</field>');
const NAME_ATTR = Buffer.from('name="');

/** Bytes a value's text holds as they are: 0x20 and above but `<`, `&`, `\` (COPY's escape) and `]` (`]]>`). */
const PLAIN = new Uint8Array(256);
for (let c = 0x20; c < 256; c++) PLAIN[c] = c === LT || c === AMP || c === BACKSLASH || c === BRACKET ? 0 : 1;

export type XmlPhase = 'prolog' | 'rows' | 'after';

/** The decoder, as the scanner sees it: `learnColumns` asks the plan (rows-plan.ts), which may set `binary`. */
interface XmlColumnsSink {
  columns: string[] | undefined;
  kinds: number[];
  inspect: boolean;
  learnColumns(names: string[]): void;
}

/**
 * One {@link XmlFastScanner.scan}: the index after the last whole unit (prolog, row, closing tag), the rows it wrote,
 * and whether saxes must take over at `consumed`.
 */
interface XmlScan {
  consumed: number;
  rows: number;
  fallback: boolean;
}

/** Needs more bytes, or not the fast shape: results of the field helpers. */
const MORE = -1;
const ODD = -2;

/** A character XML 1.0 allows (its Char production). */
function isXmlChar(cp: number): boolean {
  if (cp < 0x20) return cp === 0x9 || cp === 0xa || cp === 0xd;
  return cp <= 0xd7ff || (cp >= 0xe000 && cp <= 0xfffd) || (cp >= 0x10000 && cp <= 0x10ffff);
}

/** The code point of the entity or character reference b[s..e) (without & and ;), or -1. */
function entityCodePoint(b: Uint8Array, s: number, e: number): number {
  const len = e - s;
  if (len === 2 && b[s + 1] === 0x74) return b[s] === 0x6c ? 0x3c : b[s] === 0x67 ? 0x3e : -1; // lt gt
  if (len === 3 && b[s] === 0x61 && b[s + 1] === 0x6d && b[s + 2] === 0x70) return 0x26; // amp
  if (len === 4 && b[s] === 0x71 && b[s + 1] === 0x75 && b[s + 2] === 0x6f && b[s + 3] === 0x74) return 0x22; // quot
  if (len === 4 && b[s] === 0x61 && b[s + 1] === 0x70 && b[s + 2] === 0x6f && b[s + 3] === 0x73) return 0x27; // apos
  if (len < 2 || b[s] !== 0x23) return -1;
  const hex = b[s + 1] === 0x78;
  let cp = 0;
  const from = s + (hex ? 2 : 1);
  if (from >= e) return -1;
  for (let k = from; k < e; k++) {
    const d = hexDigit(b[k]!);
    if (d < 0 || (!hex && d > 9)) return -1;
    cp = cp * (hex ? 16 : 10) + d;
    if (cp > 0x10ffff) return -1;
  }
  return isXmlChar(cp) ? cp : -1;
}

/** Decodes an attribute value b[s..e) (entities allowed, no `<`), or undefined when it is not plain. */
function attributeText(b: Buffer, s: number, e: number): string | undefined {
  const tmp = Buffer.allocUnsafe(2 * (e - s));
  let p = 0;
  for (let k = s; k < e; k++) {
    const c = b[k]!;
    if (c === LT || c < 0x20) return undefined;
    if (c !== AMP) {
      tmp[p++] = c;
      continue;
    }
    const semi = b.indexOf(SEMI, k + 1);
    if (semi < 0 || semi >= e) return undefined;
    const cp = entityCodePoint(b, k + 1, semi);
    if (cp < 0x20) return undefined;
    p = writeUtf8(cp, tmp, p);
    k = semi;
  }
  return isUtf8(tmp.subarray(0, p)) ? tmp.toString('utf8', 0, p) : undefined;
}

/** The fast scanner of one decoder (all pages of a run); see the file comment. */
export class XmlFastScanner {
  phase: XmlPhase = 'prolog';
  /** Set by the decoder when its plan chose COPY binary format. */
  binary: BinaryFieldWriter | undefined = undefined;
  /** Set by the decoder when its plan checks values (rows-plan.ts). */
  fit: ValueFit | undefined = undefined;
  /** The page and its rows before the current scan, for BinaryValueUnsupported. */
  page = 0;
  rowBase = 0;
  /** Per column: the first row's `<field name="…"`, which every later row must repeat. */
  private openTags: Buffer[] = [];
  private readonly out: CopyOutput;
  private readonly sink: XmlColumnsSink;
  /** {@link value}: the index after the value's `</field>`. */
  private end = 0;
  /** A typed column's value holding a reference, decoded (binary format). */
  private scratch = Buffer.alloc(256);

  constructor(out: CopyOutput, sink: XmlColumnsSink) {
    this.out = out;
    this.sink = sink;
  }

  startPage(page = 0): void {
    this.phase = 'prolog';
    this.page = page;
    this.rowBase = 0;
  }

  /**
   * Scans b (the carried rest of the last scan and new bytes), writing every whole row; rows written before a
   * `fallback` are kept.
   * @throws BinaryValueUnsupported for a value its column's encoder does not take
   */
  scan(b: Buffer): XmlScan {
    const n = b.length;
    let i = 0;
    let rows = 0;
    const phaseBefore = this.phase;
    // Output never outgrows twice the input (COPY escapes), in binary the input: room for the whole scan at once.
    this.out.reserve((this.binary === undefined ? 2 : 1) * n + 16);
    const mark = this.out.mark();
    if (this.phase === 'prolog') {
      i = this.prolog(b, n);
      if (i < 0) return { consumed: 0, rows: 0, fallback: i === ODD };
      this.phase = 'rows';
    }
    let consumed = i;
    let fallback = false;
    while (this.phase === 'rows') {
      i = skipWs(b, consumed, n);
      if (n - i < RESULT_CLOSE.length) {
        if (i < n && b[i] !== LT) fallback = true;
        break;
      }
      if (startsWith(b, i, ROW_OPEN)) {
        if (this.sink.columns === undefined) {
          const learned = this.firstRow(b, i + ROW_OPEN.length, n);
          if (learned < 0) {
            fallback = learned === ODD;
            break;
          }
        }
        const end = this.row(b, i + ROW_OPEN.length, n, rows);
        if (end < 0) {
          fallback = end === ODD;
          break;
        }
        consumed = end;
        rows++;
      } else if (startsWith(b, i, RESULT_CLOSE)) {
        consumed = i + RESULT_CLOSE.length;
        this.phase = 'after';
      } else {
        fallback = true;
        break;
      }
    }
    if (this.phase === 'after') {
      consumed = skipWs(b, consumed, n);
      if (consumed < n) fallback = true;
    }
    if (consumed > 0 && !isUtf8(b.subarray(0, consumed))) {
      // Rare: saxes takes this span from its start, as if nothing had been scanned (learned columns stay).
      this.out.reset(mark);
      this.phase = phaseBefore;
      return { consumed: 0, rows: 0, fallback: true };
    }
    return { consumed, rows, fallback };
  }

  /** BOM, XML declaration, `<result>`: index after it, MORE or ODD. */
  private prolog(b: Buffer, n: number): number {
    let i = 0;
    if (n < 3) return MORE;
    if (b[0] === BOM[0] && b[1] === BOM[1] && b[2] === BOM[2]) i = 3;
    i = skipWs(b, i, n);
    if (n - i < XML_DECL.length) return MORE;
    if (startsWith(b, i, XML_DECL)) {
      const end = b.indexOf(DECL_END, i);
      if (end < 0) return MORE;
      i = skipWs(b, end + 2, n);
    }
    if (n - i < RESULT_OPEN.length) return MORE;
    return startsWith(b, i, RESULT_OPEN) ? i + RESULT_OPEN.length : ODD;
  }

  /** The first row's field names, from b[i] (after `<row>`), become the columns: 0, MORE or ODD. */
  private firstRow(b: Buffer, i: number, n: number): number {
    const names: string[] = [];
    const tags: Buffer[] = [];
    for (let col = 0; ; col++) {
      i = skipWs(b, i, n);
      if (n - i < FIELD_CLOSE.length) return MORE;
      if (col > 0 && startsWith(b, i, ROW_CLOSE)) {
        this.openTags = tags;
        this.sink.learnColumns(names);
        return 0;
      }
      const end = this.firstOpenTag(b, i, n, names, tags);
      if (end < 0) return end;
      if (b[end] === SLASH && b[end + 1] === GT) {
        i = end + 2;
        continue;
      }
      if (b[end] !== GT) return ODD;
      const lt = b.indexOf(LT, end + 1);
      if (lt < 0 || n - lt < FIELD_CLOSE.length) return MORE;
      if (!startsWith(b, lt, FIELD_CLOSE)) return ODD;
      i = lt + FIELD_CLOSE.length;
    }
  }

  /** First row: `<field name="…"` at b[i]; records the name and its raw tag; index after the closing quote. */
  private firstOpenTag(b: Buffer, i: number, n: number, names: string[], tags: Buffer[]): number {
    const at = i + FIELD_OPEN.length + 1;
    if (n - at < NAME_ATTR.length + 1) return MORE;
    if (!startsWith(b, i, FIELD_OPEN) || b[at - 1] !== 0x20 || !startsWith(b, at, NAME_ATTR)) return ODD;
    const s = at + NAME_ATTR.length;
    const q = b.indexOf(QUOT, s);
    if (q < 0 || q + 2 >= n) return MORE;
    const name = attributeText(b, s, q);
    if (name === undefined || names.includes(name)) return ODD;
    names.push(name);
    tags.push(Buffer.from(b.subarray(i, q + 1)));
    return q + 1;
  }

  /** One row from b[i] (after `<row>`), written: the index after `</row>`, MORE or ODD. `rows`: done by this scan. */
  private row(b: Buffer, i: number, n: number, rows: number): number {
    const out = this.out;
    const o = out.buf;
    const start = out.pos;
    const binary = this.binary;
    const tags = this.openTags;
    const ncols = tags.length;
    let p = binary === undefined ? start : binary.rowStart(o, start);
    for (let col = 0; col < ncols; col++) {
      if (b[i] !== LT) i = skipWs(b, i, n);
      const tag = tags[col]!;
      const tagLength = tag.length;
      if (n - i < tagLength + 2) return MORE;
      if (!startsWith(b, i, tag)) return ODD;
      const end = i + tagLength;
      if (binary === undefined && col > 0) o[p++] = TAB;
      if (b[end] === SLASH) {
        if (b[end + 1] !== GT) return ODD;
        p = binary === undefined ? writeTextNull(o, p) : binary.writeNull(o, p);
        i = end + 2;
        continue;
      }
      if (b[end] !== GT) return ODD;
      // The value: plain bytes up to `<` are the rule; anything else is read by value().
      const s = end + 1;
      let k = s;
      while (k < n && PLAIN[b[k]!] === 1) k++;
      if (k >= n) return MORE;
      if (b[k] === LT) {
        if (n - k < 8) return MORE;
        if (!startsWith(b, k, FIELD_CLOSE)) return ODD;
        const fit = this.fit;
        if (fit !== undefined && k > s && (fit.onText[col] !== 0 || fit.onNumber[col] !== 0))
          checkXmlValue(fit, col, b, s, k, this.page, this.rowBase + rows + 1);
        if (k === s) p = binary === undefined ? writeTextNull(o, p) : binary.writeNull(o, p);
        else if (binary === undefined) p = this.plainText(b, s, k, o, p, col);
        else {
          const q = binary.write(o, p, col, b, s, k);
          if (q === REFUSED) throw new BinaryValueUnsupported(col, this.page, this.rowBase + rows + 1);
          p = q;
        }
        i = k + FIELD_CLOSE.length;
        continue;
      }
      p = this.value(b, s, n, o, p, col, rows);
      if (p < 0) return p;
      i = this.end;
    }
    if (b[i] !== LT) i = skipWs(b, i, n);
    if (n - i < ROW_CLOSE.length) return MORE;
    if (!startsWith(b, i, ROW_CLOSE)) return ODD;
    if (binary === undefined) o[p++] = LF;
    out.pos = p;
    return i + ROW_CLOSE.length;
  }

  /** Text format: the plain value b[s..e) (no byte to escape) copied to o at p, its kind recorded. */
  private plainText(b: Buffer, s: number, e: number, o: Buffer, p: number, col: number): number {
    const start = p;
    if (e - s > 64) {
      b.copy(o, p, s, e);
      p += e - s;
    } else {
      for (let k = s; k < e; k++) o[p++] = b[k]!;
    }
    if (this.sink.inspect) this.sink.kinds[col]! |= classifyXmlValue(o, start, p);
    return p;
  }

  /**
   * A value holding more than plain bytes, from b[i] through `</field>`: references decoded; in text format COPY
   * escapes applied, in binary format written by the column's encoder. Returns the output position (and sets
   * {@link end}), MORE or ODD.
   */
  private value(b: Buffer, i: number, n: number, o: Buffer, p: number, col: number, rows: number): number {
    const binary = this.binary;
    const typed = binary !== undefined && binary.encodings[col] !== BINARY.text;
    // Binary text is written after its length word; a typed value is decoded into scratch and then encoded.
    let t: Uint8Array = o;
    let q = binary === undefined ? p : p + 4;
    if (typed) {
      // The value ends at the next '<' (text holds none): references only shorten it.
      const lt = b.indexOf(LT, i);
      if (lt < 0) return MORE;
      if (this.scratch.length < lt - i) this.scratch = Buffer.allocUnsafe(2 * (lt - i));
      t = this.scratch;
      q = 0;
    }
    const start = q;
    const escape = binary === undefined;
    let escaped = false;
    let k = i;
    for (; k < n; k++) {
      const c = b[k]!;
      if (PLAIN[c] === 1) {
        t[q++] = c;
      } else if (c === LT) {
        break;
      } else if (c === BRACKET) {
        if (b[k + 1] === BRACKET && b[k + 2] === GT) return ODD; // "]]>" is not allowed in text: saxes says so
        if (k + 2 >= n) return MORE;
        t[q++] = c;
      } else if (c === BACKSLASH || c === 0x0a || c === 0x09) {
        if (escape) {
          escaped = true;
          t[q++] = BACKSLASH;
          t[q++] = c === LF ? 0x6e : c === TAB ? 0x74 : BACKSLASH;
        } else t[q++] = c;
      } else if (c === AMP) {
        let semi = k + 1;
        const stop = Math.min(n, k + 12);
        while (semi < stop && b[semi] !== SEMI && b[semi] !== LT) semi++;
        if (semi >= n) return MORE;
        const cp = b[semi] === SEMI ? entityCodePoint(b, k + 1, semi) : -1;
        if (cp < 0) return ODD;
        if (escape && (cp === LF || cp === 0x0d || cp === TAB || cp === BACKSLASH)) {
          escaped = true;
          t[q++] = BACKSLASH;
          t[q++] = cp === LF ? 0x6e : cp === CR ? 0x72 : cp === TAB ? 0x74 : BACKSLASH;
        } else q = writeUtf8(cp, t, q);
        k = semi;
      } else {
        return ODD; // raw CR (XML normalises it), NUL and other controls: saxes decides
      }
    }
    if (k >= n || n - k < FIELD_CLOSE.length) return MORE;
    if (!startsWith(b, k, FIELD_CLOSE)) return ODD;
    this.end = k + FIELD_CLOSE.length;
    const fit = this.fit;
    if (fit !== undefined && q > start && (fit.onText[col] !== 0 || fit.onNumber[col] !== 0)) {
      const row = this.rowBase + rows + 1;
      if (escaped) {
        const v = unescapeCopyText(t, start, q);
        checkXmlValue(fit, col, v, 0, v.length, this.page, row);
      } else checkXmlValue(fit, col, t, start, q, this.page, row);
    }
    if (binary === undefined) {
      if (this.sink.inspect && q > start) this.sink.kinds[col]! |= classifyXmlValue(o, start, q);
      return q;
    }
    if (!typed) {
      const len = q - start;
      o[p] = len >>> 24;
      o[p + 1] = len >>> 16;
      o[p + 2] = len >>> 8;
      o[p + 3] = len;
      return q;
    }
    const r = binary.write(o, p, col, t, 0, q);
    if (r === REFUSED) throw new BinaryValueUnsupported(col, this.page, this.rowBase + rows + 1);
    return r;
  }
}

/** Writes `\N` (NULL in COPY text) at o[p]; returns the new position. */
function writeTextNull(o: Uint8Array, p: number): number {
  o[p] = BACKSLASH;
  o[p + 1] = 0x4e;
  return p + 2;
}

/**
 * Checks an xml_query value b[s..e) of column `col` (value-fit.ts): one in number form (classifyXmlValue) as a
 * number, any other as text.
 * @throws ValueDoesNotFitError when the column would change it
 */
export function checkXmlValue(
  fit: ValueFit,
  col: number,
  b: Uint8Array,
  s: number,
  e: number,
  page: number,
  row: number,
): void {
  let text = true;
  if (fit.byKind[col] !== 0) {
    const kind = classifyXmlValue(b, s, e);
    text = kind !== KIND.integer && kind !== KIND.numeric;
  }
  fit.check(col, b, s, e, text, page, row);
}

/** COPY text bytes b[s..e) with their escapes (`\\ \\n \\r \\t`) undone. */
function unescapeCopyText(b: Uint8Array, s: number, e: number): Buffer {
  const out = Buffer.allocUnsafe(e - s);
  let p = 0;
  for (let k = s; k < e; k++) {
    let c = b[k]!;
    if (c === BACKSLASH && k + 1 < e) {
      const x = b[++k]!;
      c = x === 0x6e ? LF : x === 0x72 ? CR : x === 0x74 ? TAB : x;
    }
    out[p++] = c;
  }
  return out.subarray(0, p);
}
