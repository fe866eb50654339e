/**
 * What a document page (docs/report-export-service.md "Output types") must be before it is archived: the IANA
 * Content-Type of its type (vocabulary DOCUMENT_FORMATS), the file signature at its start and the end marker of a
 * complete file (`%%EOF` of a PDF, a zip's end-of-central-directory record), checked on the stream: first bytes, tail.
 */
import { DOCUMENT_FORMATS, type DocumentOutputType } from '../vocabulary.ts';
import { PageFormatError } from './errors.ts';

const PDF_MAGIC = Buffer.from('%PDF-');
const ZIP_MAGIC = Buffer.from([0x50, 0x4b, 0x03, 0x04]);
const PDF_END = Buffer.from('%%EOF');
const ZIP_END = Buffer.from([0x50, 0x4b, 0x05, 0x06]);

/** Bytes at the end of a document searched for its end marker (zip: the EOCD record may follow a 64 KiB comment). */
export function tailBytes(type: DocumentOutputType): number {
  return type === 'pdf' ? 1024 : 22 + 65_535;
}

/** The media type of a Content-Type header (before any parameter), lower case; '' when absent. */
export function mediaType(contentType: string | undefined): string {
  return (contentType ?? '').split(';')[0]!.trim().toLowerCase();
}

/**
 * Checks a page answer's Content-Type against the document type.
 * @throws PageFormatError naming the page, the Content-Type sent and the one expected
 */
export function checkContentType(type: DocumentOutputType, contentType: string | undefined, page: number): void {
  const expected = DOCUMENT_FORMATS[type].contentType;
  if (mediaType(contentType) !== expected) {
    throw new PageFormatError(
      `Content-Type ${contentType === undefined ? '(none)' : JSON.stringify(contentType)} ` +
        `does not fit output type ${type} (expected ${expected})`,
      { page },
    );
  }
}

/**
 * Checks the first bytes of a document (at least 5, or all of a shorter one).
 * @throws PageFormatError when the signature is not the type's
 */
export function checkSignature(type: DocumentOutputType, head: Buffer, page: number): void {
  const magic = type === 'pdf' ? PDF_MAGIC : ZIP_MAGIC;
  if (head.length < magic.length || !head.subarray(0, magic.length).equals(magic)) {
    const what =
      type === 'pdf'
        ? 'a PDF starts with %PDF-'
        : `an ${DOCUMENT_FORMATS[type].extension} file is a zip package and starts with PK\\x03\\x04`;
    throw new PageFormatError(
      `not a ${DOCUMENT_FORMATS[type].extension} document: ${what}, ` +
        `this page starts with ${JSON.stringify(head.subarray(0, 8).toString('latin1'))}`,
      { page, offset: 0 },
    );
  }
}

/**
 * Checks the end of a complete document.
 * @param tail the last {@link tailBytes} bytes (or all of a shorter document)
 * @param bytes the document's length
 * @throws PageFormatError "empty document" or "truncated …"
 */
export function checkEnd(type: DocumentOutputType, tail: Buffer, bytes: number, page: number): void {
  if (bytes === 0) throw new PageFormatError(`empty document: the ${type} page has no bytes`, { page });
  if (type === 'pdf') {
    if (tail.lastIndexOf(PDF_END) < 0)
      throw new PageFormatError(`truncated PDF: no %%EOF in its last ${tail.length} of ${bytes} bytes`, {
        page,
        offset: bytes,
      });
    return;
  }
  if (tail.lastIndexOf(ZIP_END) < 0) {
    throw new PageFormatError(
      `truncated ${DOCUMENT_FORMATS[type].extension} package: ` +
        `the zip has no end-of-central-directory record (${bytes} bytes)`,
      { page, offset: bytes },
    );
  }
}

/** Keeps the last `size` bytes of a stream, copying as little as it can. */
export class TailKeeper {
  private tail = Buffer.alloc(0);
  private readonly size: number;
  constructor(size: number) {
    this.size = size;
  }
  push(chunk: Buffer): void {
    if (chunk.length >= this.size) this.tail = Buffer.from(chunk.subarray(chunk.length - this.size));
    else {
      const keep = Math.min(this.tail.length, this.size - chunk.length);
      this.tail = Buffer.concat([this.tail.subarray(this.tail.length - keep), chunk]);
    }
  }
  get bytes(): Buffer {
    return this.tail;
  }
}
