/**
 * Cost of the admin server's run-history reads at scale: a /metrics scrape (attemptAggregates, one pass over
 * etl.attempts) and the run list page (listRecentRuns + listJobNames over etl.runs), with N runs of J jobs, one
 * attempt each. The rows are inserted inside a transaction that is rolled back at the end, so the shared tables
 * never see them. Prints the median of 7 timings per query, in ms.
 * Run: `npx node bench/admin-queries.ts [attempts=200000] [jobs=50]`.
 */
import { randomUUID } from 'node:crypto';
import { makePool } from '../src/app/connections.ts';
import { silentLogger } from '../src/logger.ts';
import { DURATION_BUCKETS_SECONDS } from '../src/admin/metrics.ts';
import { listJobNames, listRecentRuns } from '../src/history/run-list.ts';
import { attemptAggregates } from '../src/history/attempt-aggregates.ts';
import { migrate } from '../src/history/migrate.ts';

const N = Number(process.argv[2] ?? 200_000);
const JOBS = Number(process.argv[3] ?? 50);

async function median(label: string, f: () => Promise<unknown>): Promise<void> {
  await f();
  const times: number[] = [];
  for (let i = 0; i < 7; i++) {
    const t = performance.now();
    await f();
    times.push(performance.now() - t);
  }
  times.sort((a, b) => a - b);
  console.log(`${label.padEnd(44)} ${times[3]!.toFixed(1).padStart(8)} ms`);
}

const pool = makePool(silentLogger, process.env.DATABASE_URL, 2);
await migrate(pool);
const db = await pool.connect();
try {
  await db.query('BEGIN');
  const t0 = performance.now();
  // Runs of one attempt each spread over 90 days; ~85 % succeeded, 12 % failed, 3 % interrupted;
  // durations 0.2 s .. ~2 h.
  await db.query(
    `INSERT INTO etl.runs (job, run_key, trigger, created_at, attempts, status, first_started_at, last_finished_at,
                         rows)
     SELECT 'bench_job_' || (i % $2), 'k' || i, 'schedule', now() - (i || ' seconds')::interval * 38, 1,
            CASE WHEN i % 100 < 85 THEN 'succeeded' WHEN i % 100 < 97 THEN 'failed' ELSE 'interrupted' END,
            now() - (i || ' seconds')::interval * 38, now() - (i || ' seconds')::interval * 38 + interval '1 minute',
            CASE WHEN i % 100 < 85 THEN i % 10000 END
       FROM generate_series(1, $1) i`,
    [N, JOBS],
  );
  await db.query(
    `INSERT INTO etl.attempts (attempt_id, job, run_key, trigger, attempt, status, target_table, write_mode,
                               rows, pages, bytes, started_at, finished_at, duration_ms, error)
     SELECT gen_random_uuid(), r.job, r.run_key, 'schedule', 1, r.status, 'erp.t', 'replace',
            (i % 10000), 1 + i % 10, (i % 10000) * 120,
            r.first_started_at, r.last_finished_at, (200 + (i * 7919) % 7200000)::bigint,
            CASE WHEN r.status <> 'succeeded' THEN E'report job failed: Report execution failed:\\nDivision by zero' END
       FROM generate_series(1, $1) i JOIN etl.runs r ON r.job = 'bench_job_' || (i % $2) AND r.run_key = 'k' || i`,
    [N, JOBS],
  );
  await db.query('ANALYZE etl.runs');
  await db.query('ANALYZE etl.attempts');
  console.log(
    `inserted ${N} runs of ${JOBS} jobs in ${((performance.now() - t0) / 1000).toFixed(1)} s (rolled back at ` +
      `the end); run ${randomUUID().slice(0, 8)}`,
  );
  await median('metrics: attemptAggregates (one scrape)', () => attemptAggregates(db, DURATION_BUCKETS_SECONDS));
  await median('runs page: listRecentRuns (10 per job)', () => listRecentRuns(db, { perJob: 10 }));
  await median('runs page: listRecentRuns (job filter)', () => listRecentRuns(db, { job: 'bench_job_7', perJob: 10 }));
  await median('runs page: listRecentRuns (status=failed)', () => listRecentRuns(db, { status: 'failed', perJob: 10 }));
  await median('runs page: listJobNames', () => listJobNames(db));
} finally {
  await db.query('ROLLBACK');
  db.release();
  await pool.end();
}
