/**
 * Page renderers shared types and dispatch (spec "Output page shapes"). A renderer is a generator of
 * chunks (~32 KiB), so a page is streamed and never built whole in memory; the same rows always give the
 * same bytes.
 */
import type { ReportData } from './catalogue.ts';
import type { ZonedFormatter } from './time-format.ts';
import { renderJson } from './render-json.ts';
import { renderTxt } from './render-txt.ts';
import { renderXml } from './render-xml.ts';

/** Output types the simulator serves (spec "Output types": the generic ones plus txt). */
export const SIMULATED_OUTPUT_TYPES = ['json', 'json_compact', 'txt', 'xml_query'] as const;
export type SimulatedOutputType = (typeof SIMULATED_OUTPUT_TYPES)[number];

/** What a renderer needs besides the rows. */
export interface RenderContext {
  /** Zone of the timestamps (txt: local wall time; json/xml: ISO with this zone's offset). */
  zone: ZonedFormatter;
  /** 1-based page number (txt picks its byte order mark by it). */
  page: number;
}

/** Renders rows [from, to) of `data` as chunks of a page. */
export type PageRenderer = (data: ReportData, from: number, to: number, ctx: RenderContext) => Generator<string | Buffer>;

/** Chunk size the renderers aim for, in UTF-16 code units. */
export const CHUNK_CHARS = 32_768;

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
