/**
 * What compressing kept pages costs per codec: the simulator's Big.avw pages (txt and json, one page of `rows` rows)
 * cut into 1 MiB chunks (the page archive's before it took 4 MiB: src/pipeline/page-archive.ts), each compressed alone
 * with gzip (levels 1 and 6), brotli (qualities 4 and 5) and zstd (levels 1 and 3, and the fast levels -1 and -3),
 * and what the sha256 the archive takes of every page costs. Prints kB stored per MB of page, MB/s on one thread and
 * MB per CPU second (the figure that holds on a busy machine).
 * Run: npx node bench/kept-pages-codec.ts [rows=200000]
 */
import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import { startSimulator } from '../src/simulator/index.ts';
import { firstBigPage, simulatorHeaders } from './lib/simulator-page.ts';

const gzip = promisify(zlib.gzip);
const brotli = promisify(zlib.brotliCompress);
const zstd = promisify(zlib.zstdCompress);
const rows = Number(process.argv[2] ?? 200_000);
const CHUNK = 1024 * 1024;
const sim = await startSimulator({ jobDurationMs: 0 });
const headers = await simulatorHeaders(sim.url);
const br = (quality: number) => (b: Buffer) =>
  brotli(b, {
    params: { [zlib.constants.BROTLI_PARAM_QUALITY]: quality, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: b.length },
  });
const codecs: [string, (b: Buffer) => Promise<Buffer>][] = [
  ['gzip 1', (b) => gzip(b, { level: 1 })],
  ['gzip 6', (b) => gzip(b, { level: 6 })],
  ['brotli 4', br(4)],
  ['brotli 5', br(5)],
  ['zstd 1', (b) => zstd(b, { params: { [zlib.constants.ZSTD_c_compressionLevel]: 1 } })],
  [
    'zstd 1 1M',
    (b) =>
      zstd(b, { params: { [zlib.constants.ZSTD_c_compressionLevel]: 1 }, chunkSize: CHUNK, pledgedSrcSize: b.length }),
  ],
  ['zstd 3', (b) => zstd(b, { params: { [zlib.constants.ZSTD_c_compressionLevel]: 3 } })],
  ['zstd -1', (b) => zstd(b, { params: { [zlib.constants.ZSTD_c_compressionLevel]: -1 } })],
  ['zstd -3', (b) => zstd(b, { params: { [zlib.constants.ZSTD_c_compressionLevel]: -3 } })],
  // Not a codec: the sha256 of the page as served, which the archive takes on the main thread ("stored": 0).
  ['sha256', (b) => Promise.resolve((createHash('sha256').update(b), Buffer.alloc(0)))],
];

for (const outputType of ['txt', 'json']) {
  const page = await firstBigPage(sim.url, headers, outputType, rows);
  const chunks: Buffer[] = [];
  for (let i = 0; i < page.length; i += CHUNK) chunks.push(page.subarray(i, i + CHUNK));
  for (const [name, compress] of codecs) {
    const t0 = performance.now();
    const cpu0 = process.cpuUsage();
    let stored = 0;
    for (const c of chunks) stored += (await compress(c)).length;
    const s = (performance.now() - t0) / 1000;
    const cpu = process.cpuUsage(cpu0);
    const cpuS = (cpu.user + cpu.system) / 1e6;
    console.log(
      `${outputType.padEnd(5)} ${name.padEnd(9)} ${(page.length / 1e6).toFixed(1)} MB -> ` +
        `${((stored / page.length) * 1000).toFixed(0)} kB per MB, ${(page.length / 1e6 / s).toFixed(0)} MB/s, ` +
        `${(page.length / 1e6 / cpuS).toFixed(0)} MB per CPU second`,
    );
  }
}
await sim.close();
