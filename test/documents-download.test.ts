/**
 * Getting archived documents back (README "Output types"): `report-etl documents <run-id> --out DIR` writes each
 * page's file byte for byte, and the admin run page lists them with a download link each, behind the admin auth.
 * A document a later replace removed is reported, not served half.
 */
import { mkdtemp, readdir, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startAdminServer, type AdminServer } from '../src/admin/server.ts';
import { resolveJob } from '../src/config/load.ts';
import { silentLogger } from '../src/logger.ts';
import { runAttempt, type AttemptResult } from '../src/pipeline/run-attempt.ts';
import { makeQueue, type RunQueue } from '../src/queue/queue.ts';
import { runCli } from './support/cli.ts';
import { uniqueName } from './support/env.ts';
import { jobEntry, startHarness, type Harness } from './support/harness.ts';

const token = `t-${uniqueName('admin')}`;

let h: Harness;
let server: AdminServer;
let queue: RunQueue;
let pdfRun: AttemptResult;
let table: string;
const jobName = uniqueName('docs');

beforeAll(async () => {
  h = await startHarness();
  table = `${h.schema}.pdfs`;
  const config = h.config({ [jobName]: jobEntry({ name: 'Sales/Orders', outputType: 'pdf', paging: 40, parameters: { ROWS: '100' } }, { table }) });
  pdfRun = await runAttempt({ job: resolveJob(config, jobName), pool: h.pool, redis: h.redis, logger: silentLogger });
  queue = makeQueue(h.redis, uniqueName('q'));
  server = await startAdminServer({ pool: h.pool, redis: h.redis, queue, logger: silentLogger, port: 0, auth: { token }, keyPrefix: uniqueName('k') });
}, 60_000);

afterAll(async () => {
  await server?.close();
  await queue?.close();
  await h?.pool.query('DELETE FROM etl.runs WHERE job = $1', [jobName]);
  await h?.close();
});

const cli = (args: string[]) => runCli(args);

async function stored(): Promise<Map<string, Buffer>> {
  const { rows } = await h.pool.query<{ file_name: string; content: Buffer }>(`SELECT file_name, content FROM ${table}`);
  return new Map(rows.map((r) => [r.file_name, r.content]));
}

it('report-etl documents writes every page of the run to DIR, byte for byte', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'docs-'));
  const r = await cli(['documents', pdfRun.attemptId, '--out', dir]);
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
  const want = await stored();
  expect((await readdir(dir)).sort()).toEqual([...want.keys()].sort());
  expect(want.size).toBe(3);
  for (const [name, content] of want) expect((await readFile(join(dir, name))).equals(content)).toBe(true);
  expect(r.stdout.trim().split('\n')).toHaveLength(3);
  expect(r.stdout).toMatch(/_1\.pdf {2}\d+ bytes {2}sha256 [0-9a-f]{64}/);
});

it('report-etl documents says so for a run without documents (exit 1) and for a bad id (exit 2)', async () => {
  const none = await cli(['documents', '00000000-0000-4000-8000-000000000000']);
  expect(none.code).toBe(1);
  expect(none.stderr).toContain('archived no documents');
  const bad = await cli(['documents', 'nope']);
  expect(bad.code).toBe(2);
  expect(bad.stderr).toContain('is not a run id');
});

it('the admin run page lists the documents with a download link each; downloads need the admin credentials', async () => {
  const auth = { authorization: `Bearer ${token}` };
  const page = await fetch(`${server.url}/admin/runs/${pdfRun.attemptId}`, { headers: auth });
  expect(page.status).toBe(200);
  const body = await page.text();
  const links = [...body.matchAll(/href="(\/admin\/runs\/[^"]+\/documents\/(\d+))"[^>]*>([^<]+)</g)];
  expect(links.map((l) => l[2])).toEqual(['1', '2', '3']);
  const want = await stored();
  for (const [, href, , name] of links) {
    const res = await fetch(`${server.url}${href}`, { headers: auth });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/pdf');
    expect(res.headers.get('content-disposition')).toBe(`attachment; filename="${name}"`);
    expect(Buffer.from(await res.arrayBuffer()).equals(want.get(name!)!)).toBe(true);
  }
  const anonymous = await fetch(`${server.url}${links[0]![1]}`, { redirect: 'manual' });
  expect(anonymous.status).toBeGreaterThanOrEqual(300);
  expect(anonymous.status).not.toBe(200);
  expect((await fetch(`${server.url}/admin/runs/${pdfRun.attemptId}/documents/9`, { headers: auth })).status).toBe(404);
});

it('a document that a later replace removed is reported as gone, not served', async () => {
  const config = h.config({ [jobName]: jobEntry({ name: 'Sales/Orders', outputType: 'pdf', paging: 40, parameters: { ROWS: '100' } }, { table }) });
  await runAttempt({ job: resolveJob(config, jobName), pool: h.pool, redis: h.redis, logger: silentLogger });
  const res = await fetch(`${server.url}/admin/runs/${pdfRun.attemptId}/documents/1`, { headers: { authorization: `Bearer ${token}` } });
  expect(res.status).toBe(404);
  expect(await res.text()).toContain('is no longer in');
  const r = await cli(['documents', pdfRun.attemptId, '--out', await mkdtemp(join(tmpdir(), 'docs-'))]);
  expect(r.code).toBe(1);
  expect(r.stderr).toContain('page 1: document Orders_7777_');
  expect(r.stderr).toContain('a later run replaced it');
});
