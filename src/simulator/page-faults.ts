/**
 * Bad pages on request, for tests and dry runs of the error paths (docs/loaded-tables.md "Output types"): report
 * parameters that the simulator reads itself, besides the report's own.
 * - `SIM_FAULT`: `bad-escape` (the first quoted value of the page's third line gets the unknown escape `\q`),
 *   `invalid-utf8` and `nul-byte` (that value gets the byte 0xff, which is never UTF-8, or a NUL byte: PostgreSQL's
 *   text takes neither),
 *   `no-rows-array` (json_userdef: the rows member `orders` is renamed `bestellungen`), `broken-xml` (xml: a stray
 *   `<oops>` before the closing `</orders>`, so the page is not well-formed), `empty-document` (the page has no bytes),
 *   `truncated-document` (only the first half of the page is sent, with a Content-Length that says so),
 *   `wrong-content-type` (the page is sent as `text/html`); a server that is broken or hostile in time or volume:
 *   `trickle` (the page's headers come at once, then one byte every {@link TRICKLE_INTERVAL_MS}), `endless-pages`
 *   (every page past the last is answered with the last page again, never 404, while `pages=` stays the true count),
 *   `extra-row` (`rows=` announces one row fewer than the pages hold: the last page's last row is one too many).
 * - `SIM_FAULT_PAGE`: the page that gets it (default 1; `endless-pages` and `extra-row` concern the whole job).
 * - `PAD_MB`: pdf pages carry an attachment of that many MB (1e6 bytes) of filler, for benchmarks.
 */

/** The kinds of `SIM_FAULT`. */
export const PAGE_FAULTS = [
  'bad-escape',
  'invalid-utf8',
  'nul-byte',
  'no-rows-array',
  'broken-xml',
  'empty-document',
  'truncated-document',
  'wrong-content-type',
  'trickle',
  'endless-pages',
  'extra-row',
] as const;
/** One of {@link PAGE_FAULTS}. */
export type PageFault = (typeof PAGE_FAULTS)[number];

/** Pause between two bytes of a `trickle` page, in ms: a server that never pauses long enough for an idle timeout. */
export const TRICKLE_INTERVAL_MS = 2_000;

/** A fault asked for by the parameters, on one page. */
export interface PageFaultRequest {
  kind: PageFault;
  page: number;
}

/**
 * Reads `SIM_FAULT` and `SIM_FAULT_PAGE`.
 * @returns the fault, undefined when none is asked for, or a string saying what is wrong with the parameters
 */
export function pageFaultOf(parameters: Record<string, string>): PageFaultRequest | string | undefined {
  const kind = parameters.SIM_FAULT;
  if (kind === undefined) return undefined;
  if (!(PAGE_FAULTS as readonly string[]).includes(kind))
    return `Invalid value for parameter SIM_FAULT: '${kind}' (expected ${PAGE_FAULTS.join(', ')})`;
  const page = parameters.SIM_FAULT_PAGE ?? '1';
  if (!/^[1-9]\d{0,8}$/.test(page))
    return `Invalid value for parameter SIM_FAULT_PAGE: '${page}' (expected a page number)`;
  return { kind: kind as PageFault, page: Number(page) };
}

/** Applies a content fault to the bytes of a page (the Content-Type fault is the handler's). */
export function applyPageFault(kind: PageFault, page: Buffer): Buffer {
  switch (kind) {
    case 'bad-escape':
      return intoThirdLine(page, Buffer.from('\\q'));
    case 'invalid-utf8':
      return intoThirdLine(page, Buffer.from([0xff]));
    case 'nul-byte':
      return intoThirdLine(page, Buffer.from([0]));
    case 'no-rows-array': {
      const at = page.indexOf('"orders"');
      return at < 0
        ? page
        : Buffer.concat([page.subarray(0, at), Buffer.from('"bestellungen"'), page.subarray(at + 8)]);
    }
    case 'broken-xml': {
      const at = page.lastIndexOf('</orders>');
      return at < 0 ? page : Buffer.concat([page.subarray(0, at), Buffer.from('<oops>'), page.subarray(at)]);
    }
    case 'empty-document':
      return Buffer.alloc(0);
    case 'truncated-document':
      return page.subarray(0, Math.floor(page.length / 2));
    case 'wrong-content-type':
    case 'trickle':
    case 'endless-pages':
    case 'extra-row':
      return page;
  }
}

/** `bytes` put at the start of the first quoted value of the page's third line (the page as it was without one). */
function intoThirdLine(page: Buffer, bytes: Buffer): Buffer {
  const header = page.indexOf('\n');
  const quote = page.indexOf('"', page.indexOf('\n', header + 1) + 1);
  if (header < 0 || quote < 0) return page;
  return Buffer.concat([page.subarray(0, quote + 1), bytes, page.subarray(quote + 1)]);
}

/** Bytes of the pdf filler attachment asked for by `PAD_MB` (0 when not given or not a number). */
export function padBytesOf(parameters: Record<string, string>): number {
  const mb = parameters.PAD_MB;
  return mb !== undefined && /^\d{1,5}$/.test(mb) ? Number(mb) * 1_000_000 : 0;
}
