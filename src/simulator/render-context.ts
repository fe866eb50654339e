/** What the page renderers share (render.ts dispatches to them): their context, their signature, their chunk size. */
import type { ReportData } from './catalogue.ts';
import type { ZonedFormatter } from './time-format.ts';

/** What a renderer needs besides the rows. */
export interface RenderContext {
  /** Zone of the timestamps (txt: local wall time; json/xml: ISO with this zone's offset). */
  zone: ZonedFormatter;
  /** 1-based page number (txt picks its byte order mark by it). */
  page: number;
  /** The report's path (folders/name.ext), for the types that show it (txt_all, json_userdef, xml, documents). */
  report?: string;
  /** Rows per page of the job (txt_all numbers its groups across pages). */
  paging?: number;
}

/** Renders rows [from, to) of `data` as chunks of a page. */
export type PageRenderer = (
  data: ReportData,
  from: number,
  to: number,
  ctx: RenderContext,
) => Generator<string | Buffer>;

/** Chunk size the renderers aim for, in UTF-16 code units. */
export const CHUNK_CHARS = 32_768;
