/**
 * The admin's Replay when pages are kept (docs/operations.md "Kept pages"), over real HTTP with the form login: a
 * failed run whose pages were kept offers "Replay from kept pages" beside Replay on its run and attempt pages, and
 * the button queues what `replay --from-pages` queues; a run that kept none offers no such button and a posted one
 * is refused with the page's own words.
 */
import { randomBytes } from 'node:crypto';
import type { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AdminServer } from '../src/admin/server.ts';
import { replayQueueJobId } from '../src/queue/names.ts';
import { makeQueue } from '../src/queue/queue.ts';
import { adminSessionCookie, adminServerOf } from './support/admin-login.ts';
import { uniqueName } from './support/env.ts';
import { attemptFailure, type Harness, jobEntry, startHarness } from './support/harness.ts';

const token = `tok-${randomBytes(12).toString('hex')}`;
const keptJob = uniqueName('akp_kept');
const plainJob = uniqueName('akp_plain');
const guardJob = uniqueName('akp_guard');

let h: Harness;
let queue: Queue;
let server: AdminServer;
let cookie: string;
const failed: Record<string, { attemptId: string; runKey: string }> = {};

beforeAll(async () => {
  h = await startHarness();
  queue = makeQueue(h.redis, uniqueName('akpq'));
  const entry = (table: string, archive: boolean, guard?: { minRows: number }) =>
    jobEntry(
      { name: 'Sales/Orders', outputType: 'txt', paging: 100, parameters: { ROWS: '150' } },
      { table, schemaChanges: 'freeze', ...(archive ? { archive: { keepDays: 2 } } : {}), ...(guard ? { guard } : {}) },
    );
  const config = h.config({
    [keptJob]: entry(`${h.schema}.akp_kept`, true),
    [plainJob]: entry(`${h.schema}.akp_plain`, false),
    // Its guard wants more rows than the report has: the load trips it, and its pages are kept.
    [guardJob]: entry(`${h.schema}.akp_guard`, true, { minRows: 1000 }),
  });
  for (const job of [keptJob, plainJob, guardJob]) {
    // A frozen table the report does not fit: the load fails on the warehouse's side, its pages were fine.
    if (job !== guardJob)
      await h.pool.query(`CREATE TABLE ${h.schema}.${job === keptJob ? 'akp_kept' : 'akp_plain'} (other text)`);
    const runKey = uniqueName('akp');
    const err = await attemptFailure(h.run(config, job, { runKey }));
    expect(err.code).toBe(job === guardJob ? 'GUARD_TRIPPED' : 'SCHEMA_CHANGED');
    failed[job] = { attemptId: err.attemptId, runKey };
  }
  server = await adminServerOf(h, queue, { auth: { token }, config });
  cookie = await adminSessionCookie(server.url, token);
}, 60_000);

afterAll(async () => {
  await server?.close();
  await queue?.obliterate({ force: true }).catch(() => undefined);
  await queue?.close();
  await h?.pool.query('DELETE FROM etl.runs WHERE job = ANY($1)', [[keptJob, plainJob, guardJob]]);
  await h?.close();
});

const runPath = (job: string) => `/admin/runs/${job}/${failed[job]!.runKey}`;
const get = async (path: string) => (await fetch(`${server.url}${path}`, { headers: { cookie } })).text();
const postReplay = (job: string, form: Record<string, string>) =>
  fetch(`${server.url}${runPath(job)}/replay`, {
    method: 'POST',
    headers: { cookie, origin: server.url, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(form).toString(),
    redirect: 'manual',
  });

describe('the admin Replay with kept pages', () => {
  it('offers "Replay from kept pages" beside Replay on the run and attempt pages of a run that kept them', async () => {
    const button = '<button type="submit" id="replay-from-pages" class="secondary"';
    const runPage = await get(runPath(keptJob));
    expect(runPage).toContain('id="replay-advice"');
    expect(runPage).toContain('id="replay" class="secondary"');
    expect(runPage).toContain(button);
    expect(runPage).toContain('<input type="hidden" name="from" value="pages">');
    expect(runPage).toContain('(the pages attempt 1 kept: no request to the server)');
    const attemptPage = await get(`/admin/attempts/${failed[keptJob]!.attemptId}`);
    expect(attemptPage).toContain(button);

    const plain = await get(runPath(plainJob));
    expect(plain).toContain('id="replay"');
    expect(plain).not.toContain('replay-from-pages');
  });

  it('queues what replay --from-pages queues, and refuses a run that kept no pages', async () => {
    const { attemptId, runKey } = failed[keptJob]!;
    const res = await postReplay(keptJob, { from: 'pages' });
    expect(res.status).toBe(303);
    const location = new URL(res.headers.get('location')!, server.url);
    expect(location.pathname).toBe(runPath(keptJob));
    const jobId = location.searchParams.get('replayed');
    expect(jobId).toBe(replayQueueJobId(runKey, attemptId, false, true));
    const queued = await queue.getJob(jobId!);
    expect(queued!.data).toMatchObject({ job: keptJob, runKey, trigger: 'replay', pagesOf: attemptId });
    expect(await get(`${location.pathname}${location.search}`)).toContain('Replay queued as job');

    const refused = await postReplay(plainJob, { from: 'pages' });
    expect(refused.status).toBe(303);
    const refusedAt = new URL(refused.headers.get('location')!, server.url);
    expect(refusedAt.searchParams.get('replayError')).toBe('no-kept-pages');
    expect(await get(`${refusedAt.pathname}${refusedAt.search}`)).toContain(
      'Replay not queued: the run has no complete kept pages (target.archive was off',
    );
    expect((await queue.getJobs(['waiting', 'prioritized', 'delayed'])).map((j) => j.data.job)).toEqual([keptJob]);

    // The plain Replay still runs the report again: no pages named.
    const plain = await postReplay(plainJob, {});
    const plainId = new URL(plain.headers.get('location')!, server.url).searchParams.get('replayed');
    expect((await queue.getJob(plainId!))!.data.pagesOf).toBeUndefined();
  });

  it('refuses a replay from kept pages after a guard trip, posted from a page that still offered it', async () => {
    const page = await get(runPath(guardJob));
    // The page offers no such button, but the command that accepts the guard.
    expect(page).not.toContain('replay-from-pages');
    expect(page).toContain(`report-etl replay ${failed[guardJob]!.runKey} --accept-guard`);
    const queuedBefore = (await queue.getJobs(['waiting', 'prioritized', 'delayed'])).length;
    const res = await postReplay(guardJob, { from: 'pages' });
    expect(res.status).toBe(303);
    const at = new URL(res.headers.get('location')!, server.url);
    expect(at.pathname).toBe(runPath(guardJob));
    expect(at.searchParams.get('replayError')).toBe('guard-tripped');
    expect(at.searchParams.get('replayed')).toBeNull();
    expect(await get(`${at.pathname}${at.search}`)).toContain(
      'Replay not queued: its target&#39;s guard stopped it, and a replay from kept pages trips it again: once you ' +
        'have reviewed the pages, report-etl replay &lt;run key&gt; --accept-guard loads them past it.',
    );
    expect(await queue.getJobs(['waiting', 'prioritized', 'delayed'])).toHaveLength(queuedBefore);

    // The plain Replay (the report run again) is still taken.
    const plain = await postReplay(guardJob, {});
    expect(new URL(plain.headers.get('location')!, server.url).searchParams.get('replayed')).not.toBeNull();
  });
});
