/**
 * The fast path of the xml_query decoder: a byte scanner for the shape the service's description gives (docs/report-export-service.md "Output page
 * shapes", xml_query) and servers write — `<?xml …?><result><row><field name="…">text</field>…</row>…</result>`,
 * whitespace between elements allowed — that writes COPY text straight from the page bytes, without strings.
 * Text content is copied byte for byte (UTF-8 checked per scanned span with isUtf8), the five named entities and
 * numeric character references are decoded, and COPY escaping is applied on the way.
 *
 * It never guesses: anything else (CDATA, comments, processing instructions or a DOCTYPE after the prolog,
 * other attributes, fields out of the first row's order or missing, a raw CR, NUL or another control
 * character, an unknown entity, invalid UTF-8, a truncated page) makes {@link XmlFastScanner.scan} report
 * `fallback` at the last row boundary, and the decoder hands the rest of the page to saxes, whose rules and
 * error messages then apply (xml-decoder.ts).
 */
import { isUtf8 } from 'node:buffer';
import { BACKSLASH, LF, TAB, type CopyOutput } from './copy-text.ts';
import { classifyXmlValue } from './kinds.ts';

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

/** Where the scan of a page is. */
export type XmlPhase = 'prolog' | 'rows' | 'after';

/** What the decoder shares with the scanner: the columns it learns from the first row, and the kinds. */
export interface XmlColumnsSink {
  columns: string[] | undefined;
  kinds: number[];
  inspect: boolean;
  /** The first row told the columns (the decoder asks its plan then, rows-plan.ts). */
  learnColumns(names: string[]): void;
}

/** Outcome of one {@link XmlFastScanner.scan}. */
export interface XmlScan {
  /** Index after the last whole unit (prolog, row, closing tag) scanned. */
  consumed: number;
  /** Rows completed by this scan (their COPY bytes are in the output). */
  rows: number;
  /** True: b[consumed..] is not in the fast path's shape; saxes must take over from there. */
  fallback: boolean;
}

/** Needs more bytes (-1) or not the fast shape (-2): results of the field helpers. */
const MORE = -1;
const ODD = -2;

function matches(b: Uint8Array, i: number, lit: Uint8Array): boolean {
  for (let k = 0; k < lit.length; k++) if (b[i + k] !== lit[k]) return false;
  return true;
}

function skipSpace(b: Uint8Array, i: number, n: number): number {
  while (i < n) {
    const c = b[i]!;
    if (c !== 0x20 && c !== 0x0a && c !== 0x09 && c !== 0x0d) break;
    i++;
  }
  return i;
}

/** A character XML allows (XML 1.0's Char production), other than NUL-like controls. */
function isXmlChar(cp: number): boolean {
  return cp === 0x9 || cp === 0xa || cp === 0xd || (cp >= 0x20 && cp <= 0xd7ff) || (cp >= 0xe000 && cp <= 0xfffd) || (cp >= 0x10000 && cp <= 0x10ffff);
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
    const c = b[k]!;
    let d: number;
    if (c >= 0x30 && c <= 0x39) d = c - 0x30;
    else if (hex && ((c | 0x20) >= 0x61 && (c | 0x20) <= 0x66)) d = (c | 0x20) - 0x57;
    else return -1;
    cp = cp * (hex ? 16 : 10) + d;
    if (cp > 0x10ffff) return -1;
  }
  return isXmlChar(cp) ? cp : -1;
}

/** Writes code point `cp` as UTF-8 into o at p, COPY-text-escaped; returns the new position. */
function writeCodePoint(o: Uint8Array, p: number, cp: number): number {
  if (cp < 0x80) {
    if (cp === 0x0a || cp === 0x0d || cp === 0x09 || cp === BACKSLASH) {
      o[p++] = BACKSLASH;
      o[p++] = cp === 0x0a ? 0x6e : cp === 0x0d ? 0x72 : cp === 0x09 ? 0x74 : BACKSLASH;
    } else {
      o[p++] = cp;
    }
  } else if (cp < 0x800) {
    o[p++] = 0xc0 | (cp >> 6);
    o[p++] = 0x80 | (cp & 0x3f);
  } else if (cp < 0x10000) {
    o[p++] = 0xe0 | (cp >> 12);
    o[p++] = 0x80 | ((cp >> 6) & 0x3f);
    o[p++] = 0x80 | (cp & 0x3f);
  } else {
    o[p++] = 0xf0 | (cp >> 18);
    o[p++] = 0x80 | ((cp >> 12) & 0x3f);
    o[p++] = 0x80 | ((cp >> 6) & 0x3f);
    o[p++] = 0x80 | (cp & 0x3f);
  }
  return p;
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
    p = writeCodePoint(tmp, p, cp);
    k = semi;
  }
  return isUtf8(tmp.subarray(0, p)) ? tmp.toString('utf8', 0, p) : undefined;
}

