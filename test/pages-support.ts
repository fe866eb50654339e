/**
 * Helpers of the page decoder tests (test/pages-*.test.ts): feed a page in chunks of chosen sizes, collect a
 * decoder's output, and read COPY text format and PostgreSQL CSV back into values.
 */
import { parse as parseCsv } from 'csv-parse/sync';
import type { PageDecoder } from '../src/pages/decoder.ts';

/** A seeded PRNG (mulberry32), so failures reproduce. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Splits `page` into chunks: a fixed size, or random sizes 1..max when `size` is 'random'. */
export async function* chunked(page: Buffer, size: number | 'random', seed = 1, max = 300): AsyncGenerator<Uint8Array> {
  const r = rng(seed);
  for (let i = 0; i < page.length;) {
    const n = size === 'random' ? 1 + Math.floor(r() * max) : size;
    // Copy, so a decoder that keeps a view of an input chunk is caught if it relied on its reuse.
    yield new Uint8Array(page.subarray(i, i + n));
    i += n;
  }
}

/**
 * Decodes pages (1-based numbers in order) in chunks of `size` (random sizes 1..`max` for 'random') and returns all
 * output bytes, checking each Buffer ends a row and none is empty (a decoder tells its columns through its plan, never
 * in the rows: pages/rows-plan.ts).
 */
export async function decodeAll(
  decoder: PageDecoder,
  pages: Buffer[],
  size: number | 'random',
  seed = 1,
  max = 300,
): Promise<Buffer> {
  const parts: Buffer[] = [];
  for (let p = 0; p < pages.length; p++) {
    for await (const out of decoder.decodePage(chunked(pages[p]!, size, seed + p, max), p + 1)) {
      if (out.length === 0) throw new Error('an empty Buffer among the rows');
      if (out[out.length - 1] !== 0x0a) throw new Error('a yielded Buffer does not end with a whole row');
      parts.push(Buffer.from(out));
    }
  }
  return Buffer.concat(parts);
}

/** Reads COPY text format (tab separated, \N = NULL, backslash escapes) back into rows of values. */
export function parseCopyText(bytes: Buffer): (string | null)[][] {
  const text = bytes.toString('utf8');
  if (text === '') return [];
  if (!text.endsWith('\n')) throw new Error('COPY text does not end with a newline');
  return text
    .slice(0, -1)
    .split('\n')
    .map((line) =>
      line.split('\t').map((field) => {
        if (field === '\\N') return null;
        return field.replace(/\\(.)/g, (_m, c: string) => {
          const map: Record<string, string> = { n: '\n', r: '\r', t: '\t', b: '\b', f: '\f', v: '\v', '\\': '\\' };
          const v = map[c];
          if (v === undefined) throw new Error(`unexpected COPY escape \\${c}`);
          return v;
        });
      }),
    );
}

/**
 * Reads PostgreSQL CSV (as COPY ... (FORMAT csv) does: unquoted empty = NULL, "" = empty string) into rows,
 * with csv-parse as the independent reader.
 */
export function parsePgCsv(bytes: Buffer): (string | null)[][] {
  return parseCsv(bytes, {
    record_delimiter: '\n',
    cast: (value: string, ctx: { quoting: boolean }) => (ctx.quoting ? value : value === '' ? null : value),
  }) as (string | null)[][];
}
