/**
 * xml pages -> one `page, document xml` row per page (docs/report-export-service.md "Output types"). Each chunk is
 * checked by saxes and written COPY-escaped at once; a page that is not well-formed fails naming line and column.
 */
import { SaxesParser } from 'saxes';
import { StringDecoder } from 'node:string_decoder';
import { writeEscapedBytes } from './copy-text.ts';
import { LF } from './bytes.ts';
import { PageFormatError } from './errors.ts';
import type { PageDecoder, PageMeta } from './page-decoder.ts';
import { XML_DOCUMENT_COLUMNS } from './fixed-columns.ts';

const UTF8_BOM = Buffer.from([0xef, 0xbb, 0xbf]);

/** The xml decoder; see the file comment. */
export class XmlDocumentPageDecoder implements PageDecoder {
  readonly outputType = 'xml' as const;
  readonly copyFormat = 'text' as const;
  readonly writesBinary = false;
  readonly format = 'text' as const;
  /** The shape is fixed and nothing is inferred: there is nothing to plan (rows-plan.ts). */
  planRows(): void {}
  readonly columns = XML_DOCUMENT_COLUMNS.map((c) => c.name);
  readonly fixedColumns = XML_DOCUMENT_COLUMNS;
  readonly kinds = [0, 0];
  inspect = true;
  rows = 0;

  async *decodePage(body: AsyncIterable<Uint8Array>, page: number, _meta?: PageMeta): AsyncGenerator<Buffer> {
    const parser = new SaxesParser({ xmlns: false, position: true });
    const fail = (message: string): never => {
      const m = /^(?:[^:\d][^:]*:)?(\d+):(\d+): (.*)$/s.exec(message);
      const [line, column, what] = m ? [m[1], m[2], m[3]] : [String(parser.line), String(parser.column), message];
      throw new PageFormatError(`XML is not well-formed at line ${line}, column ${column}: ${what}`, { page });
    };
    parser.on('error', (err) => fail(err.message));
    const text = new StringDecoder('utf8');
    let bytes = 0;
    let first = true;
    yield Buffer.from(`${page}\t`);
    for await (const raw of body) {
      let chunk = Buffer.isBuffer(raw) ? raw : Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
      if (first && chunk.length > 0) {
        first = false;
        if (chunk.subarray(0, 3).equals(UTF8_BOM)) chunk = chunk.subarray(3);
      }
      bytes += chunk.length;
      parser.write(text.write(chunk));
      const out = Buffer.allocUnsafe(2 * chunk.length);
      yield out.subarray(0, writeEscapedBytes(chunk, 0, chunk.length, out, 0));
    }
    if (bytes === 0) throw new PageFormatError('empty page: an xml page must hold an XML document', { page });
    parser.write(text.end());
    parser.close();
    yield Buffer.from([LF]);
    this.rows++;
  }
}
