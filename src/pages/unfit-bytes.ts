/**
 * Bytes that no PostgreSQL text takes (docs/loaded-tables.md "Values that cannot load"): invalid UTF-8, or NUL. COPY's
 * own error names no column, so the txt fast path checks each span it passes through ({@link textFits}) and only when
 * one fails looks for the record and field ({@link locateUnfitByte}).
 */
import { isUtf8 } from 'node:buffer';
import { COMMA, CR, LF, QUOTE } from './bytes.ts';
import { UnfitBytesError } from '../warehouse/load-errors.ts';

/** Whether b[s..e) is UTF-8 without a NUL byte: what a text column of a UTF-8 database takes. */
export function textFits(b: Buffer, s: number, e: number): boolean {
  const span = b.subarray(s, e);
  return span.indexOf(0) < 0 && isUtf8(span);
}

/** The first byte of b[s..e) that starts no valid UTF-8 sequence, or is NUL; -1 when there is none. */
export function firstUnfitByte(b: Uint8Array, s: number, e: number): number {
  let i = s;
  while (i < e) {
    const c = b[i]!;
    if (c === 0) return i;
    if (c < 0x80) {
      i++;
      continue;
    }
    // Lead byte → sequence length and the range of its first continuation byte (no overlongs, no surrogates).
    let len: number;
    let lo = 0x80;
    let hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf) len = 2;
    else if (c >= 0xe0 && c <= 0xef) {
      len = 3;
      if (c === 0xe0) lo = 0xa0;
      else if (c === 0xed) hi = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
      len = 4;
      if (c === 0xf0) lo = 0x90;
      else if (c === 0xf4) hi = 0x8f;
    } else return i;
    if (i + len > e) return i;
    const c1 = b[i + 1]!;
    if (c1 < lo || c1 > hi) return i;
    for (let k = 2; k < len; k++) if ((b[i + k]! & 0xc0) !== 0x80) return i;
    i += len;
  }
  return -1;
}

/** Where an unfit byte is, among the csv records of a span. */
export interface UnfitPlace {
  /** 0-based record of the span that holds it (empty lines not counted). */
  record: number;
  /** 0-based field of that record. */
  field: number;
  /** The byte's index in the buffer. */
  at: number;
  /** The byte itself. */
  byte: number;
  /** The field's content, without its quotes: b[valueStart..valueEnd). */
  valueStart: number;
  valueEnd: number;
}

/**
 * Finds the first unfit byte of b[s..e), whole csv records (txt: fields by commas outside double quotes, records by
 * line ends outside them; an empty line is no record), or undefined when the span fits.
 */
export function locateUnfitByte(b: Uint8Array, s: number, e: number): UnfitPlace | undefined {
  const at = firstUnfitByte(b, s, e);
  if (at < 0) return undefined;
  let record = 0;
  let field = 0;
  let fieldStart = s;
  let lineStart = s;
  let quoted = false;
  for (let i = s; i < at; i++) {
    const c = b[i];
    if (c === QUOTE) quoted = !quoted;
    else if (quoted) continue;
    else if (c === COMMA) {
      field++;
      fieldStart = i + 1;
    } else if (c === LF) {
      const empty = i === lineStart || (i === lineStart + 1 && b[lineStart] === CR);
      if (!empty) record++;
      field = 0;
      fieldStart = lineStart = i + 1;
    }
  }
  // The field's end: the next comma or line end outside quotes.
  let end = at;
  for (let inQuotes = quoted; end < e; end++) {
    const c = b[end];
    if (c === QUOTE) inQuotes = !inQuotes;
    else if (!inQuotes && (c === COMMA || c === LF || c === CR)) break;
  }
  const isQuoted = b[fieldStart] === QUOTE;
  return {
    record,
    field,
    at,
    byte: b[at]!,
    valueStart: isQuoted ? fieldStart + 1 : fieldStart,
    valueEnd: isQuoted && end > fieldStart + 1 && b[end - 1] === QUOTE ? end - 1 : end,
  };
}

/** The most characters of a value that an {@link UnfitBytesError} shows. */
const SHOWN_VALUE_CHARS = 80;

/**
 * The error for the first unfit byte of b[s..e), whole txt records of page `page` whose first is row `firstRow` of
 * the run and row `firstRowOfPage` of the page; undefined when the span fits after all.
 * @param where.bufferOffset the page's byte offset of b[0]
 * @param where.columns the report's column names, in field order
 */
export function unfitBytesError(
  b: Buffer,
  s: number,
  e: number,
  where: { page: number; firstRow: number; firstRowOfPage: number; bufferOffset: number; columns: readonly string[] },
): UnfitBytesError | undefined {
  const place = locateUnfitByte(b, s, e);
  if (!place) return undefined;
  const text = b.toString('utf8', place.valueStart, Math.min(place.valueEnd, place.valueStart + 4 * SHOWN_VALUE_CHARS));
  const shown = text.length > SHOWN_VALUE_CHARS ? `${text.slice(0, SHOWN_VALUE_CHARS)}…` : text;
  return new UnfitBytesError({
    columnIndex: place.field,
    reportColumn: where.columns[place.field],
    page: where.page,
    row: where.firstRow + place.record,
    rowOfPage: where.firstRowOfPage + place.record,
    offset: where.bufferOffset + place.at,
    byte: place.byte,
    byteInValue: place.at - place.valueStart + 1,
    value: shown.replaceAll('""', '"').replaceAll('\0', '\ufffd'),
  });
}
