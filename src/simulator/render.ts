/**
 * Page renderers shared types and dispatch (spec "Output page shapes"). A renderer is a generator of
 * chunks (~32 KiB), so a page is streamed and never built whole in memory; the same rows always give the
 * same bytes.
 */
import type { PageRenderer } from './render-context.ts';
import { renderJson } from './render-json.ts';
import { renderTxt } from './render-txt.ts';
import { renderXml } from './render-xml.ts';

/** Output types the simulator serves (spec "Output types": the generic ones plus txt). */
export const SIMULATED_OUTPUT_TYPES = ['json', 'json_compact', 'txt', 'xml_query'] as const;
export type SimulatedOutputType = (typeof SIMULATED_OUTPUT_TYPES)[number];

export { CHUNK_CHARS, type PageRenderer, type RenderContext } from './render-context.ts';

/** Content-Type of a page per output type (spec "Output page shapes"). */
export const PAGE_CONTENT_TYPES: Record<SimulatedOutputType, string> = {
  json: 'application/json',
  json_compact: 'application/json',
  txt: 'text/plain',
  xml_query: 'text/xml',
};

/** The renderer of an output type. */
export function pageRenderer(outputType: SimulatedOutputType): PageRenderer {
  switch (outputType) {
    case 'json':
      return (d, f, t, c) => renderJson(d, f, t, c, true);
    case 'json_compact':
      return (d, f, t, c) => renderJson(d, f, t, c, false);
    case 'txt':
      return renderTxt;
    case 'xml_query':
      return renderXml;
  }
}
