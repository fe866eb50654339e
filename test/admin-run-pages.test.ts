/**
 * The run history pages of the admin server over real HTTP: the run list (logical runs with their attempt counts),
 * a run's page with its attempts, an attempt's page with the server's text verbatim and escaped, old
 * `/admin/runs/<attempt id>` links redirected, and replay through the queue.
 */
import { randomBytes } from 'node:crypto';
import type { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { escapeHtml } from '../src/admin/html.ts';
import type { AdminServer } from '../src/admin/server.ts';
import { failAttempt } from '../src/history/attempts.ts';
import { recordRunRequest } from '../src/history/runs.ts';
import type { AttemptResult } from '../src/pipeline/run-attempt.ts';
import { makeQueue } from '../src/queue/queue.ts';
import { revertAppendedRun } from '../src/warehouse/revert.ts';
import { FAILING_MESSAGE } from '../src/simulator/catalogue.ts';
import { uniqueName } from './support/env.ts';
import { attemptFailure, type Harness, jobEntry, startHarness } from './support/harness.ts';
import { insertTestAttempt } from './support/queue-env.ts';
import { adminServerOf } from './support/admin-login.ts';

const token = `tok-${randomBytes(12).toString('hex')}`;
// The run history is shared by every test file: our job names are unique, and assertions only look at them.
const failJob = uniqueName('adp_fail');
const okJob = uniqueName('adp_ok');
const markupJob = uniqueName('adp_markup');
const revJob = uniqueName('adp_rev');
const moreJob = uniqueName('adp_more');
const keyJob = uniqueName('adp_key');

let h: Harness;
let queue: Queue;
let server: AdminServer;
let failedAttemptId: string;
let okResult: AttemptResult;
let markupAttemptId: string;

beforeAll(async () => {
  h = await startHarness();
  queue = makeQueue(h.redis, uniqueName('adpq'));
  const config = h.config({
    [failJob]: jobEntry({ name: 'Failing', outputType: 'json' }, { table: `${h.schema}.failing` }),
    [okJob]: jobEntry(
      { name: 'Sales/Orders', outputType: 'json', paging: 50, parameters: { ROWS: '120' } },
      { table: `${h.schema}.orders` },
    ),
    [moreJob]: jobEntry({ name: 'Failing', outputType: 'json' }, { table: `${h.schema}.more` }),
  });
  const err = await attemptFailure(h.run(config, failJob));
  failedAttemptId = err.attemptId;
  okResult = await h.run(config, okJob);

  // A failure whose texts are markup, with an HTTP status and problem details, recorded as an attempt's would be.
  markupAttemptId = crypto.randomUUID();
  await insertTestAttempt(h.pool, { attemptId: markupAttemptId, job: markupJob });
  await failAttempt(h.pool, markupAttemptId, {
    status: 'failed',
    stage: 'start',
    errorKind: 'ACCESS_FORBIDDEN',
    retryable: false,
    message: 'refused <b>bold</b> & "quoted"',
    httpStatus: 403,
    serverMessage: "<script>alert('x')</script>\nsecond line",
    problem: {
      status: 403,
      title: 'Forbidden <i>',
      type: 'https://docs.example/erp/authorization/user-service-access-forbidden',
    },
  });

  server = await adminServerOf(h, queue, { auth: { token }, config });
}, 60_000);

afterAll(async () => {
  await server?.close();
  await queue?.obliterate({ force: true }).catch(() => undefined);
  await queue?.close();
  await h?.pool.query('DELETE FROM etl.runs WHERE job = ANY($1)', [[failJob, okJob, markupJob, revJob, moreJob]]);
  await h?.pool.query('DELETE FROM etl.appended_runs WHERE job = $1', [revJob]);
  await h?.pool.query('DELETE FROM etl.reverts WHERE job = $1', [revJob]);
  await h?.close();
});

const bearer = { authorization: `Bearer ${token}` };
const get = (path: string, headers: Record<string, string> = {}) =>
  fetch(`${server.url}${path}`, { headers, redirect: 'manual' });

describe('run history pages', () => {
  // The failed run ran in the foreground: its run key is its first attempt's id.
  const failedRunPath = () => `/admin/runs/${failJob}/${failedAttemptId}`;

  it(
    'the run list shows the failed run, its attempts and the whole first line of ' + "the server's own message",
    async () => {
      const res = await get(`/admin/runs?job=${encodeURIComponent(failJob)}`, bearer);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-security-policy')).toContain("default-src 'none'");
      const body = await res.text();
      expect(body).toContain(`<a href="${failedRunPath()}">${failedAttemptId}</a>`);
      expect(body).toContain('<span class="s-failed">failed</span>');
      expect(body).toContain('<th>Attempts</th>');
      expect(body).toContain('<td class="num attempts">1</td>');
      const { rows } = await h.pool.query<{ server_message: string }>(
        'SELECT server_message FROM etl.run_errors WHERE attempt_id = $1',
        [failedAttemptId],
      );
      expect(rows[0]!.server_message).toBe(FAILING_MESSAGE);
      expect(body).toContain(`<td>${escapeHtml("Report execution failed: Division by zero in formula 'Marge'")}</td>`);
      expect(body).toContain(`<h2><a href="/admin/runs?job=${failJob}">`);
      expect(body).not.toContain(`<h2><a href="/admin/runs?job=${okJob}">`);
    },
  );

  it('filters by the status of the newest attempt across jobs', async () => {
    const body = await (await get('/admin/runs?status=succeeded&limit=200', bearer)).text();
    expect(body).toContain(`<h2><a href="/admin/runs?job=${okJob}">`);
    expect(body).not.toContain(`<h2><a href="/admin/runs?job=${failJob}">`);
    expect(body).not.toContain(failedRunPath());
  });

  it('the run page shows the run, its attempts linked to their pages, and a Replay button', async () => {
    const res = await get(failedRunPath(), bearer);
    expect(res.status).toBe(200);
    const body = await res.text();
    expect(body).toContain(`<dd class="run-key">${failedAttemptId}</dd>`);
    expect(body).toContain('<dd class="attempts">1</dd>');
    expect(body).toContain(`<a href="/admin/attempts/${failedAttemptId}">${failedAttemptId.slice(0, 8)}</a>`);
    expect(body).toContain(`action="${failedRunPath()}/replay"`);
    const ok = await (await get(`/admin/runs/${okJob}/${okResult.runKey}`, bearer)).text();
    expect(ok).toContain(`<dd class="rows">${okResult.rows}</dd>`);
    expect(ok).not.toContain('id="replay"');
    // A foreground run was never queued: no Queued line.
    expect(ok).not.toContain('<dt>Queued</dt>');
  });

  it(
    "the failed run page leads with the failure: code, stage, retryable, the server's whole text and the " +
      'troubleshooting hint, and Replay says what must change first',
    async () => {
      const body = await (await get(failedRunPath(), bearer)).text();
      const lead = body.slice(body.indexOf('<section id="failure"'), body.indexOf('</section>'));
      expect(lead).toContain(`<a href="/admin/attempts/${failedAttemptId}">attempt 1</a>`);
      expect(lead).toContain('<dd class="code">REPORT_FAILED</dd>');
      expect(lead).toContain('<dd class="stage">poll</dd>');
      expect(lead).toContain('<dd class="retryable">no: the same failure comes back until something changes</dd>');
      // The server's every line, before the run's fields.
      expect(lead).toContain(`<pre class="failure-text">${escapeHtml(FAILING_MESSAGE)}</pre>`);
      expect(body.indexOf('<section id="failure"')).toBeLessThan(body.indexOf('<dt>Run key</dt>'));
      expect(lead).toContain(
        '<strong>What to do:</strong> read the server&#39;s text; an avx report needs its <code>.avx</code> ' +
          'extension in <code>report.name</code>.',
      );
      // Not the primary button: what must change first, then a plain one.
      const advice = body.slice(body.indexOf('<div class="replay-advice" id="replay-advice">'));
      expect(advice).toMatch(/^<div class="replay-advice" id="replay-advice"><p><strong>REPORT_FAILED is not retried/);
      expect(advice).toContain('First: read the server&#39;s text');
      expect(body).toContain(
        '<button type="submit" id="replay" class="secondary">Replay once that is changed</button>',
      );
      expect(body).not.toContain('class="primary"');
      // The attempt page offers it the same way.
      const attempt = await (await get(`/admin/attempts/${failedAttemptId}`, bearer)).text();
      expect(attempt).toContain('id="replay-advice"');
      expect(attempt).toContain('id="replay" class="secondary"');
    },
  );

  it('a retryable failure keeps the primary Replay; an interrupted attempt says what it had done', async () => {
    const record = async (job: string, status: 'failed' | 'interrupted', errorKind: string, retryable: boolean) => {
      const attemptId = crypto.randomUUID();
      await insertTestAttempt(h.pool, { attemptId, job });
      await failAttempt(h.pool, attemptId, {
        status,
        stage: 'fetch',
        errorKind,
        retryable,
        message: `${errorKind} on page 34`,
        figures: { pages: 33, rows: 3300 },
      });
      return (await get(`/admin/runs/${job}/${attemptId}`, bearer)).text();
    };
    const transient = await record(moreJob, 'failed', 'HTTP_TRANSIENT', true);
    expect(transient).toContain('<dd class="retryable">yes: retried automatically while the job has attempts left');
    expect(transient).toContain('<button type="submit" id="replay" class="primary">Replay run</button>');
    expect(transient).not.toContain('id="replay-advice"');
    // Not retried only because Redis lost its queue job: a plain replay is the cure, nothing is to change first.
    const lost = await record(moreJob, 'failed', 'QUEUE_JOB_LOST', false);
    expect(lost).toContain('<dd class="retryable">no: nothing is left to retry it; a replay runs it again</dd>');
    expect(lost).toContain('<button type="submit" id="replay" class="primary">Replay run</button>');
    expect(lost).not.toContain('id="replay-advice"');
    expect(lost).not.toContain('fails the same way');
    const orphaned = await record(moreJob, 'interrupted', 'ORPHANED', false);
    expect(orphaned).toContain('<h2>Why it stopped:');
    expect(orphaned).toContain('<dd class="done">33 pages read, 3,300 rows</dd>');
    expect(orphaned).toContain('<button type="submit" id="replay" class="primary">Replay run</button>');
  });

  it(
    "a killed attempt's pages say where it stopped (its recorded progress); its trace id links with " +
      'REPORT_ETL_TRACE_URL, escaped, and only to http(s)',
    async () => {
      const attemptId = crypto.randomUUID();
      const traceId = '0af7651916cd43dd8448eb211c80319c';
      await insertTestAttempt(h.pool, { attemptId, job: moreJob, traceId });
      const progress = { page: 33, pagesRead: 32, pages: 40, rows: 3_200_000, at: new Date().toISOString() };
      await h.pool.query('UPDATE etl.attempts SET report_job_id = $2, progress = $3 WHERE attempt_id = $1', [
        attemptId,
        'job-1',
        JSON.stringify(progress),
      ]);
      const words = 'stopped at page 33 of 40, 3,200,000 rows read';
      // As the janitor closes it: no figures of its own.
      await failAttempt(h.pool, attemptId, {
        status: 'interrupted',
        stage: 'load',
        errorKind: 'ORPHANED',
        retryable: true,
        message: 'orphaned: the process that ran attempt 1 (test) ended without finishing it; it ' + words,
      });
      const saved = process.env.REPORT_ETL_TRACE_URL;
      try {
        process.env.REPORT_ETL_TRACE_URL = 'https://tempo.example/trace/{traceId}?org=1&view="x"';
        const runPage = await (await get(`/admin/runs/${moreJob}/${attemptId}`, bearer)).text();
        expect(runPage).toContain(`<dd class="done">${words}, nothing committed</dd>`);
        expect(runPage).toContain(`Done before it stopped:</strong> ${words} (as last recorded,`);
        const link =
          `<a class="trace-link" href="https://tempo.example/trace/${traceId}?org=1&amp;view=&quot;x&quot;" ` +
          `target="_blank" rel="noopener noreferrer"><code>${traceId}</code></a>`;
        expect(runPage).toContain(`<dd class="trace-id">${link}</dd>`);
        const attemptPage = await (await get(`/admin/attempts/${attemptId}`, bearer)).text();
        expect(attemptPage).toContain(`<dd class="progress">${words}, nothing committed <span class="muted">`);
        // One format of counts on a page: the recorded message (commas, as the janitor writes it) and the page's own.
        expect(attemptPage).toContain(`ended without finishing it; it ${words}`);
        expect(attemptPage).not.toMatch(/\d[\u202f\u00a0 ]\d{3}\b/);
        expect(attemptPage).toContain(`<dd class="trace-id">${link}</dd>`);
        for (const template of ['javascript:alert(1)//{traceId}', 'https://tempo.example/trace/', undefined]) {
          if (template === undefined) delete process.env.REPORT_ETL_TRACE_URL;
          else process.env.REPORT_ETL_TRACE_URL = template;
          const plain = await (await get(`/admin/attempts/${attemptId}`, bearer)).text();
          expect(plain).toContain(`<dd class="trace-id"><code>${traceId}</code></dd>`);
          expect(plain).not.toContain('trace-link');
        }
      } finally {
        if (saved === undefined) delete process.env.REPORT_ETL_TRACE_URL;
        else process.env.REPORT_ETL_TRACE_URL = saved;
      }
    },
  );

  it('the run page of a queued run says when it was queued and how long it waited for a worker', async () => {
    const runKey = `${okJob}__queued`;
    await recordRunRequest(h.pool, {
      job: okJob,
      runKey,
      queueJobId: runKey,
      trigger: 'manual',
      queuedAt: new Date(Date.now() - 125_000),
    });
    const body = await (await get(`/admin/runs/${okJob}/${runKey}`, bearer)).text();
    expect(body).toMatch(
      new RegExp(
        /<dt>Queued<\/dt><dd class="queued">[\d: -]+\+0[12]:00 <span class="muted">\(a worker /.source +
          /began it 2 min 0[4-9] s later\)<\/span><\/dd>/.source,
      ),
    );
  });

  it("the attempt page shows the server's multi-line text verbatim, its run, and the run's Replay button", async () => {
    const res = await get(`/admin/attempts/${failedAttemptId}`, bearer);
    expect(res.status).toBe(200);
    const body = await res.text();
    expect(body).toContain(`<pre class="server-message">${escapeHtml(FAILING_MESSAGE)}</pre>`);
    expect(FAILING_MESSAGE).toContain('\n');
    expect(body).toContain(`<dd class="attempt-id">${failedAttemptId}</dd>`);
    expect(body).toContain(`<a href="${failedRunPath()}">`);
    expect(body).toContain(`action="${failedRunPath()}/replay"`);
  });

  it("times are in the job's time zone with its UTC offset; a job jobs.yaml lacks has them in UTC", async () => {
    // The harness's connection runs in Europe/Zurich: +01:00 in winter, +02:00 in summer.
    const zoned = /<dt>First started<\/dt><dd>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\+0[12]:00<\/dd>/;
    expect(await (await get(`/admin/runs/${okJob}/${okResult.runKey}`, bearer)).text()).toMatch(zoned);
    expect(await (await get(`/admin/attempts/${okResult.attemptId}`, bearer)).text()).toMatch(
      /<dt>Started<\/dt><dd>[\d: -]+\+0[12]:00<\/dd>/,
    );
    expect(await (await get(`/admin/runs?job=${encodeURIComponent(okJob)}`, bearer)).text()).toMatch(
      /<td>[\d: -]+\+0[12]:00<\/td>/,
    );
    expect(await (await get(`/admin/attempts/${markupAttemptId}`, bearer)).text()).toMatch(
      /<dt>Started<\/dt><dd>[\d: -]+Z<\/dd>/,
    );
  });

  it('escapes markup in messages and shows HTTP status and problem details', async () => {
    const body = await (await get(`/admin/attempts/${markupAttemptId}`, bearer)).text();
    expect(body).not.toContain('<script>');
    expect(body).not.toContain('<b>bold');
    expect(body).toContain(
      '<pre class="server-message">&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;\nsecond line</pre>',
    );
    expect(body).toContain('refused &lt;b&gt;bold&lt;/b&gt; &amp; &quot;quoted&quot;');
    expect(body).toContain('<dd class="http-status">403</dd>');
    expect(body).toContain('&quot;title&quot;: &quot;Forbidden &lt;i&gt;&quot;');
    expect(body).toContain('user-service-access-forbidden');
  });

  it('old links to /admin/runs/<attempt id> (alerts, chat) redirect to the attempt page', async () => {
    const old = await get(`/admin/runs/${failedAttemptId}`, bearer);
    expect(old.status).toBe(301);
    expect(old.headers.get('location')).toBe(`/admin/attempts/${failedAttemptId}`);
    const doc = await get(`/admin/runs/${failedAttemptId}/documents/2`, bearer);
    expect(doc.status).toBe(301);
    expect(doc.headers.get('location')).toBe(`/admin/attempts/${failedAttemptId}/documents/2`);
  });

  it('/admin/runs/<run key> and /admin/attempts/<run key> lead to the run, as a key pasted from the CLI', async () => {
    // A queued run's key is no attempt id (`report-etl enqueue` prints it; so does `runs`).
    const runKey = `${keyJob}__20261126T011500Z`;
    const attemptId = crypto.randomUUID();
    await insertTestAttempt(h.pool, { attemptId, job: keyJob, runKey, trigger: 'schedule' });
    for (const path of [`/admin/runs/${runKey}`, `/admin/attempts/${runKey}`]) {
      const found = await get(path, bearer);
      expect(found.status, path).toBe(302);
      expect(found.headers.get('location'), path).toBe(`/admin/runs/${keyJob}/${runKey}`);
    }
    const uuidKey = crypto.randomUUID();
    await recordRunRequest(h.pool, { job: keyJob, runKey: uuidKey, trigger: 'manual', queueJobId: 'q' });
    const queued = await get(`/admin/runs/${uuidKey}`, bearer);
    expect(queued.status).toBe(302);
    expect(queued.headers.get('location')).toBe(`/admin/runs/${keyJob}/${uuidKey}`);
    const none = await get(`/admin/runs/${crypto.randomUUID()}`, bearer);
    expect(none.status).toBe(404);
    expect(await none.text()).toContain('no run or attempt');
  });

  it('answers 404 for an unknown run or attempt, and a malformed old link', async () => {
    expect((await get(`/admin/attempts/${crypto.randomUUID()}`, bearer)).status).toBe(404);
    expect((await get('/admin/attempts/not-a-uuid', bearer)).status).toBe(404);
    expect((await get(`/admin/runs/${failJob}/no-such-run`, bearer)).status).toBe(404);
    expect((await get(`/admin/runs/${okJob}/${failedAttemptId}`, bearer)).status).toBe(404);
    const malformed = await get('/admin/runs/not-a-uuid', bearer);
    expect(malformed.status).toBe(404);
    expect(await malformed.text()).toContain("a run's page is /admin/runs/<job>/<run key>");
  });

  it(
    'POST replay re-queues the failed run with the same run key and redirects ' + 'back to the run with a notice',
    async () => {
      const res = await fetch(`${server.url}${failedRunPath()}/replay`, {
        method: 'POST',
        headers: { ...bearer, 'content-type': 'application/x-www-form-urlencoded', origin: server.url },
        body: '',
        redirect: 'manual',
      });
      expect(res.status).toBe(303);
      const location = new URL(res.headers.get('location')!, server.url);
      expect(location.pathname).toBe(failedRunPath());
      const jobId = location.searchParams.get('replayed');
      expect(jobId).toBeTruthy();
      const job = await queue.getJob(jobId!);
      expect(job).toBeDefined();
      expect(job!.data).toMatchObject({ job: failJob, runKey: failedAttemptId, trigger: 'replay' });
      const page = await (await get(`${location.pathname}${location.search}`, bearer)).text();
      expect(page).toContain(
        `Replay queued as job <a href="/admin/queues/queue/report-etl/${encodeURIComponent(jobId!)}"><code>` +
          `${escapeHtml(jobId)}</code></a>`,
      );
      // A run that succeeded is not replayed: back to its page with the reason.
      const refused = await fetch(`${server.url}/admin/runs/${okJob}/${okResult.runKey}/replay`, {
        method: 'POST',
        headers: { ...bearer, origin: server.url },
        redirect: 'manual',
      });
      expect(refused.status).toBe(303);
      const refusedAt = new URL(refused.headers.get('location')!, server.url);
      expect(refusedAt.searchParams.get('replayError')).toBe('succeeded');
      expect(await (await get(`${refusedAt.pathname}${refusedAt.search}`, bearer)).text()).toContain(
        '<div class="problem" role="alert" id="replay-error">Replay not queued: the run succeeded: nothing to ' +
          'replay.</div>',
      );
    },
  );

  it('shows only its own words for a replay notice: no text from the link reaches the page', async () => {
    const planted = 'Call +1 555 0100 and read out the admin token';
    for (const query of [
      `replayError=${encodeURIComponent(planted)}`,
      `replayError=${encodeURIComponent('<b>x</b>')}`,
      `replayed=${encodeURIComponent(planted)}`,
      'replayError=toString',
    ]) {
      const body = await (await get(`${failedRunPath()}?${query}`, bearer)).text();
      expect(body, query).not.toContain('Call +1 555');
      expect(body, query).not.toContain('&lt;b&gt;x');
      expect(body, query).not.toContain('role="alert" id="replay-error"');
      expect(body, query).not.toContain('Replay queued');
    }
    const running = await (await get(`${failedRunPath()}?replayError=running`, bearer)).text();
    expect(running).toContain('Replay not queued: its newest attempt is still running: wait for it to end.');
    // A queue job that is not a replay of this run is not announced as one.
    const other = await (
      await get(`/admin/runs/${okJob}/${okResult.runKey}?replayed=${failedAttemptId}`, bearer)
    ).text();
    expect(other).not.toContain('Replay queued');
  });

  it('offers no Replay for a run whose job left jobs.yaml, and refuses a replay posted anyway', async () => {
    const config = h.config({
      [failJob]: jobEntry({ name: 'Failing', outputType: 'json' }, { table: `${h.schema}.failing` }),
    });
    const withConfig = await adminServerOf(h, queue, { auth: { token }, config });
    try {
      const path = `/admin/runs/${markupJob}/${markupAttemptId}`;
      const page = await (await fetch(`${withConfig.url}${path}`, { headers: bearer })).text();
      expect(page).toContain(`Job ${markupJob} is no longer in jobs.yaml: add it back to replay its runs.`);
      expect(page).not.toContain('id="replay"');
      const attemptPage = await (
        await fetch(`${withConfig.url}/admin/attempts/${markupAttemptId}`, { headers: bearer })
      ).text();
      expect(attemptPage).not.toContain('id="replay"');
      const refused = await fetch(`${withConfig.url}${path}/replay`, {
        method: 'POST',
        headers: { ...bearer, origin: withConfig.url },
        redirect: 'manual',
      });
      expect(refused.status).toBe(303);
      expect(new URL(refused.headers.get('location')!, withConfig.url).searchParams.get('replayError')).toBe(
        'job-gone',
      );
      // A job still in jobs.yaml keeps its button.
      expect(await (await fetch(`${withConfig.url}${failedRunPath()}`, { headers: bearer })).text()).toContain(
        'id="replay"',
      );
    } finally {
      await withConfig.close();
    }
  });

  it('a reverted append run shows its revert and a Replay button, which queues it again', async () => {
    const config = h.config({
      [revJob]: jobEntry(
        { name: 'Stock/Levels', outputType: 'json' },
        { table: `${h.schema}.stock_append`, mode: 'append' },
      ),
    });
    const loaded = await h.run(config, revJob, { runKey: 'rev-1' });
    const withConfig = await adminServerOf(h, queue, { auth: { token }, config });
    try {
      const path = `/admin/runs/${revJob}/rev-1`;
      expect(await (await fetch(`${withConfig.url}${path}`, { headers: bearer })).text()).not.toContain('id="replay"');
      expect(await revertAppendedRun(h.pool, revJob, 'rev-1', 'oncall@here')).toMatchObject({
        kind: 'reverted',
        rows: loaded.rows,
      });
      const page = await (await fetch(`${withConfig.url}${path}`, { headers: bearer })).text();
      expect(page).toMatch(
        new RegExp(
          `<p class="notice" id="reverted" role="status">Reverted at [\\d: -]+\\+0[12]:00: ` +
            `its ${loaded.rows} rows were removed from ${h.schema}.stock_append. A replay appends the run again.</p>`,
        ),
      );
      expect(page).toContain(
        `<td><a href="/admin/attempts/${loaded.attemptId}">${loaded.attemptId.slice(0, 8)}</` +
          `a></td><td>oncall@here</td>`,
      );
      expect(page).toContain('id="replay"');
      const replayed = await fetch(`${withConfig.url}${path}/replay`, {
        method: 'POST',
        headers: { ...bearer, origin: withConfig.url },
        redirect: 'manual',
      });
      expect(replayed.status).toBe(303);
      const jobId = new URL(replayed.headers.get('location')!, withConfig.url).searchParams.get('replayed');
      expect((await queue.getJob(jobId!))?.data).toMatchObject({ job: revJob, runKey: 'rev-1', trigger: 'replay' });
    } finally {
      await withConfig.close();
    }
  });
});
