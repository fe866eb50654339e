/**
 * Alerts and freshness, received on a local HTTP listener: `failed` and `recovered` from foreground
 * `report-etl run`s (the user's own cron), `stale` once per breach, `failed` after the last retry of a queued run,
 * `login_required` instead of `failed` for LOGIN_REQUIRED, the generic / slack / teams bodies, delivery retried after
 * a 500, and the webhook URL (a secret) in no log line.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { makeAlertWorker, makeQueuedAlertSender, ALERT_QUEUE_NAME } from '../src/queue/alert-queue.ts';
import { Queue } from 'bullmq';
import { makeRunAlerts } from '../src/alerts/run-alerts.ts';
import { EtlError } from '../src/errors.ts';
import { silentLogger } from '../src/logger.ts';
import { enqueueManual } from '../src/queue/manual-run.ts';
import { makeQueue, type RunQueue } from '../src/queue/queue.ts';
import { configSchema } from '../src/config/schema.ts';
import { FAILING_MESSAGE } from '../src/simulator/catalogue.ts';
import { uniqueName } from './support/env.ts';
import { startHarness, type Harness } from './support/harness.ts';
import { attemptsOf, captureLogger, deleteKeys, deleteRuns, waitFor, workerOf } from './support/queue-env.ts';
import { runCli, startCli } from './support/cli-process.ts';

interface Received {
  path: string;
  body: Record<string, unknown>;
}
let h: Harness;
let listener: Server;
let base: string;
const received: Received[] = [];
let failNext = 0;
/** Paths answered 500 while they are in here (a target that is down). */
const down = new Set<string>();
/** Requests per path, answered or not. */
const tries = new Map<string, number>();
const SECRET_PATH = `/hooks/T0/B0/${uniqueName('s3cr3t')}`;
const jp = uniqueName('alrt');
let configPath: string;

