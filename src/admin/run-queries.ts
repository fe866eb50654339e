/**
 * The SQL the admin pages and /metrics read from the run history (DESIGN.md "Run history": etl.runs,
 * etl.run_errors), one small typed function per query (CONVENTIONS.md "Layout and names").
 */
import type { Queryable, RunRow } from '../warehouse/run-history.ts';
import type { AttemptStatus } from '../vocabulary.ts';

/** Filters of the run list (query string of /admin/runs). */
export interface RunListFilter {
  /** Only this job (exact name). */
  job?: string | undefined;
  /** Only attempts with this status. */
  status?: AttemptStatus | undefined;
  /** Attempts shown per job, newest first (1..200). */
  perJob: number;
}

/** One attempt in the run list: the etl.runs row plus the first line of its error. */
export interface RunListRow extends RunRow {
  first_error_line: string | null;
}

/**
 * The distinct job names of etl.runs by a loose index scan of (job, started_at): one index probe per job instead
 * of a pass over every attempt.
 */
const DISTINCT_JOBS = `WITH RECURSIVE jobs AS (
    SELECT min(job) AS job FROM etl.runs
    UNION ALL
    SELECT (SELECT min(job) FROM etl.runs WHERE job > jobs.job) FROM jobs WHERE jobs.job IS NOT NULL)
  SELECT job FROM jobs WHERE job IS NOT NULL`;

/**
 * The latest attempts of every job (or of the filtered job/status), newest first within each job, jobs by name.
 * Each job's attempts come from the (job, started_at DESC) index through a LATERAL join.
 */
export async function listRecentRuns(db: Queryable, f: RunListFilter): Promise<RunListRow[]> {
  const jobs = f.job === undefined ? `(SELECT job FROM (${DISTINCT_JOBS}) d WHERE $1::text IS NULL)` : '(SELECT $1::text AS job)';
  const { rows } = await db.query<RunListRow>(
    `SELECT r.*, split_part(r.error, E'\\n', 1) AS first_error_line
       FROM ${jobs} j
       CROSS JOIN LATERAL (
         SELECT * FROM etl.runs x
          WHERE x.job = j.job AND ($2::text IS NULL OR x.status = $2)
          ORDER BY x.started_at DESC
          LIMIT $3) r
      ORDER BY r.job, r.started_at DESC`,
    [f.job ?? null, f.status ?? null, f.perJob],
  );
  return rows;
}

/** The distinct job names in the run history, sorted (for the filter form). */
export async function listJobNames(db: Queryable): Promise<string[]> {
  const { rows } = await db.query<{ job: string }>(DISTINCT_JOBS);
  return rows.map((r) => r.job);
}

/** One row of etl.run_errors as the run page shows it; `problem` and `details` are the parsed jsonb. */
export interface RunErrorRow {
  id: string;
  occurred_at: Date;
  stage: string;
  error_kind: string;
  retryable: boolean;
  http_status: number | null;
  message: string;
  server_message: string | null;
  problem: unknown;
  details: unknown;
}

/** Every error recorded for one attempt, oldest first. */
export async function listRunErrors(db: Queryable, runId: string): Promise<RunErrorRow[]> {
  const { rows } = await db.query<RunErrorRow>('SELECT * FROM etl.run_errors WHERE run_id = $1 ORDER BY occurred_at, id', [runId]);
  return rows;
}

/** The other attempts of one logical run (same job and run_key), newest first. */
export async function listAttempts(db: Queryable, job: string, runKey: string): Promise<RunRow[]> {
  const { rows } = await db.query<RunRow>('SELECT * FROM etl.runs WHERE job = $1 AND run_key = $2 ORDER BY started_at DESC LIMIT 50', [job, runKey]);
  return rows;
}

/** Finished attempts per (job, status) with their loaded rows and bytes (succeeded attempts only). */
export interface RunTotals {
  job: string;
  status: string;
  runs: number;
  rows: number;
  bytes: number;
}

/** Cumulative duration histogram of one job: counts per upper bound (s), plus sum (s) and count. */
export interface DurationHistogram {
  job: string;
  /** Cumulative counts, one per bound of the `bounds` passed in, in the same order. */
  buckets: number[];
  sumSeconds: number;
  count: number;
}

/** What /metrics derives from etl.runs. */
export interface RunAggregates {
  totals: RunTotals[];
  durations: DurationHistogram[];
}

/**
 * Totals and the duration histogram over all finished attempts, in one pass of etl.runs grouped by (job, status)
 * with one `count(*) FILTER (WHERE duration_ms <= bound)` per bucket, which is already the cumulative `le` count.
 * Attempts still `running` are left out, so every counted value only grows (until run history is pruned).
 * @param bounds histogram upper bounds in seconds, ascending (the `le` labels; +Inf is the count)
 */
export async function runAggregates(db: Queryable, bounds: readonly number[]): Promise<RunAggregates> {
  const bucketColumns = bounds.map((_, i) => `count(*) FILTER (WHERE duration_ms <= $${i + 1})::text AS b${i}`).join(', ');
  const { rows } = await db.query<Record<string, string | null> & { job: string; status: string; n: string; timed: string }>(
    `SELECT job, status, count(*)::text AS n, count(duration_ms)::text AS timed, ${bucketColumns},
            coalesce(sum(duration_ms), 0)::text AS sum_ms, coalesce(sum(rows), 0)::text AS rows, coalesce(sum(bytes), 0)::text AS bytes
       FROM etl.runs WHERE status <> 'running' GROUP BY job, status ORDER BY job, status`,
    bounds.map((b) => Math.round(b * 1000)),
  );
  const totals: RunTotals[] = [];
  const durations = new Map<string, DurationHistogram>();
  for (const r of rows) {
    const succeeded = r.status === 'succeeded';
    totals.push({ job: r.job, status: r.status, runs: Number(r.n), rows: succeeded ? Number(r.rows) : 0, bytes: succeeded ? Number(r.bytes) : 0 });
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
