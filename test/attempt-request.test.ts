/**
 * What each attempt asked the server for (etl.attempts.request, src/history/attempt-request.ts) and the interval a
 * run by hand stands for (src/pipeline/logical-time.ts manualInterval): recorded by real attempts against the
 * simulator, shown by `runs --attempts`, the failure alert and the attempt and run pages.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { resolveJob } from '../src/config/load.ts';
import type { AlertMessage } from '../src/alerts/alert-message.ts';
import { alertBody } from '../src/alerts/alert-message.ts';
import { makeRunAlerts } from '../src/alerts/run-alerts.ts';
import type { AlertSender } from '../src/alerts/webhook-sender.ts';
import { renderAttemptPage } from '../src/admin/attempt-page.ts';
import { renderRunPage } from '../src/admin/run-pages.ts';
import { attemptsOfRun } from '../src/history/attempt-list.ts';
import { readAttemptRequest } from '../src/history/attempt-request.ts';
import { getAttempt } from '../src/history/attempts.ts';
import { getRun } from '../src/history/runs.ts';
import { silentLogger } from '../src/logger.ts';
import { runAttempt } from '../src/pipeline/run-attempt.ts';
import { describeInterval, logicalTimeOf, manualInterval } from '../src/pipeline/logical-time.ts';
import { formatTime } from '../src/time-text.ts';
import { uniqueName } from './support/env.ts';
import { attemptFailure, type Harness, jobEntry, startHarness } from './support/harness.ts';
import { runCli } from './support/cli.ts';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
});

/** A daily job at 02:15 Europe/Zurich whose FROM and TO are its interval's days. */
function dailyJob(parameters: Record<string, string> = {}) {
  const name = uniqueName('daily');
  const config = h.config({
    [name]: {
      ...jobEntry(
        {
          name: 'Sales/Orders',
          outputType: 'txt',
          paging: 100,
          parameters: {
            ROWS: '120',
            FROM: '%{logicalStart:yyyy-MM-dd}',
            TO: '%{logicalEnd:yyyy-MM-dd}',
            ...parameters,
          },
        },
        { table: `${h.schema}.${name}`, mode: 'replace' },
      ),
      schedule: '15 2 * * *',
    },
  });
  return resolveJob(config, name);
}

it('a run by hand stands for the latest complete interval of its schedule, --logical-time for another', () => {
  const job = dailyJob();
  // 22:40 in Zurich (UTC+1): the interval (02:15 yesterday, 02:15 today], not (02:15 today, now].
  const now = new Date('2026-11-25T21:40:00Z');
  const t = logicalTimeOf(job, {}, now);
  expect(t.logicalStart.toISOString()).toBe('2026-11-24T01:15:00.000Z');
  expect(t.logicalEnd.toISOString()).toBe('2026-11-25T01:15:00.000Z');
  expect(manualInterval(job, now)).toEqual({ logicalStart: t.logicalStart, logicalEnd: t.logicalEnd });
  const chosen = manualInterval(job, now, new Date('2026-03-14T23:00:00Z'));
  expect(chosen.logicalEnd.toISOString()).toBe('2026-03-14T23:00:00.000Z');
  expect(chosen.logicalStart.toISOString()).toBe('2026-03-14T01:15:00.000Z');
  const at = (d: Date) => formatTime(d, job.zone, 'job');
  // A --logical-time that is no tick ends the interval all the same, and the line says which tick was meant.
  expect(describeInterval(job, chosen, true, at)).toBe(
    'interval (2026-03-14 02:15:00+01:00, 2026-03-15 00:00:00+01:00], the one --logical-time ends, which is no tick ' +
      'of "15 2 * * *" (the next is 2026-03-15 02:15:00+01:00: give it for that tick\'s period)',
  );
  const onTick = manualInterval(job, now, new Date('2026-03-15T01:15:00Z'));
  expect(describeInterval(job, onTick, true, at)).toBe(
    'interval (2026-03-14 02:15:00+01:00, 2026-03-15 02:15:00+01:00], the one --logical-time ends',
  );
  const line = describeInterval(job, manualInterval(job, now), false, (d) => formatTime(d, job.zone, 'job'));
  expect(line).toBe(
    'interval (2026-11-24 02:15:00+01:00, 2026-11-25 02:15:00+01:00], the latest complete interval of ' +
      '"15 2 * * *"; --logical-time chooses another',
  );
});

