/** What /metrics derives from etl.attempts when scraped, so that every process reports the same numbers. */
import type { Queryable } from '../db.ts';

/** Finished attempts per (job, status); rows and bytes of succeeded ones. */
export interface AttemptTotals {
  job: string;
  status: string;
  attempts: number;
  rows: number;
  bytes: number;
}

/** Cumulative duration histogram of one job. */
export interface DurationHistogram {
  job: string;
  /** One count per bound passed in. */
  buckets: number[];
  sumSeconds: number;
  count: number;
}

export interface AttemptAggregates {
  totals: AttemptTotals[];
  durations: DurationHistogram[];
}

/** Upper bounds of the attempt duration histogram in s: the `le` labels of /metrics. */
export const DURATION_BUCKETS_SECONDS: readonly number[] = [1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200];

/**
 * Totals and duration histograms of finished attempts, pruned ones (etl.pruned_attempts) included: they never drop.
 * @param bounds upper bounds in s, ascending; pruned counts are added only where kept under the same bounds
 */
export async function attemptAggregates(db: Queryable, bounds: readonly number[]): Promise<AttemptAggregates> {
  const bucketColumns = bounds.map((_, i) => `count(*) FILTER (WHERE duration_ms <= $${i + 1}) AS b${i}`).join(', ');
  const summedBuckets = bounds.map((_, i) => `sum(b${i})::text AS b${i}`).join(', ');
  const boundsMs = bounds.map((b) => Math.round(b * 1000));
  const prunedBuckets = bounds
    .map((_, i) => `CASE WHEN bounds_ms = $${bounds.length + 1}::bigint[] THEN buckets[${i + 1}] ELSE 0 END AS b${i}`)
    .join(', ');
  const { rows } = await db.query<
    Record<string, string | null> & { job: string; status: string; n: string; timed: string }
  >(
    `SELECT job, status, sum(n)::text AS n, sum(timed)::text AS timed, ${summedBuckets},
            sum(sum_ms)::text AS sum_ms, sum(rows)::text AS rows, sum(bytes)::text AS bytes
       FROM (SELECT job, status, count(*) AS n, count(duration_ms) AS timed, ${bucketColumns},
                    coalesce(sum(duration_ms), 0) AS sum_ms, coalesce(sum(rows), 0) AS rows,
                    coalesce(sum(bytes), 0) AS bytes
               FROM etl.attempts WHERE status <> 'running' GROUP BY job, status
             UNION ALL
             SELECT job, status, attempts, timed, ${prunedBuckets}, sum_ms, rows, bytes FROM etl.pruned_attempts) t
      GROUP BY job, status ORDER BY job, status`,
    [...boundsMs, boundsMs],
  );
  const totals: AttemptTotals[] = [];
  const durations = new Map<string, DurationHistogram>();
  for (const r of rows) {
    const succeeded = r.status === 'succeeded';
    totals.push({
      job: r.job,
      status: r.status,
      attempts: Number(r.n),
      rows: succeeded ? Number(r.rows) : 0,
      bytes: succeeded ? Number(r.bytes) : 0,
    });
    const timed = Number(r.timed);
    if (timed === 0) continue;
    let h = durations.get(r.job);
    if (!h) durations.set(r.job, (h = { job: r.job, buckets: bounds.map(() => 0), sumSeconds: 0, count: 0 }));
    bounds.forEach((_, i) => (h.buckets[i]! += Number(r[`b${i}`])));
    h.count += timed;
    h.sumSeconds += Number(r.sum_ms) / 1000;
  }
  return { totals, durations: [...durations.values()] };
}
