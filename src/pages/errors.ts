/** The error of page bytes without the shape docs/report-export-service.md "Output page shapes" promises. */
import { EtlError } from '../errors.ts';

/** Where in a page a {@link PageFormatError} happened. */
export interface PageFormatDetails {
  /** Page number, 1-based (docs/report-export-service.md "Endpoints" #3). */
  page: number;
  /** Data row within the page, 1-based (the txt header is not counted). */
  row?: number;
  /** Byte offset within the page body, counted from its first byte (BOM included). */
  offset?: number;
}

/** Page bytes are malformed: code PAGE_FORMAT, stage 'parse', details { page, row?, offset? }, never retryable. */
export class PageFormatError extends EtlError {
  /** What is wrong, without the place. */
  readonly what: string;
  readonly where: PageFormatDetails;
  constructor(what: string, where: PageFormatDetails, options: { cause?: unknown } = {}) {
    const parts = [`page ${where.page}`];
    if (where.row !== undefined) parts.push(`row ${where.row}`);
    if (where.offset !== undefined) parts.push(`byte offset ${where.offset}`);
    const details: Record<string, unknown> = { page: where.page };
    if (where.row !== undefined) details.row = where.row;
    if (where.offset !== undefined) details.offset = where.offset;
    super('PAGE_FORMAT', `${parts.join(', ')}: ${what}`, {
      stage: 'parse',
      retryable: false,
      details,
      cause: options.cause,
    });
    this.what = what;
    this.where = where;
  }
}
