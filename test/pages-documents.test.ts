/**
 * The document decoder (pages/document-decoder.ts) without a server: the COPY row it writes (hex content, length and
 * sha256 after the content), and the checks of Content-Type, signature and end, whatever the chunk size.
 */
import { createHash, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { DocumentPageDecoder, hexOf } from '../src/pages/document-decoder.ts';
import { chunked, parseCopyText } from './pages-support.ts';

const PDF = Buffer.concat([Buffer.from('%PDF-1.7\n'), randomBytes(5000), Buffer.from('\n%%EOF\n')]);

async function decode(
  page: Buffer,
  contentType: string | undefined,
  size: number | 'random' = 'random',
): Promise<Buffer> {
  const d = new DocumentPageDecoder('pdf', (p) => `Orders_7777_x_${p}.pdf`);
  const parts: Buffer[] = [];
  for await (const b of d.decodePage(chunked(page, size), 3, { contentType })) parts.push(Buffer.from(b));
  return Buffer.concat(parts);
}

describe('document pages', () => {
  it('hexOf writes the same hex as Buffer#toString', () => {
    for (const n of [0, 1, 2, 3, 255, 4096, 65537]) {
      const b = randomBytes(n);
      expect(hexOf(b).toString('latin1')).toBe(b.toString('hex'));
      expect(hexOf(b.subarray(1)).toString('latin1')).toBe(b.subarray(1).toString('hex'));
    }
  });

  it.each([1, 7, 'random'] as const)(
    'writes page, file name, content type, \\\\x content, bytes, sha256 (chunks of %s)',
    async (size) => {
      const row = parseCopyText(await decode(PDF, 'application/pdf; qs=0.9', size));
      expect(row).toEqual([
        [
          '3',
          'Orders_7777_x_3.pdf',
          'application/pdf; qs=0.9',
          `\\x${PDF.toString('hex')}`,
          String(PDF.length),
          createHash('sha256').update(PDF).digest('hex'),
        ],
      ]);
    },
  );

  it('refuses a wrong or missing Content-Type, a wrong signature, an empty or a truncated page', async () => {
    const message = (p: Promise<unknown>) =>
      p.then(
        () => 'decoded',
        (e: Error) => e.message,
      );
    expect(await message(decode(PDF, 'text/html'))).toBe(
      'page 3: Content-Type "text/html" does not fit output type pdf (expected application/pdf)',
    );
    expect(await message(decode(PDF, undefined))).toBe(
      'page 3: Content-Type (none) does not fit output type pdf (expected application/pdf)',
    );
    expect(await message(decode(Buffer.from('PK\x03\x04rest of a zip'), 'application/pdf'))).toBe(
      'page 3, byte offset 0: not a pdf document: a PDF starts with %PDF-, ' +
        'this page starts with "PK\\u0003\\u0004rest"',
    );
    expect(await message(decode(Buffer.alloc(0), 'application/pdf'))).toBe(
      'page 3: empty document: the pdf page has no bytes',
    );
    expect(await message(decode(PDF.subarray(0, 3000), 'application/pdf'))).toBe(
      'page 3, byte offset 3000: truncated PDF: no %%EOF in its last 1024 of 3000 bytes',
    );
  });
});
