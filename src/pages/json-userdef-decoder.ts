/**
 * json_userdef(_compact) pages (docs/report-export-service.md "Output types"; docs/loaded-tables.md "Output types"):
 * one `page, document jsonb` row per page, or with `target.rowsAt` (an RFC 6901 pointer) the array of rows there,
 * decoded as the `data` of a json page. A page is gathered whole (bounded by maxValueBytes): such a document has no
 * row boundaries to stream by, and jsonb is taken whole anyway.
 */
import { writeEscapedBytes } from './copy-text.ts';
import { LF } from './bytes.ts';
import { PageFormatError } from './errors.ts';
import { JsonPageDecoder } from './json-decoder.ts';
import { JsonValueScanner, NEED } from './json-values.ts';
import { skipWs } from './bytes.ts';
import type { PageDecoder, PageMeta } from './page-decoder.ts';
import { valueTooLargeError, type DecoderLimits } from './value-limit.ts';
import type { PlanRows } from './rows-plan.ts';
import { JSON_DOCUMENT_COLUMNS } from './fixed-columns.ts';

/** Bytes escaped per yielded Buffer when a document is written out. */
const SLICE = 1 << 20;

/**
 * Splits an RFC 6901 JSON pointer into its reference tokens (`~1` -> `/`, `~0` -> `~`).
 * @throws Error when `pointer` is neither empty nor starts with '/'
 */
export function parseJsonPointer(pointer: string): string[] {
  if (pointer === '') return [];
  if (!pointer.startsWith('/')) throw new Error(`a JSON pointer starts with "/": ${pointer}`);
  return pointer
    .slice(1)
    .split('/')
    .map((t) => t.replaceAll('~1', '/').replaceAll('~0', '~'));
}

/** The whole page; a page beyond `limit` bytes (report.maxValueBytes) fails, as a value that large would. */
async function gather(body: AsyncIterable<Uint8Array>, page: number, limit: number): Promise<Buffer> {
  const parts: Buffer[] = [];
  let bytes = 0;
  for await (const c of body) {
    bytes += c.length;
    if (bytes > limit) throw valueTooLargeError({ page, row: 1, column: undefined, bytes, limit });
    parts.push(Buffer.isBuffer(c) ? c : Buffer.from(c));
  }
  return Buffer.concat(parts);
}

/** Checks that `page` is JSON; throws a PageFormatError naming the page and V8's place of the problem. */
function checkJson(doc: Buffer, page: number): void {
  try {
    JSON.parse(doc.toString('utf8'));
  } catch (err) {
    const m = /position (\d+)/.exec((err as Error).message);
    throw new PageFormatError(
      `not valid JSON: ${(err as Error).message}`,
      { page, ...(m ? { offset: Number(m[1]) } : {}) },
      { cause: err },
    );
  }
}

/** The json_userdef document decoder: one `page, document` row per page. */
export class JsonDocumentPageDecoder implements PageDecoder {
  readonly outputType: 'json_userdef' | 'json_userdef_compact';
  readonly copyFormat = 'text' as const;
  readonly writesBinary = false;
  readonly format = 'text' as const;
  /** The shape is fixed and nothing is inferred: there is nothing to plan (rows-plan.ts). */
  planRows(): void {}
  readonly columns = JSON_DOCUMENT_COLUMNS.map((c) => c.name);
  readonly fixedColumns = JSON_DOCUMENT_COLUMNS;
  readonly kinds = [0, 0];
  inspect = true;
  rows = 0;
  private readonly limits: DecoderLimits;

  constructor(outputType: 'json_userdef' | 'json_userdef_compact', limits: DecoderLimits) {
    this.outputType = outputType;
    this.limits = limits;
  }

  async *decodePage(body: AsyncIterable<Uint8Array>, page: number, _meta?: PageMeta): AsyncGenerator<Buffer> {
    const doc = await gather(body, page, this.limits.maxValueBytes);
    const start = skipWs(doc, 0, doc.length);
    if (start === doc.length)
      throw new PageFormatError('empty page: a json_userdef page must hold a JSON document', { page });
    checkJson(doc, page);
    yield Buffer.from(`${page}\t`);
    for (let s = 0; s < doc.length; s += SLICE) {
      const e = Math.min(doc.length, s + SLICE);
      const out = Buffer.allocUnsafe(2 * (e - s));
      yield out.subarray(0, writeEscapedBytes(doc, s, e, out, 0));
    }
    yield Buffer.from([LF]);
    this.rows++;
  }
}

/** The json_userdef rows decoder (`target.rowsAt`): typed rows from the array at the pointer of every page. */
export class JsonUserdefRowsPageDecoder implements PageDecoder {
  readonly outputType: 'json_userdef' | 'json_userdef_compact';
  readonly copyFormat = 'text' as const;
  readonly writesBinary = false;
  readonly format = 'text' as const;
  private readonly inner: JsonPageDecoder;
  private readonly tokens: string[];
  private readonly pointer: string;
  private readonly sc = new JsonValueScanner();
  private readonly limits: DecoderLimits;