/** The fast scanner of one decoder (all pages of a run); see the file comment. */
export class XmlFastScanner {
  phase: XmlPhase = 'prolog';
  /** Per column: the raw bytes `<field name="…"` of the first row, which every later field must repeat. */
  private openTags: Uint8Array[] = [];
  private readonly out: CopyOutput;
  private readonly sink: XmlColumnsSink;

  constructor(out: CopyOutput, sink: XmlColumnsSink) {
    this.out = out;
    this.sink = sink;
  }

  /** Starts a page. */
  startPage(): void {
    this.phase = 'prolog';
  }

  /**
   * Scans b from index 0 (the carried rest of the last scan plus new bytes) and writes every whole row.
   * @returns see {@link XmlScan}; rows written by a scan that ends in `fallback` are kept (they are whole and valid)
   */
  scan(b: Buffer): XmlScan {
    const n = b.length;
    let i = 0;
    let rows = 0;
    const columnsBefore = this.sink.columns;
    const phaseBefore = this.phase;
    const mark = this.out.mark();
    if (this.phase === 'prolog') {
      i = this.prolog(b, n);
      if (i < 0) return { consumed: 0, rows: 0, fallback: i === ODD };
      this.phase = 'rows';
    }
    let consumed = i;
    let fallback = false;
    while (this.phase === 'rows') {
      i = skipSpace(b, consumed, n);
      if (n - i < RESULT_CLOSE.length) {
        if (i < n && b[i] !== LT) fallback = true;
        break;
      }
      if (matches(b, i, ROW_OPEN)) {
        const end = this.row(b, i + ROW_OPEN.length, n);
        if (end < 0) {
          fallback = end === ODD;
          break;
        }
        consumed = end;
        rows++;
      } else if (matches(b, i, RESULT_CLOSE)) {
        consumed = i + RESULT_CLOSE.length;
        this.phase = 'after';
      } else {
        fallback = true;
        break;
      }
    }
    if (this.phase === 'after') {
      consumed = skipSpace(b, consumed, n);
      if (consumed < n) fallback = true;
    }
    if (consumed > 0 && !isUtf8(b.subarray(0, consumed))) {
      // Rare: let saxes deal with it from the start of this span, as if nothing had been scanned.
      this.out.reset(mark);
      this.phase = phaseBefore;
      this.sink.columns = columnsBefore;
      if (columnsBefore === undefined) this.openTags = [];
      return { consumed: 0, rows: 0, fallback: true };
    }
    return { consumed, rows, fallback };
  }

  /** BOM, XML declaration, `<result>`: index after it, MORE or ODD. */
  private prolog(b: Buffer, n: number): number {
    let i = 0;
    if (n < 3) return MORE;
    if (b[0] === BOM[0] && b[1] === BOM[1] && b[2] === BOM[2]) i = 3;
    i = skipSpace(b, i, n);
    if (n - i < XML_DECL.length) return MORE;
    if (matches(b, i, XML_DECL)) {
      const end = b.indexOf(DECL_END, i);
      if (end < 0) return MORE;
      i = skipSpace(b, end + 2, n);
    }
    if (n - i < RESULT_OPEN.length) return MORE;
    return matches(b, i, RESULT_OPEN) ? i + RESULT_OPEN.length : ODD;
  }

