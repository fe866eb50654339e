/**
 * COPY FORMAT binary (docs/performance.md "Throughput against psql"): the stream's header and trailer, which column
 * types have a binary encoding, and the error a source throws for a value its encoder does not take (the loader then
 * loads in text format). Layout (PostgreSQL documentation, "COPY", "Binary Format"): an 11-byte signature, int32 flags
 * and header extension length (0); per row int16 field count, then per field int32 length (-1 = NULL) and the bytes
 * in the type's binary send/recv format; int16 -1 ends the stream. All integers big-endian.
 */

/** Signature, flags and header extension length. */
export const COPY_BINARY_HEADER: Buffer = Buffer.from([
  0x50, 0x47, 0x43, 0x4f, 0x50, 0x59, 0x0a, 0xff, 0x0d, 0x0a, 0x00, 0, 0, 0, 0, 0, 0, 0, 0,
]);

/** The file trailer: a field count of -1. */
export const COPY_BINARY_TRAILER: Buffer = Buffer.from([0xff, 0xff]);

/**
 * The binary encodings a page decoder can write, one per target column (in COPY column order):
 * - text: the value's bytes (text, varchar(n): PostgreSQL still checks the length)
 * - int8 / int4 / int2: two's complement, 8 / 4 / 2 bytes
 * - numeric: base-10000 digits with weight, sign and display scale (numeric(p,s): PostgreSQL still rounds and checks)
 * - timestamptz: int64 microseconds since 2000-01-01 00:00:00 UTC
 * - bool: one byte, 1 or 0
 * - date: int32 days since 2000-01-01
 */
export const BINARY = { text: 1, int8: 2, int4: 3, int2: 4, numeric: 5, timestamptz: 6, bool: 7, date: 8 } as const;

/** One of the {@link BINARY} codes. */
export type BinaryEncoding = (typeof BINARY)[keyof typeof BINARY];

/**
 * The binary encoding of a target column, from its type as `format_type` spells it (`bigint`, `numeric(12,2)`,
 * `character varying(80)`, `timestamp(3) with time zone`, …), or undefined when this loader has none for the type (the
 * load then uses text format, which every type reads).
 */
export function binaryEncodingOf(type: string): BinaryEncoding | undefined {
  switch (type) {
    case 'text':
    case 'character varying':
      return BINARY.text;
    case 'bigint':
      return BINARY.int8;
    case 'integer':
      return BINARY.int4;
    case 'smallint':
      return BINARY.int2;
    case 'numeric':
      return BINARY.numeric;
    case 'boolean':
      return BINARY.bool;
    case 'timestamp with time zone':
      return BINARY.timestamptz;
    case 'date':
      return BINARY.date;
  }
  if (/^character varying\(\d+\)$/.test(type)) return BINARY.text;
  if (/^numeric\(\d+(,-?\d+)?\)$/.test(type)) return BINARY.numeric;
  if (/^timestamp\(\d\) with time zone$/.test(type)) return BINARY.timestamptz;
  return undefined;
}

/**
 * Thrown by a page decoder writing binary rows when a value is not in a form its encoder takes (an exponent, another
 * timestamp style, out of range, …). The loader then loads the report again in text format, where PostgreSQL reads
 * the value itself.
 */
export class BinaryValueUnsupported extends Error {
  /** 0-based column in COPY order. */
  readonly column: number;
  readonly page: number;
  /** 1-based row within the page. */
  readonly row: number;
  constructor(column: number, page: number, row: number) {
    super(`page ${page}, row ${row}, column ${column + 1}: a value the binary encoder does not take`);
    this.name = 'BinaryValueUnsupported';
    this.column = column;
    this.page = page;
    this.row = row;
  }
}

/** Binary rows framed as a whole COPY stream: the header, the rows as they come, the trailer. */
export async function* framed(rows: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
  yield COPY_BINARY_HEADER;
  yield* rows;
  yield COPY_BINARY_TRAILER;
}
