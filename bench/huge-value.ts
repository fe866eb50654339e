/**
 * Memory of a page holding one enormous value: a txt, json and xml_query page whose second row carries a
 * 200 MB value, streamed in 64 KiB chunks into the page decoder with the default maxValueBytes (64 MiB). Prints,
 * per type, the outcome and the process's peak RSS growth over its start. `node bench/huge-value.ts [MB]`.
 */
import { makePageDecoder } from '../src/pages/decoder.ts';
import type { OutputType } from '../src/vocabulary.ts';

const MB = Number(process.argv[2] ?? 200);
const CHUNK = 64 * 1024;
const SHAPES: Record<string, { head: string; tail: string }> = {
  txt: { head: '"Nr","Bemerkung"\n1,"a"\n2,"', tail: '"\n' },
  json: { head: '{"data":[{"Nr":1,"Bemerkung":"a"},{"Nr":2,"Bemerkung":"', tail: '"}]}' },
  xml_query: {
    head: '<?xml version="1.0"?><result><row><field name="Nr">1</field></row><row><field name="Nr">',
    tail: '</field></row></result>',
  },
};

async function* page(head: string, bytes: number, tail: string): AsyncGenerator<Uint8Array> {
  yield Buffer.from(head);
  const filler = Buffer.alloc(CHUNK, 'x');
  for (let left = bytes; left > 0; left -= CHUNK) yield left >= CHUNK ? filler : filler.subarray(0, left);
  yield Buffer.from(tail);
}

for (const [type, s] of Object.entries(SHAPES)) {
  const before = process.memoryUsage().rss;
  let peak = before;
  const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 5);
  const started = performance.now();
  let outcome = 'loaded';
  try {
    for await (const _ of makePageDecoder(type as OutputType).decodePage(page(s.head, MB * 1e6, s.tail), 1)) void _;
  } catch (err) {
    outcome = (err as { code?: string }).code ?? String(err);
  }
  clearInterval(timer);
  peak = Math.max(peak, process.memoryUsage().rss);
  process.stdout.write(
    `${type.padEnd(10)} ${MB} MB value: ${outcome}, peak RSS +${((peak - before) / 1e6).toFixed(0)} MB, ` +
      `${((performance.now() - started) / 1000).toFixed(2)} s\n`,
  );
  global.gc?.();
}
