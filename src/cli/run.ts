/**
 * `report-etl run <job>`: one run now, in the foreground. Exit 0 ok, 1 run failed, 2 usage or config error. Ctrl-C
 * aborts the run (rolled back, report job deleted, recorded interrupted); a second Ctrl-C exits at once. A job with a
 * list of mandants runs each mandant (or those of `--mandant`) one after another, one summary line each, and exits 1
 * when any failed (docs/loaded-tables.md "Many mandants").
 */
import { manualRunOptions, type ManualRunFlags } from './options.ts';
import type { RegisterCommand } from './types.ts';
import { ConfigError } from '../errors.ts';
import { failureHint } from '../failure-hints.ts';
import { chooseSubjects, parseSubject } from '../config/mandants.ts';
import { describeInterval, manualInterval, parseZonedDate } from '../pipeline/logical-time.ts';
import { queuePrefixFromEnv } from '../queue/names.ts';
import { formatTime } from '../time-text.ts';
import { outputShape } from '../vocabulary.ts';
import { subjectZone } from '../config/job-zone.ts';

/** How long `run` waits at its end for alerts still being delivered, in ms. */
const ALERT_FLUSH_MS = 30_000;

/** `run <run key>`, plus `, attempt <attempt id>` unless they are the one UUID (no `--run-key`). */
function runAndAttempt(runKey: string, attemptId: string): string {
  return runKey === attemptId ? `run ${runKey}` : `run ${runKey}, attempt ${attemptId}`;
}

