/**
 * Page decoders: page bytes (docs/report-export-service.md "Output page shapes") -> bytes that go straight into PostgreSQL
 * COPY FROM STDIN. The loader runs one COPY stream for all pages of a run and feeds it every Buffer that
 * {@link PageDecoder.decodePage} yields; `columns` and `kinds` tell it the table's columns and what types fit.
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
export { DEFAULT_MAX_VALUE_BYTES, type DecoderLimits } from './value-limit.ts';

export type { CopyFormat } from '../warehouse/row-source.ts';
export type { FixedColumn, PageDecoder, PageMeta } from './page-decoder.ts';
export { DocumentPageDecoder, documentFileName, type ArchivedDocument, type FileNamer } from './document-decoder.ts';

/** How a job wants its pages decoded besides the output type (jobs.yaml `report.maxValueBytes`, `target`). */
export interface DecoderOptions extends Partial<DecoderLimits> {
  /** json_userdef(_compact): JSON pointer to the array of rows (typed rows instead of one document per page). */
  rowsAt?: string | undefined;
  /** excel-xlsx_data: `rows` loads the first sheet as typed rows instead of archiving the workbook. */
  load?: 'document' | 'rows' | undefined;
  /** Document types: the file name of each page (default `page_<n>`). */
  fileName?: FileNamer | undefined;
}

/**
 * Makes the decoder for an output type (docs/report-export-service.md "Output types"; README "Output types" says what each loads as): txt ->
 * CSV pass-through, json and json_compact -> streaming JSON scanner, xml_query -> byte scanner (xml-fast.ts) with
 * saxes as the fallback, txt_cstr -> typed rows with C/Java escapes decoded, txt_all/txt_allcstr -> lines,
 * json_userdef(_compact) -> jsonb per page or typed rows at `rowsAt`, xml -> xml per page, documents -> bytea per
 * page (excel-xlsx_data with `load: rows` -> typed rows of the first sheet).
 * @param options.maxValueBytes the largest row (and so value) a page may hold, for json_userdef the largest page
 *   (report.maxValueBytes, default 64 MiB); documents and xml stream through and are not limited
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
