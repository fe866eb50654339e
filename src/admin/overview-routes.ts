/** `GET /admin`: the jobs overview, from the live jobs.yaml (valid and invalid jobs) and the run history. */
import type { FastifyInstance } from 'fastify';
import type pg from 'pg';
import type { LiveConfig } from '../config/live-config.ts';
import { firstSeen } from '../history/job-alerts.ts';
import { jobHealth } from '../history/job-health.ts';
import { sendPage } from './html.ts';
import { buildOverview, type SlotWait } from './job-overview.ts';
import type { EtlConfig } from '../config/schema.ts';
import type { ReportSlots } from '../report-api/report-slots.ts';
import { renderOverview } from './overview-page.ts';
import { runSubjects } from '../config/mandants.ts';

/** Finished attempts per job in the sparklines. */
const SPARKLINE_RUNS = 20;

/** The jobs with a run waiting for a report slot on one of `connections`, and that connection's slots. */
async function slotWaits(
  slots: Pick<ReportSlots, 'usage' | 'waitingLabels'>,
  connections: EtlConfig['connections'],
): Promise<Map<string, SlotWait>> {
  const out = new Map<string, SlotWait>();
  await Promise.all(
    Object.entries(connections).map(async ([connection, c]) => {
      const [usage, jobs] = await Promise.all([slots.usage(connection), slots.waitingLabels(connection)]);
      for (const job of jobs)
        if (!out.has(job))
          out.set(job, { connection, held: usage.held, limit: c.maxConcurrentReports, waiting: usage.waiting });
    }),
  );
  return out;
}

/** Registers `GET /admin` on `app`. */
export function registerOverviewRoutes(
  app: FastifyInstance,
  deps: { pool: pg.Pool; config: LiveConfig; slots?: Pick<ReportSlots, 'usage' | 'waitingLabels'> | undefined },
): void {
  app.get('/admin', async (_req, reply) => {
    const config = deps.config.current();
    const invalid = deps.config.invalid();
    const jobs = [
      ...runSubjects(config).map((s) => s.name),
      ...invalid.filter((e) => e.kind === 'job').map((e) => e.name),
    ];
    const [health, seen, waits] = await Promise.all([
      jobHealth(deps.pool, jobs, SPARKLINE_RUNS),
      firstSeen(deps.pool, jobs, false),
      deps.slots ? slotWaits(deps.slots, config.connections) : new Map<string, SlotWait>(),
    ]);
    const now = new Date();
    const overview = buildOverview(config, invalid, health, now, seen, waits);
    const alerts = invalid.filter((e) => e.kind === 'alert');
    return sendPage(reply, renderOverview(overview, now, alerts));
  });
}
