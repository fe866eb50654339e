/**
 * Freshness: a job with `freshness: 26h` (or its connection's) is stale when its last success is older; one that
 * never succeeded counts from when its freshness was first checked. One `stale` alert per breach.
 */
import type pg from 'pg';
import { parseWindow } from '../config/duration.ts';
import type { EtlConfig } from '../config/schema.ts';
import { claimStaleAlert, firstSeen } from '../history/job-alerts.ts';
import { jobHealth } from '../history/job-health.ts';
import type { AlertSender } from './webhook-sender.ts';
import { jobOfSubject, runSubjects } from '../config/mandants.ts';

/** A job's freshness as written (`26h`) and in ms, or undefined when it has none. */
export function freshnessOf(config: EtlConfig, job: string): { text: string; ms: number } | undefined {
  const j = jobOfSubject(config, job);
  const text = j?.freshness ?? (j ? config.connections[j.connection]?.freshness : undefined);
  const ms = text === undefined ? undefined : parseWindow(text);
  return text !== undefined && ms !== undefined ? { text, ms } : undefined;
}

/** Whether a job is stale at `now`, and its `base` (last success, else when first `seen`): one alert per base. */
export function staleness(lastSuccess: Date | undefined, seen: Date | undefined, freshnessMs: number, now: Date) {
  const base = lastSuccess ?? seen;
  return { stale: base !== undefined && now.getTime() - base.getTime() > freshnessMs, base };
}

/** Checks every job that has a freshness and sends `stale` once per breach. @returns the jobs stale now */
export async function checkFreshness(pool: pg.Pool, config: EtlConfig, sender: AlertSender, now = new Date()) {
  const jobs = runSubjects(config)
    .map((s) => s.name)
    .filter((j) => freshnessOf(config, j));
  if (jobs.length === 0) return [];
  const [health, seen] = await Promise.all([jobHealth(pool, jobs, 0), firstSeen(pool, jobs)]);
  const stale: string[] = [];
  for (const h of health) {
    const f = freshnessOf(config, h.job)!;
    const lastSuccess = h.lastSuccess ? (h.lastSuccess.finished_at ?? h.lastSuccess.started_at) : undefined;
    const s = staleness(lastSuccess, seen.get(h.job), f.ms, now);
    if (!s.stale) continue;
    stale.push(h.job);
    if (await claimStaleAlert(pool, h.job, s.base!)) {
      const m = { job: h.job, at: now.toISOString(), freshness: f.text, lastSuccessAt: lastSuccess?.toISOString() };
      sender.send(m, ['stale']);
    }
  }
  return stale;
}
