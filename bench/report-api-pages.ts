/**
 * Page download throughput of the report client next to a bare undici GET of the same bytes, against a
 * minimal local server that streams prebuilt page bytes (so the server is not the bottleneck): what the
 * resumable page stream (async generator + Readable.from), the Redis token lookup and the headers cost.
 * Also the same against the simulator (rendering included), for the realistic figure.
 *
 *   npx node bench/report-api-pages.ts [pageMiB=32] [pages=4] [rounds=5]
 *
 * Needs Redis at REDIS_URL (default redis://127.0.0.1:6379).
 */
import { Redis } from 'ioredis';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { makeReportClient, type ReportClient } from '../src/report-api/index.ts';
import { connectionSchema } from '../src/config/schema.ts';
import { startSimulator } from '../src/simulator/index.ts';

const pageMiB = Number(process.argv[2] ?? 32);
const pages = Number(process.argv[3] ?? 4);
const rounds = Number(process.argv[4] ?? 5);
const prefix = `bench_rapi_${process.pid}:`;
const CHUNK = 64 * 1024;
const chunk = Buffer.alloc(CHUNK, 'x');
const chunksPerPage = (pageMiB * 1_048_576) / CHUNK;

// Minimal server: discovery, token, and pages of prebuilt bytes written with backpressure.
const server = createServer((req, res) => {
  const url = req.url ?? '';
  if (url === '/.well-known/openid-configuration') {
    res.end(JSON.stringify({ token_endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}/token` }));
  } else if (url === '/token') {
    req.resume();
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ access_token: 'bench-token', token_type: 'Bearer', expires_in: 600 }));
  } else {
    const page = Number(url.split('/').pop());
    if (!(page >= 1 && page <= pages)) {
      res.writeHead(404, { 'content-length': '0' });
      return res.end();
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    let i = 0;
    const write = (): void => {
      while (i < chunksPerPage) {
        i++;
        if (!res.write(chunk)) return void res.once('drain', write);
      }
      res.end();
    };
    write();
  }
});
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
const staticUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');

async function drain(body: AsyncIterable<Buffer>): Promise<number> {
  let n = 0;
  for await (const c of body) n += c.length;
  return n;
}

async function viaClient(client: ReportClient, jobId: string): Promise<number> {
  let n = 0;
  for (let page = 1; ; page++) {
    const p = await client.openPage(jobId, page);
    if (p === null) return n;
    n += await drain(p.body);
  }
}

async function bare(baseUrl: string, jobId: string, token: string, count: number): Promise<number> {
  let n = 0;
  for (let page = 1; page <= count; page++) {
    const res = await request(`${baseUrl}/api/svcreport/v1/jobs/${jobId}/output/${page}`, {
      headers: { authorization: `Bearer ${token}` },
    });
    n += await drain(res.body as AsyncIterable<Buffer>);
  }
  return n;
}

async function compare(
  label: string,
  client: ReportClient,
  baseUrl: string,
  jobId: string,
  token: string,
  count: number,
): Promise<void> {
  const mibps = (bytes: number, ms: number) => (bytes / 1_048_576 / (ms / 1000)).toFixed(0);
  const c: number[] = [];
  const b: number[] = [];
  let bytes = 0;
  for (let round = 0; round < rounds; round++) {
    let t0 = performance.now();
    bytes = await viaClient(client, jobId);
    c.push(performance.now() - t0);
    t0 = performance.now();
    await bare(baseUrl, jobId, token, count);
    b.push(performance.now() - t0);
  }
  const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;
  console.log(
    `${label}: ${(bytes / 1_048_576).toFixed(0)} MiB in ${count} pages, median of ${rounds}: ` +
      `client ${median(c).toFixed(0)} ms (${mibps(bytes, median(c))} MiB/s), ` +
      `bare undici ${median(b).toFixed(0)} ms (${mibps(bytes, median(b))} MiB/s), ` +
      `rss ${(process.memoryUsage().rss / 1_048_576).toFixed(0)} MiB`,
  );
}

const conn = (baseUrl: string) =>
  connectionSchema.parse({ baseUrl, clientId: 'demo-client', clientSecret: 'demo-secret', pollIntervalMs: 10 });

const staticClient = await makeReportClient({
  connection: conn(staticUrl),
  connectionName: 'bench-static',
  redis,
  keyPrefix: prefix,
});
await compare('static server', staticClient, staticUrl, 'job', 'bench-token', pages);
await staticClient.close();

const sim = await startSimulator({ port: 0, jobDurationMs: 10 });
const simClient = await makeReportClient({
  connection: conn(sim.url),
  connectionName: 'bench-sim',
  redis,
  keyPrefix: `${prefix}sim:`,
});
const job = await simClient.startReport({
  mandant: '7777',
  name: 'Big',
  outputType: 'json',
  paging: 50_000,
  parameters: { ROWS: '200000' },
});
const finished = await simClient.waitForJob(job.id);
const simToken = (
  JSON.parse((await redis.get((await redis.keys(`${prefix}sim:token:*`))[0]!))!) as { accessToken: string }
).accessToken;
await compare('simulator json (rendering in-process)', simClient, sim.url, job.id, simToken, finished.pages);
await simClient.deleteJob(job.id);
await simClient.close();
await sim.close();

const keys = await redis.keys(`${prefix}*`);
if (keys.length > 0) await redis.del(...keys);
await redis.quit();
server.close();
