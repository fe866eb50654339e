/** The fixed columns of the shapes that are not typed rows (docs/loaded-tables.md "Output types"), in table order. */
import type { OutputShape } from '../vocabulary.ts';
import type { FixedColumn } from './page-decoder.ts';

/** The fixed columns of a lines table, in order, with their types (docs/loaded-tables.md "Output types"). */
export const LINE_COLUMNS = [
  { name: 'page', type: 'integer' },
  { name: 'line', type: 'integer' },
  { name: 'fields', type: 'text[]' },
] as const satisfies readonly FixedColumn[];

/** The fixed columns of a json_userdef document table (docs/loaded-tables.md "Output types"). */
export const JSON_DOCUMENT_COLUMNS: readonly FixedColumn[] = [
  { name: 'page', type: 'integer' },
  { name: 'document', type: 'jsonb' },
];

/** The fixed columns of an xml document table (docs/loaded-tables.md "Output types"). */
export const XML_DOCUMENT_COLUMNS: readonly FixedColumn[] = [
  { name: 'page', type: 'integer' },
  { name: 'document', type: 'xml' },
];

/** The fixed columns of a document table, in table order (docs/loaded-tables.md "Output types"). */
export const DOCUMENT_COLUMNS: readonly FixedColumn[] = [
  { name: 'page', type: 'integer' },
  { name: 'file_name', type: 'text' },
  { name: 'content_type', type: 'text' },
  { name: 'bytes', type: 'bigint' },
  { name: 'sha256', type: 'text' },
  { name: 'content', type: 'bytea' },
];

/** The fixed columns of each shape that is not typed rows. */
export const FIXED_COLUMNS: Readonly<Record<Exclude<OutputShape, 'rows'>, readonly FixedColumn[]>> = {
  lines: LINE_COLUMNS,
  'json-document': JSON_DOCUMENT_COLUMNS,
  'xml-document': XML_DOCUMENT_COLUMNS,
  file: DOCUMENT_COLUMNS,
};
