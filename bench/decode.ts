/**
 * Decode-only runs of the bench's report (the simulator's Big.avw, the rows `npm run bench` loads), for comparing
 * decoders where wall time is too noisy: pages are rendered to files once, then decoded `repeats` times in one
 * process, in 64 KiB chunks as the network delivers them, with the plan of a load into the bench's target (binary
 * format, the inferred column types) or unplanned (text format). Under callgrind the instructions of one decode in
 * its steady state are (Ir of 6 repeats − Ir of 2) / 4, whatever else the machine does:
 *
 *   node bench/decode.ts render xml_query 20000 /tmp/pages
 *   valgrind --tool=callgrind --smc-check=all-non-file --callgrind-out-file=/dev/null \
 *     node --single-threaded bench/decode.ts decode xml_query /tmp/pages binary 6
 *
 * Modes: `render <type> <rows> <dir>` (pages of 100,000 rows as files `<type>.0001`, …),
 * `decode <type> <dir> <text|binary> <repeats>` (prints ms and output bytes per decode) and
 * `check <type> <dir> <repeats>` (CPU ms of the txt fast path's check for bytes no PostgreSQL text takes,
 * pages/unfit-bytes.ts textFits, over the same chunks: what the check adds to a decode).
 */
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { OutputType } from '../src/vocabulary.ts';

const PAGING = 100_000;
const CHUNK = 65_536;
/** The bench target's column types, as the first load infers them for Big.avw (pipeline-load.test.ts checks them). */
const TARGET_TYPES = ['bigint', 'text', 'bigint', 'numeric', 'numeric', 'timestamp with time zone', 'text', 'bigint'];

const [mode, type, a, b, c] = process.argv.slice(2) as [string, OutputType, string, string, string];

if (mode === 'render') {
  const { reportData } = await import('../src/simulator/catalogue.ts');
  const { pageRenderer } = await import('../src/simulator/render.ts');
  const { makeZonedFormatter } = await import('../src/simulator/time-format.ts');
  const rows = Number(a);
  mkdirSync(b, { recursive: true });
  const data = reportData('Big.avw', { ROWS: String(rows) }, 1)!;
  const zone = makeZonedFormatter('Europe/Zurich');
  const render = pageRenderer(type as 'json');
  for (let p = 0; p * PAGING < rows; p++) {
    const parts = [
      ...render(data, p * PAGING, Math.min(rows, (p + 1) * PAGING), {
        zone,
        page: p + 1,
        report: 'Big.avw',
        paging: PAGING,
      }),
    ];
    writeFileSync(
      join(b, `${type}.${String(p + 1).padStart(4, '0')}`),
      Buffer.concat(parts.map((x) => (typeof x === 'string' ? Buffer.from(x) : x))),
    );
  }
} else if (mode === 'decode') {
  const { makePageDecoder } = await import('../src/pages/decoder.ts');
  const { binaryEncodingOf } = await import('../src/copy-binary/format.ts');
  const pages = readdirSync(a)
    .filter((f) => f.startsWith(`${type}.`))
    .sort()
    .map((f) => readFileSync(join(a, f)));
  const binary = b === 'binary';
  async function* chunks(page: Buffer): AsyncGenerator<Buffer> {
    for (let i = 0; i < page.length; i += CHUNK) yield Buffer.from(page.subarray(i, i + CHUNK));
  }
  for (let r = 0; r < Number(c ?? 1); r++) {
    const d = makePageDecoder(type);
    d.planRows(() =>
      binary
        ? {
            inspect: false,
            binary: { encodings: TARGET_TYPES.map((t) => binaryEncodingOf(t)!), timezone: 'Europe/Zurich' },
          }
        : { inspect: false },
    );
    let out = 0;
    const t0 = performance.now();
    for (let p = 0; p < pages.length; p++)
      for await (const x of d.decodePage(chunks(pages[p]!), p + 1)) out += x.length;
    console.log(`${type} ${d.format}: ${d.rows} rows, ${out} bytes out, ${(performance.now() - t0).toFixed(0)} ms`);
  }
} else if (mode === 'check') {
  const { textFits } = await import('../src/pages/unfit-bytes.ts');
  const chunks = readdirSync(a)
    .filter((f) => f.startsWith(`${type}.`))
    .sort()
    .flatMap((f) => {
      const page = readFileSync(join(a, f));
      // Chunks end at a line end, as the spans the decoder checks do (a cut UTF-8 sequence would end a check early).
      const out: Buffer[] = [];
      for (let i = 0; i < page.length;) {
        const end = i + CHUNK < page.length ? page.indexOf(0x0a, i + CHUNK) + 1 || page.length : page.length;
        out.push(Buffer.from(page.subarray(i, end)));
        i = end;
      }
      return out;
    });
  const mb = chunks.reduce((n, x) => n + x.length, 0) / 1e6;
  for (let r = 0; r < Number(b ?? 1); r++) {
    const before = process.cpuUsage();
    let fit = 0;
    for (const x of chunks) if (textFits(x, 0, x.length)) fit++;
    const spent = process.cpuUsage(before);
    const ms = (spent.user + spent.system) / 1000;
    console.log(`${type} check: ${mb.toFixed(1)} MB in ${chunks.length} chunks (${fit} fit), ${ms.toFixed(1)} ms CPU`);
  }
} else {
  console.error(
    'usage: node bench/decode.ts render <type> <rows> <dir> | decode <type> <dir> <text|binary> <repeats> | ' +
      'check <type> <dir> <repeats>',
  );
  process.exitCode = 2;
}
