/**
 * Page decoders: page bytes (docs/report-export-service.md "Output page shapes") -> bytes for PostgreSQL COPY FROM
 * STDIN, one COPY stream per run fed every Buffer that {@link PageDecoder.decodePage} yields.
 */
import { isDocumentType, type OutputType } from '../vocabulary.ts';
import type { PageDecoder } from './page-decoder.ts';
import { DEFAULT_MAX_VALUE_BYTES, type DecoderLimits } from './value-limit.ts';
import { DocumentPageDecoder, type FileNamer } from './document-decoder.ts';
import { JsonPageDecoder } from './json-decoder.ts';
import { JsonDocumentPageDecoder, JsonUserdefRowsPageDecoder } from './json-userdef-decoder.ts';
import { TxtAllPageDecoder } from './txt-all-decoder.ts';
import { TxtCstrPageDecoder } from './txt-cstr-decoder.ts';
import { TxtPageDecoder } from './txt-decoder.ts';
import { XlsxRowsPageDecoder } from './xlsx-rows-decoder.ts';
import { XmlDocumentPageDecoder } from './xml-document-decoder.ts';
import { XmlQueryPageDecoder } from './xml-decoder.ts';

export { KIND } from './kinds.ts';
export { bomLength } from './bytes.ts';
export { PageFormatError } from './errors.ts';
export type { PageDecoder } from './page-decoder.ts';
export { DocumentPageDecoder, documentFileName } from './document-decoder.ts';

/** jobs.yaml's `report.maxValueBytes`, `target.rowsAt` (json_userdef), `target.load` (excel-xlsx_data), file names. */
export interface DecoderOptions extends Partial<DecoderLimits> {
  rowsAt?: string | undefined;
  load?: 'document' | 'rows' | undefined;
  fileName?: FileNamer | undefined;
}

/**
 * Makes the decoder of an output type (docs/report-export-service.md "Output types"; docs/loaded-tables.md
 * "Output types"). Each format has at most a fast path for the shape servers write and a general path: txt passes
 * rows through (the record scanner for binary format, txt_cstr, txt_all), json learns the bytes before each value
 * (a row by key names), xml_query scans bytes (saxes).
 * @param options.maxValueBytes the largest row a page may hold, for json_userdef the largest page (default 64 MiB)
 */
export function makePageDecoder(outputType: OutputType, options: DecoderOptions = {}): PageDecoder {
  const limits: DecoderLimits = { maxValueBytes: options.maxValueBytes ?? DEFAULT_MAX_VALUE_BYTES };
  if (isDocumentType(outputType)) {
    if (outputType === 'excel-xlsx_data' && options.load === 'rows') return new XlsxRowsPageDecoder();
    return new DocumentPageDecoder(outputType, options.fileName ?? ((page) => `page_${page}`));
  }
  switch (outputType) {
    case 'txt_cstr':
      return new TxtCstrPageDecoder(limits);
    case 'txt_all':
    case 'txt_allcstr':
      return new TxtAllPageDecoder(outputType, limits);
    case 'json_userdef':
    case 'json_userdef_compact':
      return options.rowsAt === undefined
        ? new JsonDocumentPageDecoder(outputType, limits)
        : new JsonUserdefRowsPageDecoder(outputType, options.rowsAt, limits);
    case 'xml':
      return new XmlDocumentPageDecoder();
    case 'txt':
      return new TxtPageDecoder(limits);
    case 'json':
    case 'json_compact':
      return new JsonPageDecoder(outputType, limits);
    case 'xml_query':
      return new XmlQueryPageDecoder(limits);
    default:
      throw new Error(`no page decoder for output type ${String(outputType)}`);
  }
}