  /** One row's fields from b[i] (after `<row>`) through `</row>`: index after it, MORE or ODD. */
  private row(b: Buffer, i: number, n: number): number {
    const out = this.out;
    const mark = out.mark();
    const first = this.sink.columns === undefined;
    const names: string[] = [];
    const tags: Uint8Array[] = [];
    const ncols = first ? Infinity : this.openTags.length;
    for (let col = 0; ; col++) {
      i = skipSpace(b, i, n);
      if (n - i < FIELD_CLOSE.length) return this.abort(mark, MORE);
      if (matches(b, i, ROW_CLOSE) && (first ? col > 0 : col === ncols)) {
        out.reserve(1);
        out.buf[out.pos++] = LF;
        if (first) this.learn(names, tags);
        return i + ROW_CLOSE.length;
      }
      if (col >= ncols) return this.abort(mark, ODD);
      let end: number;
      if (first) {
        end = this.firstOpenTag(b, i, n, names, tags);
      } else {
        const tag = this.openTags[col]!;
        if (n - i < tag.length + 2) return this.abort(mark, MORE);
        end = matches(b, i, tag) ? i + tag.length : ODD;
      }
      if (end < 0) return this.abort(mark, end);
      out.reserve(3);
      if (col > 0) out.buf[out.pos++] = TAB;
      if (b[end] === SLASH && b[end + 1] === GT) {
        out.buf[out.pos++] = BACKSLASH;
        out.buf[out.pos++] = 0x4e;
        i = end + 2;
        continue;
      }
      if (b[end] !== GT) return this.abort(mark, ODD);
      i = this.value(b, end + 1, n, col);
      if (i < 0) return this.abort(mark, i);
    }
  }

  private abort(mark: number, code: number): number {
    this.out.reset(mark);
    return code;
  }

  /** First row: `<field name="…"` at b[i]; records the name and its raw tag; index after the closing quote. */
  private firstOpenTag(b: Buffer, i: number, n: number, names: string[], tags: Uint8Array[]): number {
    const at = i + FIELD_OPEN.length + 1;
    if (n - at < NAME_ATTR.length + 1) return MORE;
    if (!matches(b, i, FIELD_OPEN) || b[at - 1] !== 0x20 || !matches(b, at, NAME_ATTR)) return ODD;
    const s = at + NAME_ATTR.length;
    const q = b.indexOf(QUOT, s);
    if (q < 0 || q + 2 >= n) return MORE;
    const name = attributeText(b, s, q);
    if (name === undefined || names.includes(name)) return ODD;
    names.push(name);
    tags.push(Buffer.from(b.subarray(i, q + 1)));
    return q + 1;
  }

  private learn(names: string[], tags: Uint8Array[]): void {
    this.openTags = tags;
    this.sink.learnColumns(names);
  }

  /** Text content from b[i] through `</field>`, written COPY-escaped (empty → \N): index after it, MORE or ODD. */
  private value(b: Buffer, i: number, n: number, col: number): number {
    const lt = b.indexOf(LT, i);
    if (lt < 0 || n - lt < FIELD_CLOSE.length) return MORE;
    if (!matches(b, lt, FIELD_CLOSE)) return ODD;
    const out = this.out;
    if (lt === i) {
      out.writeNull();
      return lt + FIELD_CLOSE.length;
    }
    out.reserve(2 * (lt - i));
    const o = out.buf;
    const start = out.pos;
    let p = start;
    for (let k = i; k < lt; k++) {
      const c = b[k]!;
      if (c >= 0x20 && c !== AMP && c !== BACKSLASH && c !== BRACKET) {
        o[p++] = c;
      } else if (c === BRACKET) {
        if (b[k + 1] === BRACKET && b[k + 2] === GT) return ODD; // "]]>" is not allowed in text: saxes says so
        o[p++] = c;
      } else if (c === BACKSLASH) {
        o[p++] = BACKSLASH;
        o[p++] = BACKSLASH;
      } else if (c === 0x0a) {
        o[p++] = BACKSLASH;
        o[p++] = 0x6e;
      } else if (c === 0x09) {
        o[p++] = BACKSLASH;
        o[p++] = 0x74;
      } else if (c === AMP) {
        let semi = k + 1;
        const stop = Math.min(lt, k + 12);
        while (semi < stop && b[semi] !== SEMI) semi++;
        const cp = semi < stop ? entityCodePoint(b, k + 1, semi) : -1;
        if (cp < 0) return ODD;
        p = writeCodePoint(o, p, cp);
        k = semi;
      } else {
        return ODD; // raw CR (XML normalises it), NUL and other controls: saxes decides
      }
    }
    out.pos = p;
    if (this.sink.inspect && p > start) this.sink.kinds[col]! |= classifyXmlValue(o, start, p);
    return lt + FIELD_CLOSE.length;
  }
}