it('records the rendered request and interval on the attempt; the pages and runs --attempts show them', async () => {
  // A secret of the connection in a parameter is kept out of the record.
  const job = dailyJob({ NOTE: 'demo-secret' });
  const result = await runAttempt({ job, pool: h.pool, redis: h.redis, logger: silentLogger });
  expect(result.status).toBe('succeeded');
  const attempt = (await getAttempt(h.pool, result.attemptId))!;
  const request = readAttemptRequest(attempt.request)!;
  const interval = manualInterval(job, new Date(attempt.started_at));
  expect(request.logicalEnd).toBe(interval.logicalEnd.toISOString());
  expect(request.logicalStart).toBe(interval.logicalStart.toISOString());
  const day = (d: Date) => formatTime(d, 'Europe/Zurich', 'job').slice(0, 10);
  expect(request.report).toEqual({
    mandant: '7777',
    name: 'Sales/Orders',
    outputType: 'txt',
    paging: 100,
    parameters: {
      ROWS: '120',
      FROM: day(interval.logicalStart),
      TO: day(interval.logicalEnd),
      NOTE: '[redacted]',
    },
  });
  expect(JSON.stringify(attempt.request)).not.toContain('demo-secret');

  const run = (await getRun(h.pool, job.name, result.runKey))!;
  const attempts = await attemptsOfRun(h.pool, job.name, result.runKey);
  const attemptPage = renderAttemptPage(attempt, run, [], attempts, [], false, job.zone);
  expect(attemptPage).toContain('What was sent');
  expect(attemptPage).toContain(`<code>${day(interval.logicalStart)}</code>`);
  expect(attemptPage).toContain(
    `(${formatTime(interval.logicalStart, job.zone)}, ${formatTime(interval.logicalEnd, job.zone)}]`,
  );
  // A run by hand has no tick: "Scheduled for" says the logical time it stood for.
  expect(attemptPage).toMatch(
    new RegExp(`class="scheduled-for">${formatTime(interval.logicalEnd, job.zone).replace('+', '\\+')} `),
  );
  const runPage = renderRunPage(run, attempts, {}, undefined, [], job.zone);
  expect(runPage).toContain('What attempt 1 sent');
  expect(runPage).toContain(`<code>${day(interval.logicalEnd)}</code>`);

  const cli = await runCli(['runs', '--attempts', '--job', job.name, '--config', '/nonexistent/jobs.yaml']);
  expect(cli.code, cli.stderr).toBe(0);
  expect(cli.stdout).toContain(`7777 Sales/Orders txt/100 ROWS=120 FROM=${day(interval.logicalStart)}`);
  expect(cli.stdout).toContain(`(${formatTime(interval.logicalStart)}, ${formatTime(interval.logicalEnd)}]`);
});

it('the failure alert says what was sent: the server refused FROM = TO', async () => {
  const job = dailyJob({ TO: '%{logicalStart:yyyy-MM-dd}' });
  const sent: Omit<AlertMessage, 'event'>[] = [];
  const sender: AlertSender = {
    send: (m) => void sent.push(m),
    flush: async () => true,
    close: async () => undefined,
  };
  const alerts = makeRunAlerts(h.pool, sender, silentLogger);
  const failed = await attemptFailure(runAttempt({ job, pool: h.pool, redis: h.redis, logger: silentLogger }));
  await alerts.failed({ job: job.name, runKey: failed.attemptId, attemptId: failed.attemptId, error: failed.error });
  expect(sent).toHaveLength(1);
  const from = sent[0]!.request!.report!.parameters.FROM!;
  expect(sent[0]!.request!.report!.parameters.TO).toBe(from);
  const slack = alertBody({ ...sent[0]!, event: 'failed' }, 'slack') as { text: string };
  expect(slack.text).toContain(`parameters: ROWS=120, FROM=${from}, TO=${from}`);
  expect(slack.text).toContain('report: mandant 7777, Sales/Orders, txt, paging 100');
  const generic = alertBody({ ...sent[0]!, event: 'failed' }, 'generic') as { request: unknown };
  expect(generic.request).toMatchObject({ report: { parameters: { FROM: from, TO: from } } });
});