export const registerRun: RegisterCommand = (program, cli) => {
  const cmd = program.command('run').description('run one job of jobs.yaml now, in the foreground');
  manualRunOptions(cmd)
    .argument('<job>', 'job name in jobs.yaml')
    .option(
      '--run-key <key>',
      'run key of this logical run (default: the id of its attempt); append loads are exactly-once per key',
    )
    .action(async (jobName: string, opts: ManualRunFlags & { runKey?: string }) => {
      // Loaded here: `--help` and the other commands need none of it (start-up cost). The stores (not in
      // jobs.yaml) connect and migrate while the rest loads and jobs.yaml is read.
      const [{ openStores }, { makeLogger }] = await Promise.all([
        import('../app/bootstrap.ts'),
        import('../logger.ts'),
      ]);
      const logger = makeLogger({}, opts.logFormat);
      const storesOpening = openStores(logger);
      // A config error is the one to report when both fail; stores nobody took are closed in the finally below.
      storesOpening.catch(() => undefined);
      let storesTaken = false;
      try {
        await runWithStores();
      } finally {
        // Not awaited: a config error is reported at once, even while an unreachable store is still timing out.
        if (!storesTaken)
          void storesOpening.then(
            (s) => s.releasers.releaseAll(),
            () => undefined,
          );
      }

      async function runWithStores(): Promise<void> {
        const [
          { Releasers },
          { resolveJob },
          { loadConfigForJob },
          { AttemptFailedError, runAttempt },
          { openAttemptOwner },
          { noAlerts },
          { makeRunAlerts },
          { makeJanitor },
          { ReportSlots },
          { startTracing },
        ] = await Promise.all([
          import('../app/connections.ts'),
          import('../config/load.ts'),
          import('./job-config.ts'),
          import('../pipeline/run-attempt.ts'),
          import('../history/attempt-owner.ts'),
          import('../alerts/webhook-sender.ts'),
          import('../alerts/run-alerts.ts'),
          import('../queue/janitor.ts'),
          import('../report-api/report-slots.ts'),
          import('../app/tracing-sdk.ts'),
        ]);
        // `run sales_orders[8888]` is `run sales_orders --mandant 8888`.
        const named = parseSubject(jobName);
        const loaded = await loadConfigForJob(cli, opts.config, named.job);
        const job = resolveJob(loaded.config, named.job, opts.config);
        const given = named.mandant === undefined ? opts.mandant : [String(named.mandant), ...(opts.mandant ?? [])];
        const subjects = chooseSubjects(named.job, job.job, given);
        if (opts.runKey && subjects.length > 1)
          throw new ConfigError([
            `--run-key names one run, and job "${named.job}" runs ${subjects.length} mandants: give one --mandant`,
          ]);
        const chosen = opts.logicalTime ? parseZonedDate(opts.logicalTime, job.zone) : undefined;
        const interval = manualInterval(job, new Date(), chosen);
        const releasers = new Releasers();
        // Released last, so that every span of the run is exported before the command ends (docs/observability.md
        // "Tracing").
        const tracing = await startTracing(logger);
        if (tracing) releasers.add(() => tracing.shutdown());
        const controller = new AbortController();
        const onSignal = (sig: NodeJS.Signals) => {
          if (controller.signal.aborted) process.exit(130);
          logger.warn({ signal: sig }, 'aborting the run: rolling back and deleting the report job (again to force)');
          controller.abort(new Error(`received ${sig}`));
        };
        process.on('SIGINT', onSignal);
        process.on('SIGTERM', onSignal);
        releasers.add(() => {
          process.off('SIGINT', onSignal);
          process.off('SIGTERM', onSignal);
        });
        try {
          storesTaken = true;
          const { pool, redis, releasers: stores } = await storesOpening;
          releasers.add(() => stores.releaseAll());
          // Said once the stores answer (an unusable one is the one line said instead), on stderr with the log lines:
          // the summary on stdout stays one line (README "Commands"). A job without schedule stands for no
          // interval: said only when --logical-time chose a time.
          if (job.job.schedule || chosen) {
            const stands = describeInterval(job, interval, chosen !== undefined, (t) => formatTime(t, job.zone));
            cli.err(`${jobName}: ${stands}`);
          }
          const owner = await openAttemptOwner(pool, logger);
          releasers.add(() => owner.close());
          const prefix = queuePrefixFromEnv();
          // This command delivers alerts while the run goes on and waits for them a little at its end; what is
          // left, a long-running process delivers. BullMQ is loaded only when jobs.yaml has alert targets.
          const zoneOf = (subject: string) => subjectZone(loaded.config, subject);
          const alertDeps = { connection: redis, prefix, targets: () => loaded.config.alerts, logger, zoneOf };
          const alertQueue = Object.keys(loaded.config.alerts).length
            ? await import('../queue/alert-queue.ts')
            : undefined;
          const sender = alertQueue ? alertQueue.makeQueuedAlertSender(alertDeps) : noAlerts;
          const alertWorker = alertQueue?.makeAlertWorker(alertDeps);
          releasers.add(async () => {
            await sender.flush(ALERT_FLUSH_MS);
            await alertWorker?.close();
            await sender.close();
          });
          const alerts = makeRunAlerts(pool, sender, logger);
          const janitor = makeJanitor({
            pool,
            redis,
            logger,
            config: () => loaded.config,
            invalidJobs: () => loaded.invalid.filter((e) => e.kind === 'job').map((e) => e.name),
            alerts: sender,
            prefix,
          });
          releasers.add(() => janitor.close());
          // A foreground run takes a report slot like a queued one: the server's limit is the fleet's.
          const slots = new ReportSlots(redis, { prefix });
          releasers.add(() => slots.close());
          // Close the orphans of this job's earlier runs, then sweep: while the server renders, or at the end when
          // no report job started, unless interrupted (Ctrl-C does not wait for DELETEs to a server maybe down).
          let janitorWork: Promise<unknown> | undefined;
          const startJanitorWork = () =>
            (janitorWork ??= janitor
              .closeOrphans(subjects.map((s) => s.name))
              .then(() => janitor.sweep())
              .catch((err: unknown) => logger.warn({ err: String(err) }, 'janitor sweep failed')));
          releasers.add(() => (janitorWork || !controller.signal.aborted ? startJanitorWork() : undefined));
          /** One run of `name` (the job, or one mandant's run subject) and its summary line; its exit code. */
          async function runOne(name: string): Promise<number> {
            const job = resolveJob(loaded.config, name, opts.config);
            const alert = { job: name, trigger: 'manual' as const };
            let result;
            try {
              result = await runAttempt({
                job,
                request: {
                  trigger: 'manual',
                  parameters: opts.param,
                  ...(opts.runKey ? { runKey: opts.runKey } : {}),
                  logicalStart: interval.logicalStart.toISOString(),
                  logicalEnd: interval.logicalEnd.toISOString(),
                },
                pool,
                redis,
                logger,
                signal: controller.signal,
                owner,
                slots,
                prefix,
                onReportJobStarted: startJanitorWork,
              });
            } catch (err) {
              if (!(err instanceof AttemptFailedError)) throw err;
              const { attemptId } = err;
              const runKey = opts.runKey ?? attemptId;
              if (!controller.signal.aborted) await alerts.failed({ ...alert, runKey, attemptId, error: err.error });
              // The summary goes to stdout whatever the outcome (README "Commands"); the log lines went to stderr.
              const which = runAndAttempt(runKey, attemptId);
              cli.out(`${name}: failed (${err.code}${err.retryable ? ', retryable' : ''}), ${which}: ${err.message}`);
              // What to do, in docs/troubleshooting.md's words, as the run's admin page leads with them.
              const hint = controller.signal.aborted ? undefined : failureHint(err.code);
              if (hint) cli.err(`${name}: what to do: ${hint.todo} (docs/troubleshooting.md, ${err.code})`);
              // A config problem found only at run time (a type PostgreSQL does not know, a bad report name).
              return err.code === 'CONFIG_INVALID' || err.code === 'REPORT_NAME_INVALID' ? 2 : 1;
            }
            await alerts.succeeded({ ...alert, runKey: result.runKey, attemptId: result.attemptId });
            const secs = result.durationMs / 1000;
            // What a loaded row is depends on the output type (docs/loaded-tables.md "Output types").
            const shape = outputShape(job.job.report.outputType, job.job.target);
            const unit = shape === 'rows' ? 'rows' : shape === 'lines' ? 'lines' : 'documents';
            const counted = result.rows === 1 ? unit.slice(0, -1) : unit;
            const pages = `${result.pages} page${result.pages === 1 ? '' : 's'}`;
            const rate = `${Math.round(result.rows / Math.max(secs, 0.001))} ${unit}/s`;
            const mb = (result.bytes / 1e6).toFixed(1);
            cli.out(
              `${name}: ${result.status}, ${result.rows} ${counted}, ${pages}, ${mb} MB ` +
                `in ${secs.toFixed(1)} s (${rate}), ${runAndAttempt(result.runKey, result.attemptId)}` +
                (result.noTarget ? `; ${result.noTarget}` : ''),
            );
            return 0;
          }
          // One mandant after another: each takes its report slot as its turn comes. Any failure exits non-zero:
          // 1 when a run failed, 2 when every failure was a config problem.
          let code = 0;
          for (const subject of subjects) {
            if (controller.signal.aborted) break;
            const one = await runOne(subject.name);
            if (one !== 0) code = code === 0 ? one : Math.min(code, one);
          }
          if (code !== 0) cli.exit(code);
        } finally {
          await releasers.releaseAll().catch(() => undefined);
          logger.flush();
        }
      }
    });
};
