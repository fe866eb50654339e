/**
 * Document pages (docs/report-export-service.md "Output types": pdf, excel-*, word-docx) -> one COPY text row per page,
 * `page, file_name, content_type, content, bytes, sha256`. The content streams through as bytea hex, chunk by chunk;
 * the checks of document-checks.ts throw before the row ends, which aborts the COPY.
 */
import { createHash } from 'node:crypto';
import { DOCUMENT_FORMATS, type DocumentOutputType } from '../vocabulary.ts';
import { CopyOutput, writeEscapedString } from './copy-text.ts';
import { checkContentType, checkEnd, checkSignature, tailBytes, TailKeeper } from './document-checks.ts';
import type { PageDecoder, PageMeta } from './page-decoder.ts';
import { DOCUMENT_COLUMNS } from './fixed-columns.ts';

/** Two ASCII hex digits per byte value, as one little-endian 16-bit unit (byte 0xAB -> 'a','b'). */
const HEX_PAIRS = new Uint16Array(256);
for (let v = 0; v < 256; v++) {
  const hex = v.toString(16).padStart(2, '0');
  HEX_PAIRS[v] = hex.charCodeAt(0) | (hex.charCodeAt(1) << 8);
}
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/**
 * `chunk` as lower-case hex, in a new Buffer of twice its length (or `into`), written through a table: no string, so
 * no hex strings pile up in V8's large-object space.
 */
export function hexOf(chunk: Buffer, into?: Buffer): Buffer {
  const out = into ? into.subarray(0, chunk.length * 2) : Buffer.allocUnsafeSlow(chunk.length * 2);
  if (!LITTLE_ENDIAN) {
    out.write(chunk.toString('hex'), 'latin1');
    return out;
  }
  const units = new Uint16Array(out.buffer, out.byteOffset, chunk.length);
  for (let i = 0; i < chunk.length; i++) units[i] = HEX_PAIRS[chunk[i]!]!;
  return out;
}

/**
 * How many content buffers the decoder reuses in turn: one is written again RING yields later, long after COPY's
 * backpressure let it reach the socket. Keeps a 200 MB page's hex from becoming garbage (docs/performance.md
 * "Documents").
 */
const RING = 32;
const RING_BUFFER_BYTES = 256 * 1024;

/** The columns in the order the COPY rows carry them. */
const COPY_ORDER = ['page', 'file_name', 'content_type', 'content', 'bytes', 'sha256'];

/** One archived page, as the run's document list records it. */
export interface ArchivedDocument {
  page: number;
  fileName: string;
  contentType: string;
  /** Length in bytes. */
  bytes: number;
  /** sha256 of the content, hex. */
  sha256: string;
}

/** Names a page's file: `<report>_<mandant>_<run time>_<page>.<ext>` (see {@link documentFileName}). */
export type FileNamer = (page: number) => string;

/**
 * The file name of a document page (docs/loaded-tables.md "Output types"): `<report>_<mandant>_<attempt start, UTC
 * yyyyMMddTHHmmssSSSZ>_<page>.<ext>`, the report without folders and extension, other than [A-Za-z0-9_-] as `_`.
 */
export function documentFileName(o: {
  report: string;
  mandant: string;
  runTime: Date;
  page: number;
  type: DocumentOutputType;
}): string {
  const base = o.report
    .split('/')
    .pop()!
    .replace(/\.(avw|avx)$/i, '');
  const time = o.runTime.toISOString().replace(/[-:.]/g, '');
  const safe = (s: string): string => s.replace(/[^A-Za-z0-9_-]+/g, '_');
  return `${safe(base)}_${safe(o.mandant)}_${time}_${o.page}.${DOCUMENT_FORMATS[o.type].extension}`;
}

/** The document decoder; see the file comment. */
export class DocumentPageDecoder implements PageDecoder {
  readonly outputType: DocumentOutputType;
  readonly copyFormat = 'text' as const;
  readonly writesBinary = false;
  readonly format = 'text' as const;
  /** The shape is fixed and nothing is inferred: there is nothing to plan (rows-plan.ts). */
  planRows(): void {}
  readonly columns = COPY_ORDER;
  readonly fixedColumns = DOCUMENT_COLUMNS;
  readonly kinds = [0, 0, 0, 0, 0, 0];
  inspect = true;
  rows = 0;
  /** The pages archived so far (complete and checked), in page order. */
  readonly documents: ArchivedDocument[] = [];
  private readonly fileName: FileNamer;
  /** Output buffers of the content, reused in turn (see {@link RING}). */
  private readonly ring: Buffer[] = [];
  private ringAt = 0;

  constructor(outputType: DocumentOutputType, fileName: FileNamer) {
    this.outputType = outputType;
    this.fileName = fileName;
  }

  async *decodePage(body: AsyncIterable<Uint8Array>, page: number, meta: PageMeta = {}): AsyncGenerator<Buffer> {
    const type = this.outputType;
    checkContentType(type, meta.contentType, page);
    const contentType = meta.contentType!;
    const fileName = this.fileName(page);
    const hash = createHash('sha256');
    const tail = new TailKeeper(tailBytes(type));
    let head: Buffer | undefined = Buffer.alloc(0);
    let bytes = 0;
    const prefix = new CopyOutput(256 + 6 * (fileName.length + contentType.length));
    prefix.pos += prefix.buf.write(`${page}\t`, prefix.pos, 'latin1');
    writeEscapedString(prefix, fileName);
    prefix.buf[prefix.pos++] = 0x09;
    writeEscapedString(prefix, contentType);
    prefix.pos += prefix.buf.write('\t\\\\x', prefix.pos, 'latin1');
    yield prefix.take()!;
    for await (const raw of body) {
      const chunk = Buffer.isBuffer(raw) ? raw : Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
      if (chunk.length === 0) continue;
      if (head !== undefined) {
        head = Buffer.concat([head, chunk.subarray(0, 8)]);
        if (head.length >= 5) {
          checkSignature(type, head, page);
          head = undefined;
        }
      }
      bytes += chunk.length;
      hash.update(chunk);
      tail.push(chunk);
      yield hexOf(chunk, this.ringBuffer(chunk.length * 2));
    }
    if (head !== undefined && bytes > 0) checkSignature(type, head, page);
    checkEnd(type, tail.bytes, bytes, page);
    const sha256 = hash.digest('hex');
    yield Buffer.from(`\t${bytes}\t${sha256}\n`, 'latin1');
    this.rows++;
    this.documents.push({ page, fileName, contentType, bytes, sha256 });
  }

  /** The next buffer of the ring, at least `bytes` long. */
  private ringBuffer(bytes: number): Buffer {
    let buf = this.ring[this.ringAt];
    if (buf === undefined || buf.length < bytes) {
      buf = Buffer.allocUnsafeSlow(Math.max(bytes, RING_BUFFER_BYTES));
      this.ring[this.ringAt] = buf;
    }
    this.ringAt = (this.ringAt + 1) % RING;
    return buf;
  }
}