  constructor(outputType: 'json_userdef' | 'json_userdef_compact', rowsAt: string, limits: DecoderLimits) {
    this.outputType = outputType;
    this.pointer = rowsAt;
    this.tokens = parseJsonPointer(rowsAt);
    this.limits = limits;
    this.inner = new JsonPageDecoder('json', limits);
  }

  get columns(): readonly string[] | undefined {
    return this.inner.columns;
  }
  get kinds(): readonly number[] {
    return this.inner.kinds;
  }
  get rows(): number {
    return this.inner.rows;
  }
  get inspect(): boolean {
    return this.inner.inspect;
  }

  /** See {@link PageDecoder.planRows}: the rows at the pointer are decoded as json rows, in text format only. */
  planRows(plan: PlanRows): void {
    this.inner.planRows((columns) => {
      const { inspect, fit } = plan(columns);
      return { inspect, fit };
    });
  }

  async *decodePage(body: AsyncIterable<Uint8Array>, page: number, _meta?: PageMeta): AsyncGenerator<Buffer> {
    const doc = await gather(body, page, this.limits.maxValueBytes);
    const [s, e] = this.locate(doc, page);
    const shift = s - 8; // the inner decoder sees `{"data":` before the array
    async function* wrapped(): AsyncGenerator<Buffer> {
      yield Buffer.from('{"data":');
      yield doc.subarray(s, e);
      yield Buffer.from('}');
    }
    try {
      yield* this.inner.decodePage(wrapped(), page);
    } catch (err) {
      if (!(err instanceof PageFormatError)) throw err;
      const offset = err.where.offset === undefined ? undefined : err.where.offset + shift;
      throw new PageFormatError(
        `${err.what} (in the array at ${this.pointer})`,
        { ...err.where, ...(offset === undefined ? {} : { offset }) },
        { cause: err },
      );
    }
  }

  /** Finds the array at the pointer: its [start, end) in `doc`. */
  private locate(doc: Buffer, page: number): [number, number] {
    const sc = this.sc;
    sc.page = page;
    sc.row = undefined;
    sc.base = 0;
    const n = doc.length;
    const missing = (what: string): never => {
      throw new PageFormatError(`no array of rows at rowsAt ${this.pointer}: ${what}`, { page });
    };
    let i = skipWs(doc, 0, n);
    if (i >= n) missing('the page is empty');
    let path = '';
    for (const token of this.tokens) {
      const c = doc[i];
      if (c === 0x7b) {
        i = this.member(doc, i, n, token);
        if (i < 0) missing(`${path || 'the document'} has no member "${token}"`);
      } else if (c === 0x5b && /^(0|[1-9][0-9]*)$/.test(token)) {
        i = this.element(doc, i, n, Number(token));
        if (i < 0) missing(`${path || 'the document'} has no element ${token}`);
      } else {
        missing(
          `${path || 'the document'} is not an object` + (c === 0x5b ? ` (an array, and "${token}" is no index)` : ''),
        );
      }
      path += `/${token}`;
    }
    if (doc[i] !== 0x5b) missing(`${path} is not an array`);
    const e = sc.skip(doc, i, n, 0);
    if (e === NEED) throw new PageFormatError(`the page ends inside the array at ${this.pointer}`, { page, offset: n });
    return [i, e];
  }

  /** In the object at doc[i]: the start of member `name`'s value, or -1. */
  private member(doc: Buffer, i: number, n: number, name: string): number {
    const sc = this.sc;
    i = skipWs(doc, i + 1, n);
    if (doc[i] === 0x7d) return -1;
    for (;;) {
      if (doc[i] !== 0x22) sc.fail('expected a member name', i);
      const ke = sc.stringEnd(doc, i + 1, n);
      if (ke === NEED) sc.fail('the page ends inside a member name', i);
      const key = JSON.parse(doc.toString('utf8', i, ke)) as string;
      i = skipWs(doc, ke, n);
      if (doc[i] !== 0x3a) sc.fail("expected ':'", i);
      i = skipWs(doc, i + 1, n);
      if (key === name) return i;
      i = sc.skip(doc, i, n, 0);
      if (i === NEED) sc.fail('the page ends inside a value', n);
      i = skipWs(doc, i, n);
      if (doc[i] === 0x7d) return -1;
      if (doc[i] !== 0x2c) sc.fail("expected ',' or '}'", i);
      i = skipWs(doc, i + 1, n);
    }
  }

  /** In the array at doc[i]: the start of element `index`, or -1. */
  private element(doc: Buffer, i: number, n: number, index: number): number {
    const sc = this.sc;
    i = skipWs(doc, i + 1, n);
    if (doc[i] === 0x5d) return -1;
    for (let k = 0; ; k++) {
      if (k === index) return i;
      i = sc.skip(doc, i, n, 0);
      if (i === NEED) sc.fail('the page ends inside a value', n);
      i = skipWs(doc, i, n);
      if (doc[i] === 0x5d) return -1;
      if (doc[i] !== 0x2c) sc.fail("expected ',' or ']'", i);
      i = skipWs(doc, i + 1, n);
    }
  }
}