beforeAll(async () => {
  h = await startHarness();
  listener = createServer((req, res) => {
    let text = '';
    req.on('data', (d: Buffer) => (text += d.toString()));
    req.on('end', () => {
      const path = req.url ?? '';
      tries.set(path, (tries.get(path) ?? 0) + 1);
      if (down.has(path)) {
        res.writeHead(500).end('down');
        return;
      }
      if (failNext > 0) {
        failNext -= 1;
        res.writeHead(500).end('try later');
        return;
      }
      received.push({ path: req.url ?? '', body: JSON.parse(text) as Record<string, unknown> });
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((r) => listener.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(listener.address() as AddressInfo).port}`;
  configPath = join(await mkdtemp(join(tmpdir(), 'report-etl-alerts-')), 'jobs.yaml');
});
afterAll(async () => {
  await deleteRuns(h.pool, jp);
  await h.pool.query('DELETE FROM etl.job_alerts WHERE job LIKE $1', [`${jp}%`]);
  await new Promise((r) => listener.close(r));
  await h?.close();
});

async function writeConfig(report: string, extraJobs = ''): Promise<void> {
  await writeFile(
    configPath,
    `connections:
  sim: { baseUrl: "\${SIM_URL}", clientId: demo-client, clientSecret: "\${SIM_SECRET}", pollIntervalMs: 20 }
alerts:
  oncall: { webhook: "\${ONCALL_WEBHOOK}", events: [failed, recovered, stale, login_required] }
  chat: { webhook: "\${SLACK_WEBHOOK_URL}", events: [failed, recovered], format: slack }
  teams: { webhook: "\${TEAMS_WEBHOOK}", events: [recovered], format: teams }
jobs:
  ${jp}_main:
    connection: sim
    report: { mandant: 7777, name: ${report}, parameters: { ROWS: "50" } }
    target: { table: ${h.schema}.main }
${extraJobs}`,
  );
}

const env = () => ({
  SIM_URL: h.sim.url,
  SIM_SECRET: 'demo-secret',
  ONCALL_WEBHOOK: `${base}/generic`,
  SLACK_WEBHOOK_URL: `${base}${SECRET_PATH}`,
  TEAMS_WEBHOOK: `${base}/teams`,
  ADMIN_PUBLIC_URL: 'https://etl.example.com/',
});
const at = (path: string) => received.filter((r) => r.path === path);

it(
  'report-etl run: failed, then recovered, to each target in its format; ' +
    'retried after a 500; the webhook URL never logged',
  async () => {
    await writeConfig('Failing');
    failNext = 1; // the first delivery is refused with 500 and must be tried again
    const failed = await runCli(['run', `${jp}_main`, '-c', configPath], env());
    expect(failed.code).toBe(1);
    const generic = await waitFor('failed alert (generic)', () =>
      at('/generic').find((r) => r.body.event === 'failed'),
    );
    expect(generic.body).toMatchObject({
      source: 'report-etl',
      event: 'failed',
      job: `${jp}_main`,
      errorKind: 'REPORT_FAILED',
      trigger: 'manual',
    });
    // The server's own first meaningful line, not our prefix, and its whole text; a link to the run's page.
    expect(generic.body.error).toBe("Report execution failed: Division by zero in formula 'Marge'");
    expect(generic.body.errorText).toBe(FAILING_MESSAGE);
    const runKeyOf = (await attemptsOf(h.pool, `${jp}_main`))[0]!.run_key;
    expect(generic.body.url).toBe(`https://etl.example.com/admin/runs/${jp}_main/${runKeyOf}`);
    // A foreground run's key is its first attempt's id.
    const attemptId = (await attemptsOf(h.pool, `${jp}_main`))[0]!.attempt_id;
    expect(generic.body).toMatchObject({ runKey: attemptId, attemptId });
    expect(generic.body.summary).toContain(`(run ${attemptId})`);
    const slack = at(SECRET_PATH).find((r) => String(r.body.text).includes('failed'))!;
    expect(Object.keys(slack.body)).toEqual(['text', 'id']);
    expect(slack.body.text).toContain(`report-etl: job ${jp}_main failed (REPORT_FAILED)`);
    // The whole text in a code block, and the run's page as a link.
    expect(slack.body.text).toContain("```Report execution failed:\nDivision by zero in formula 'Marge'\nline 42```");
    expect(slack.body.text).toContain(`<https://etl.example.com/admin/runs/${jp}_main/${runKeyOf}|Open the run>`);
    expect(at('/teams')).toEqual([]); // teams listens to recovered only
    expect(`${failed.stdout}${failed.stderr}`).not.toContain(SECRET_PATH.split('/').pop()!);
    expect(failed.stderr).toContain('alert not accepted: trying again');

    await writeConfig('Sales/Orders');
    const ok = await runCli(['run', `${jp}_main`, '-c', configPath], env());
    expect(ok.code).toBe(0);
    const recovered = await waitFor('recovered alert', () => at('/generic').find((r) => r.body.event === 'recovered'));
    expect(recovered.body.job).toBe(`${jp}_main`);
    const teams = await waitFor('teams card', () => at('/teams')[0]);
    expect(teams.body).toMatchObject({
      type: 'message',
      attachments: [{ contentType: 'application/vnd.microsoft.card.adaptive', content: { type: 'AdaptiveCard' } }],
    });
    expect(JSON.stringify(teams.body)).toContain('recovered');
    // A second success is no recovery.
    const again = await runCli(['run', `${jp}_main`, '-c', configPath], env());
    expect(again.code).toBe(0);
    expect(at('/generic').filter((r) => r.body.event === 'recovered')).toHaveLength(1);
    expect(`${ok.stderr}${again.stderr}`).not.toContain(SECRET_PATH.split('/').pop()!);
  },
  120_000,
);

it("a mandant's failed alert prints its times in the job's zone", async () => {
  const job = `${jp}_mandants`;
  await writeConfig(
    'Sales/Orders',
    `  ${job}:
    connection: sim
    timezone: Asia/Tokyo
    report: { mandant: [7777, 8888], name: Failing }
    target: { table: ${h.schema}.mandants }
`,
  );
  const failed = await runCli(['run', job, '--mandant', '8888', '-c', configPath], env());
  expect(failed.code).toBe(1);
  const slack = await waitFor("the mandant run's slack alert", () =>
    at(SECRET_PATH).find((r) => String(r.body.text).includes(`job ${job}[8888] failed`)),
  );
  // Tokyo has no summer time: the logical time is printed with +09:00, not in UTC marked Z.
  expect(String(slack.body.text)).toMatch(/logical time: \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\+09:00/);
}, 120_000);

it('stale: once per breach of freshness, checked by the janitor at the start of report-etl run', async () => {
  const stale = `${jp}_stale`;
  await writeConfig(
    'Sales/Orders',
    `  ${stale}:
    connection: sim
    report: { mandant: 7777, name: Empty }
    target: { table: ${h.schema}.stale }
    freshness: 1s
`,
  );
  const before = at('/generic').length;
  // First check records when the never-run job was first seen; the next ones, over a second later, find it stale.
  // A sweep is skipped while another process holds the janitor's lease (other test files run theirs): run again.
  const alert = await waitFor(
    'stale alert',
    async () => {
      expect((await runCli(['run', `${jp}_main`, '-c', configPath], env())).code).toBe(0);
      return at('/generic')
        .slice(before)
        .find((r) => r.body.event === 'stale');
    },
    90_000,
    1_100,
  );
  expect(alert.body).toMatchObject({ job: stale, freshness: '1s' });
  expect((await runCli(['run', `${jp}_main`, '-c', configPath], env())).code).toBe(0);
  expect(at('/generic').filter((r) => r.body.event === 'stale' && r.body.job === stale)).toHaveLength(1);
}, 120_000);

it(
  'a queued run alerts failed once, after its last retry; ' + 'LOGIN_REQUIRED goes out as login_required where listed',
  async () => {
    const prefix = uniqueName('alrtq');
    const queue: RunQueue = makeQueue(h.redis, prefix);
    const job = `${jp}_queued`;
    const targets = { oncall: { webhook: `${base}/queued`, events: ['failed' as const], format: 'generic' as const } };
    // A server that cannot be reached: SERVER_UNREACHABLE is retryable, so both attempts are made.
    const config = configSchema.parse({
      connections: {
        down: { baseUrl: 'http://127.0.0.1:9', clientId: 'c', clientSecret: 's', requestTimeoutMs: 2_000 },
      },
      jobs: {
        [job]: {
          connection: 'down',
          retry: { attempts: 2, backoffMs: 10 },
          report: { mandant: 1, name: 'X' },
          target: { table: `${h.schema}.q` },
        },
      },
      alerts: targets,
    });
    const sender = makeQueuedAlertSender({ connection: h.redis, prefix, targets: () => targets, logger: silentLogger });
    const alertWorker = makeAlertWorker({ connection: h.redis, prefix, targets: () => targets, logger: silentLogger });
    const worker = workerOf(h, config, { prefix, alerts: makeRunAlerts(h.pool, sender, silentLogger) });
    try {
      await enqueueManual(queue, config, job);
      await waitFor(
        'two failed attempts',
        async () => (await attemptsOf(h.pool, job)).filter((r) => r.status === 'failed').length === 2,
        60_000,
      );
      const alert = await waitFor('failed alert', () => at('/queued')[0]);
      expect(alert.body).toMatchObject({ event: 'failed', job, errorKind: 'SERVER_UNREACHABLE' });
      expect(await sender.flush(10_000)).toBe(true);
      expect(at('/queued')).toHaveLength(1);
    } finally {
      await worker.close(0);
      await alertWorker.close();
      await sender.close();
      await queue.obliterate({ force: true }).catch(() => undefined);
      await queue.close();
      await deleteKeys(h.redis, prefix);
    }

    const { logger, lines } = captureLogger();
    const two = {
      both: {
        webhook: `${base}/both`,
        events: ['failed' as const, 'login_required' as const],
        format: 'generic' as const,
      },
      onlyFailed: { webhook: `${base}/only-failed`, events: ['failed' as const], format: 'generic' as const },
    };
    const prefix2 = uniqueName('alrtq');
    const s2 = makeQueuedAlertSender({ connection: h.redis, prefix: prefix2, targets: () => two, logger });
    const w2 = makeAlertWorker({ connection: h.redis, prefix: prefix2, targets: () => two, logger });
    const loginError = new EtlError('TOKEN_FAILED', 'refresh refused');
    (loginError as unknown as { code: string }).code = 'LOGIN_REQUIRED';
    await makeRunAlerts(h.pool, s2, logger).failed({
      job: `${jp}_login`,
      runKey: `${jp}_login__manual`,
      attemptId: '00000000-0000-0000-0000-000000000001',
      error: loginError,
    });
    expect(await s2.flush(10_000)).toBe(true);
    expect(at('/both').map((r) => r.body.event)).toEqual(['login_required']);
    expect(at('/only-failed').map((r) => r.body.event)).toEqual(['failed']);
    expect(JSON.stringify(lines)).not.toContain(base);
    await w2.close();
    await s2.close();
    await deleteKeys(h.redis, prefix2);
  },
  120_000,
);

it(
  'an alert pending when its process stops is delivered by the next one, once; ' +
    'the queue never holds the webhook URL',
  async () => {
    const prefix = uniqueName('alrtr');
    const job = `${jp}_restart`;
    const path = `/restart/${uniqueName('tok')}`;
    const restartConfig = join(await mkdtemp(join(tmpdir(), 'report-etl-alerts-')), 'jobs.yaml');
    await writeFile(
      restartConfig,
      `connections:
  sim: { baseUrl: "\${SIM_URL}", clientId: demo-client, clientSecret: "\${SIM_SECRET}", pollIntervalMs: 20 }
alerts:
  oncall: { webhook: "\${RESTART_WEBHOOK}", events: [failed] }
jobs:
  ${job}:
    connection: sim
    retry: { attempts: 1 }
    report: { mandant: 7777, name: Failing }
    target: { table: ${h.schema}.restart }
`,
    );
    const workerEnv = { ...env(), RESTART_WEBHOOK: `${base}${path}`, REPORT_ETL_QUEUE_PREFIX: prefix };
    const queue = makeQueue(h.redis, prefix);
    const alerts = new Queue(ALERT_QUEUE_NAME, { connection: h.redis, prefix });
    down.add(path);
    let worker = startCli(['worker', '--config', restartConfig], workerEnv);
    try {
      await waitFor('the worker to take runs', () => worker.stderr().includes('worker ready'), 60_000);
      await enqueueManual(
        queue,
        configSchema.parse({
          connections: { sim: { baseUrl: h.sim.url, clientId: 'demo-client', clientSecret: 'x' } },
          jobs: { [job]: { connection: 'sim', report: { mandant: 7777, name: 'Failing' }, target: { table: 'x.y' } } },
        }),
        job,
      );
      // The target is down: the alert is tried and waits in the queue for its next try.
      await waitFor('a first delivery try', () => (tries.get(path) ?? 0) >= 1, 60_000);
      const [queued] = await alerts.getJobs(['delayed', 'waiting', 'active']);
      expect(queued).toBeDefined();
      expect(JSON.stringify(queued!.data)).not.toContain(path);
      worker.child.kill('SIGTERM');
      expect(await worker.exited).toBe(0);
      expect(at(path)).toEqual([]);
      // The target is back; a new process of the installation delivers the alert that was left.
      down.delete(path);
      worker = startCli(['worker', '--config', restartConfig], workerEnv);
      const delivered = await waitFor('the alert after the restart', () => at(path)[0], 60_000);
      expect(delivered.body).toMatchObject({ event: 'failed', job, errorKind: 'REPORT_FAILED' });
      await waitFor('the alert recorded as delivered', async () =>
        (await alerts.getJob(queued!.id!))?.getState().then((s) => s === 'completed'),
      );
      expect(at(path)).toHaveLength(1);
    } finally {
      worker.child.kill('SIGTERM');
      await worker.exited;
      await alerts.close();
      await queue.obliterate({ force: true }).catch(() => undefined);
      await queue.close();
      await deleteKeys(h.redis, prefix);
    }
  },
  180_000,
);
