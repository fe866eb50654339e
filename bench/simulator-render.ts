/**
 * Simulator render throughput: 1,000,000 rows of Big.avw as one page per output type, fetched over real
 * HTTP on 127.0.0.1 and discarded. Prints seconds, MB and rows/s per type.
 * Run: npx node bench/simulator-render.ts [rows=1000000] [types=json,json_compact,txt,xml_query]
 */
import { request } from 'undici';
import { startSimulator } from '../src/simulator/index.ts';
import { simulatorHeaders } from './lib/simulator-page.ts';

const rows = Number(process.argv[2] ?? 1_000_000);
const types = (process.argv[3] ?? 'json,json_compact,txt,xml_query').split(',');
const sim = await startSimulator({ jobDurationMs: 0 });
const headers = await simulatorHeaders(sim.url);

for (const outputType of types) {
  const start = await request(`${sim.url}/api/svcreport/v1/report/7777/Big`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ outputType, paging: rows, parameters: { ROWS: String(rows) } }),
  });
  const { id } = (await start.body.json()) as { id: string };
  const t0 = performance.now();
  const res = await request(`${sim.url}/api/svcreport/v1/jobs/${id}/output/1`, { headers });
  let bytes = 0;
  for await (const chunk of res.body) bytes += (chunk as Buffer).length;
  const s = (performance.now() - t0) / 1000;
  const rss = process.memoryUsage().rss / 1e6;
  console.log(
    `${outputType.padEnd(12)} ${rows} rows  ${(bytes / 1e6).toFixed(1)} MB  ${s.toFixed(2)} s  ` +
      `${Math.round(rows / s)} rows/s  ${(bytes / 1e6 / s).toFixed(0)} MB/s  rss ${rss.toFixed(0)} MB`,
  );
  await (await request(`${sim.url}/api/svcreport/v1/jobs/${id}`, { method: 'DELETE', headers })).body.dump();
}
await sim.close();
