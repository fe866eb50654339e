/**
 * Getting archived documents back (docs/loaded-tables.md "Output types"): `report-etl documents <run-key | attempt-id>
 * --out DIR` writes each page's file byte for byte, and the admin run and attempt pages list them with a download link
 * each, behind the admin auth. A document a later replace removed is reported, not served half.
 */
import { mkdtemp, readdir, readFile, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { AdminServer } from '../src/admin/server.ts';
import { completeAttempt } from '../src/history/attempts.ts';
import type { AttemptResult } from '../src/pipeline/run-attempt.ts';
import { makeQueue, type RunQueue } from '../src/queue/queue.ts';
import { runCli } from './support/cli.ts';
import { testPrefix, uniqueName } from './support/env.ts';
import { jobEntry, startHarness, type Harness } from './support/harness.ts';
import { insertTestAttempt } from './support/queue-env.ts';
import { adminServerOf } from './support/admin-login.ts';

const token = `t-${uniqueName('admin')}`;

let h: Harness;
let server: AdminServer;
let queue: RunQueue;
let pdfRun: AttemptResult;
let table: string;
const jobName = uniqueName('docs');
const runKey = `${jobName}__pdf`;

beforeAll(async () => {
  h = await startHarness();
  table = `${h.schema}.pdfs`;
  const config = h.config({
    [jobName]: jobEntry(
      { name: 'Sales/Orders', outputType: 'pdf', paging: 40, parameters: { ROWS: '100' } },
      { table },
    ),
  });
  pdfRun = await h.run(config, jobName, { runKey, trigger: 'manual' });
  queue = makeQueue(h.redis, testPrefix('q'));
  server = await adminServerOf(h, queue, { auth: { token }, keyPrefix: uniqueName('k') });
}, 60_000);

afterAll(async () => {
  await server?.close();
  await queue?.close();
  await h?.pool.query('DELETE FROM etl.runs WHERE job = $1', [jobName]);
  await h?.close();
});

const cli = (args: string[]) => runCli(args);

async function stored(): Promise<Map<string, Buffer>> {
  const { rows } = await h.pool.query<{ file_name: string; content: Buffer }>(
    `SELECT file_name, content FROM ${table}`,
  );
  return new Map(rows.map((r) => [r.file_name, r.content]));
}

it(
  'report-etl documents writes every page of the run (by run key) to DIR, ' +
    'byte for byte; of an attempt (by id) too',
  async () => {
    const dir = await mkdtemp(join(tmpdir(), 'docs-'));
    const r = await cli(['documents', runKey, '--out', dir]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const want = await stored();
    expect((await readdir(dir)).sort()).toEqual([...want.keys()].sort());
    expect(want.size).toBe(3);
    for (const [name, content] of want) expect((await readFile(join(dir, name))).equals(content)).toBe(true);
    expect(r.stdout.trim().split('\n')).toHaveLength(3);
    expect(r.stdout).toMatch(/_1\.pdf {2}\d+ bytes {2}sha256 [0-9a-f]{64}/);
    const one = await cli([
      'documents',
      pdfRun.attemptId,
      '--page',
      '2',
      '--out',
      await mkdtemp(join(tmpdir(), 'docs-')),
    ]);
    expect(one.code, one.stderr).toBe(0);
    expect(one.stdout).toMatch(/^\S+_2\.pdf {2}\d+ bytes {2}sha256 [0-9a-f]{64}\n$/);
  },
);

it('report-etl documents: a file it cannot write (a full disk) is named in one line, exit 1', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'docs-full-'));
  const want = await stored();
  const second = [...want.keys()].find((name) => name.endsWith('_2.pdf'))!;
  // Writing to /dev/full (Linux) fails with ENOSPC, as a full disk does.
  await symlink('/dev/full', join(dir, second));
  const r = await cli(['documents', runKey, '--out', dir]);
  expect(r.code).toBe(1);
  expect(r.stderr).toContain(`page 2: cannot write ${join(dir, second)}: ENOSPC`);
  expect(r.stderr).not.toMatch(/\n\s+at /);
  const others = [...want.keys()].filter((name) => name !== second);
  for (const name of others) expect((await readFile(join(dir, name))).equals(want.get(name)!)).toBe(true);
  expect(r.stdout.trim().split('\n')).toHaveLength(2);
});

it(
  'report-etl documents says so for a run without documents (exit 1) ' +
    'and for a key or id that names nothing (exit 2)',
  async () => {
    const attemptId = crypto.randomUUID();
    await insertTestAttempt(h.pool, { attemptId, job: jobName, runKey: `${jobName}__nodocs`, targetTable: table });
    await completeAttempt(h.pool, attemptId, { rows: 0, pages: 0, bytes: 0 });
    const none = await cli(['documents', `${jobName}__nodocs`]);
    expect(none.code).toBe(1);
    expect(none.stderr).toContain(`run ${jobName}__nodocs archived no documents`);
    for (const id of ['00000000-0000-4000-8000-000000000000', 'nope']) {
      const bad = await cli(['documents', id]);
      expect(bad.code).toBe(2);
      expect(bad.stderr).toContain(`"${id}" is not a run key nor an attempt id`);
    }
  },
);

it(
  'the admin run and attempt pages list the documents with a download link each; ' +
    'downloads need the admin credentials',
  async () => {
    const auth = { authorization: `Bearer ${token}` };
    const linksOf = async (path: string) => {
      const page = await fetch(`${server.url}${path}`, { headers: auth });
      expect(page.status).toBe(200);
      return [...(await page.text()).matchAll(/href="(\/admin\/attempts\/[^"]+\/documents\/(\d+))"[^>]*>([^<]+)</g)];
    };
    const links = await linksOf(`/admin/runs/${jobName}/${runKey}`);
    expect(links.map((l) => l[1])).toEqual([1, 2, 3].map((p) => `/admin/attempts/${pdfRun.attemptId}/documents/${p}`));
    expect((await linksOf(`/admin/attempts/${pdfRun.attemptId}`)).map((l) => l[1])).toEqual(links.map((l) => l[1]));
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
    expect(
      (await fetch(`${server.url}/admin/attempts/${pdfRun.attemptId}/documents/9`, { headers: auth })).status,
    ).toBe(404);
  },
);

it('a document that a later replace removed is reported as gone, not served', async () => {
  const config = h.config({
    [jobName]: jobEntry(
      { name: 'Sales/Orders', outputType: 'pdf', paging: 40, parameters: { ROWS: '100' } },
      { table },
    ),
  });
  await h.run(config, jobName);
  const res = await fetch(`${server.url}/admin/attempts/${pdfRun.attemptId}/documents/1`, {
    headers: { authorization: `Bearer ${token}` },
  });
  expect(res.status).toBe(404);
  expect(await res.text()).toContain('is no longer in');
  const r = await cli(['documents', pdfRun.attemptId, '--out', await mkdtemp(join(tmpdir(), 'docs-'))]);
  expect(r.code).toBe(1);
  expect(r.stderr).toContain('page 1: document Orders_7777_');
  expect(r.stderr).toContain('a later run replaced it');
});
