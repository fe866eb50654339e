/**
 * Page renderers shared types and dispatch (docs/report-export-service.md "Output page shapes", "Output types"). A text
 * renderer is a generator of chunks (~32 KiB), so a page is streamed and never built whole in memory; the same rows
 * always give the same bytes. Documents (pdf, excel, word) are rendered whole by render-documents.ts.
 */
import {
  DOCUMENT_FORMATS,
  OUTPUT_TYPES,
  isDocumentType,
  type DocumentOutputType,
  type OutputType,
} from '../vocabulary.ts';
import type { PageRenderer } from './render-context.ts';
import { renderJson } from './render-json.ts';
import { renderTxtAll, renderTxtCstr } from './render-text-variants.ts';
import { renderTxt } from './render-txt.ts';
import { renderJsonUserdef, renderXmlUserdef } from './render-userdef.ts';
import { renderXml } from './render-xml.ts';

/** Output types the simulator serves: every type of the service's table. */
export const SIMULATED_OUTPUT_TYPES = OUTPUT_TYPES;
export type SimulatedOutputType = OutputType;
/** The output types rendered as a stream of text chunks (every type but the documents). */
export type StreamedOutputType = Exclude<OutputType, DocumentOutputType>;

export { CHUNK_CHARS, type PageRenderer, type RenderContext } from './render-context.ts';

/**
 * Content-Type of a page per output type: docs/report-export-service.md "Output page shapes" for txt, xml_query and
 * json; for the others the service's description shows none, and the simulator sends text/plain (txt variants),
 * application/json (json_userdef), text/xml (xml) and the IANA type of each document (vocabulary DOCUMENT_FORMATS).
 */
export const PAGE_CONTENT_TYPES: Record<SimulatedOutputType, string> = {
  json: 'application/json',
  json_compact: 'application/json',
  txt: 'text/plain',
  xml_query: 'text/xml',
  txt_all: 'text/plain',
  txt_cstr: 'text/plain',
  txt_allcstr: 'text/plain',
  xml: 'text/xml',
  json_userdef: 'application/json',
  json_userdef_compact: 'application/json',
  pdf: DOCUMENT_FORMATS.pdf.contentType,
  'excel-xlsx_data': DOCUMENT_FORMATS['excel-xlsx_data'].contentType,
  'excel-xlsx_matrix': DOCUMENT_FORMATS['excel-xlsx_matrix'].contentType,
  'excel-xlsx': DOCUMENT_FORMATS['excel-xlsx'].contentType,
  'word-docx': DOCUMENT_FORMATS['word-docx'].contentType,
};

/** Whether pages of `t` carry Content-Length (the text types; json and xml types are chunked, documents not). */
export function hasContentLength(t: SimulatedOutputType): boolean {
  return t === 'txt' || t === 'txt_all' || t === 'txt_cstr' || t === 'txt_allcstr';
}

/** Whether `t` is rendered as a stream of text chunks by {@link pageRenderer}. */
export function isStreamed(t: SimulatedOutputType): t is StreamedOutputType {
  return !isDocumentType(t);
}

/** The renderer of a streamed output type. */
export function pageRenderer(outputType: StreamedOutputType): PageRenderer {
  switch (outputType) {
    case 'json':
      return (d, f, t, c) => renderJson(d, f, t, c, true);
    case 'json_compact':
      return (d, f, t, c) => renderJson(d, f, t, c, false);
    case 'txt':
      return renderTxt;
    case 'xml_query':
      return renderXml;
    case 'txt_cstr':
      return renderTxtCstr;
    case 'txt_all':
      return renderTxtAll(false);
    case 'txt_allcstr':
      return renderTxtAll(true);
    case 'json_userdef':
      return (d, f, t, c) => renderJsonUserdef(d, f, t, c, true);
    case 'json_userdef_compact':
      return (d, f, t, c) => renderJsonUserdef(d, f, t, c, false);
    case 'xml':
      return renderXmlUserdef;
  }
}
