/**
 * The largest row a page may hold (`report.maxValueBytes`): a row is parsed whole, so past the limit the page is
 * refused naming page, row and column, and memory stays bounded whatever a value's size.
 */
import { EtlError } from '../errors.ts';

/** Default of `report.maxValueBytes`: 64 MiB. */
export const DEFAULT_MAX_VALUE_BYTES = 64 * 1024 * 1024;

/** What a decoder is limited to. */
export interface DecoderLimits {
  /** Largest row (and so value) a page may hold, in bytes. */
  maxValueBytes: number;
}

/**
 * The error for a row past the limit: VALUE_TOO_LARGE, stage parse, not retryable (the page is the same next time).
 * @param column the report column whose value was being read, when known
 */
export function valueTooLargeError(where: {
  page: number;
  row: number;
  column: string | undefined;
  bytes: number;
  limit: number;
}): EtlError {
  const col = where.column === undefined ? '' : `, column "${where.column}"`;
  return new EtlError(
    'VALUE_TOO_LARGE',
    `page ${where.page}, row ${where.row}${col}: a value larger than maxValueBytes ` +
      `(${where.limit} bytes; ${where.bytes} read so far) — raise report.maxValueBytes for this job ` +
      'if such values are expected, or shorten the value in the report',
    {
      stage: 'parse',
      retryable: false,
      details: {
        page: where.page,
        row: where.row,
        column: where.column,
        bytes: where.bytes,
        maxValueBytes: where.limit,
      },
    },
  );
}

function* bytesOf(parts: readonly Buffer[]): Generator<number> {
  for (const p of parts) for (let i = 0; i < p.length; i++) yield p[i]!;
}

/** txt: the 0-based field the held row was in when it grew too large (commas outside double quotes). */
export function txtFieldIndex(parts: readonly Buffer[]): number {
  let field = 0;
  let quoted = false;
  for (const b of bytesOf(parts)) {
    if (b === 0x22) quoted = !quoted;
    else if (b === 0x2c && !quoted) field++;
  }
  return field;
}

/** json: the last object key of the held row (the value being read belongs to it), or undefined. */
export function jsonLastKey(parts: readonly Buffer[]): string | undefined {
  let inString = false;
  let escaped = false;
  let current: number[] | undefined;
  let closed: string | undefined;
  let last: string | undefined;
  for (const b of bytesOf(parts)) {
    if (inString) {
      if (escaped) escaped = false;
      else if (b === 0x5c) escaped = true;
      else if (b === 0x22) {
        inString = false;
        closed = current ? Buffer.from(current).toString('utf8') : undefined;
        current = undefined;
        continue;
      }
      if (current && current.length < 1024) current.push(b);
      else current = undefined;
      continue;
    }
    if (b === 0x22) {
      inString = true;
      current = [];
    } else if (b === 0x3a && closed !== undefined) {
      last = closed;
      closed = undefined;
    } else if (b !== 0x20 && b !== 0x0a && b !== 0x0d && b !== 0x09) closed = undefined;
  }
  return last;
}

/** xml_query: the name attribute of the last `<field name="…">` of the held row, or undefined. */
export function xmlLastFieldName(parts: readonly Buffer[]): string | undefined {
  for (let k = parts.length - 1; k >= 0; k--) {
    const p = parts[k]!;
    const at = p.lastIndexOf('name="');
    if (at < 0) continue;
    const end = p.indexOf(0x22, at + 6);
    if (end > at) return p.toString('utf8', at + 6, end);
  }
  return undefined;
}
