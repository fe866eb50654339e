/**
 * `GET /admin`: the jobs overview (overview-page.ts), from the live jobs.yaml (valid and invalid jobs) and the run
 * history. Access control is the server's onRequest hook.
 */
import type { FastifyInstance } from 'fastify';
import type pg from 'pg';
import type { LiveConfig } from '../config/live-config.ts';
import { firstSeen } from '../history/job-alerts.ts';
import { jobHealth } from '../history/job-health.ts';
import { PAGE_CSP } from './html.ts';
import { buildOverview } from './job-overview.ts';
import { renderOverview } from './overview-page.ts';

/** Finished attempts per job in the sparklines. */
export const SPARKLINE_RUNS = 20;

/** Registers `GET /admin` on `app`. */
export function registerOverviewRoutes(app: FastifyInstance, deps: { pool: pg.Pool; config: LiveConfig }): void {
  app.get('/admin', async (_req, reply) => {
    const config = deps.config.current();
    const invalid = deps.config.invalid();
    const jobs = [...Object.keys(config.jobs), ...invalid.filter((e) => e.kind === 'job').map((e) => e.name)];
    const [health, seen] = await Promise.all([jobHealth(deps.pool, jobs, SPARKLINE_RUNS), firstSeen(deps.pool, jobs, false)]);
    const now = new Date();
    const overview = buildOverview(config, invalid, health, now, seen);
    const alerts = invalid.filter((e) => e.kind === 'alert');
    return reply.header('content-security-policy', PAGE_CSP).type('text/html; charset=utf-8').send(renderOverview(overview, now, alerts));
  });
}
