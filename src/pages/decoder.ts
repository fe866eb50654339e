/**
 * Page decoders: page bytes (spec "Output page shapes") -> bytes that go straight into PostgreSQL
 * COPY FROM STDIN. The loader runs one COPY stream for all pages of a run and feeds it every Buffer that
 * {@link PageDecoder.decodePage} yields; `columns` and `kinds` tell it the table's columns and what types fit.
 */
import type { OutputType } from '../vocabulary.ts';
import type { PageDecoder } from './page-decoder.ts';
import { DEFAULT_MAX_VALUE_BYTES, type DecoderLimits } from './value-limit.ts';
import { JsonPageDecoder } from './json-decoder.ts';
import { TxtPageDecoder } from './txt-decoder.ts';
import { XmlQueryPageDecoder } from './xml-decoder.ts';

export { KIND } from './kinds.ts';
export { bomLength } from './bom.ts';
export { PageFormatError } from './errors.ts';
export { DEFAULT_MAX_VALUE_BYTES, type DecoderLimits } from './value-limit.ts';

export type { CopyFormat } from '../warehouse/row-source.ts';
export type { PageDecoder } from './page-decoder.ts';

/**
 * Makes the decoder for an output type (spec "Output types"): txt -> CSV pass-through, json and
 * json_compact -> streaming JSON scanner, xml_query -> byte scanner (xml-fast.ts) with saxes as the fallback.
 * @param limits the largest value a page may hold (report.maxValueBytes, default 64 MiB)
 */
export function makePageDecoder(outputType: OutputType, limits: DecoderLimits = { maxValueBytes: DEFAULT_MAX_VALUE_BYTES }): PageDecoder {
  switch (outputType) {
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
