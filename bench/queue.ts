/**
 * Cost of the queue's own work, next to a run's seconds: enqueueRun (add + read back, the per-tick cost of every
 * scheduler) sequential and 8 in flight, the same tick enqueued by 8 schedulers at once (dedup), a tick's
 * logical-start scan (cronTicks.previous), and a catch-up/backfill scan over a range.
 * Uses a unique BullMQ prefix on the local Redis and deletes its keys after.
 * Run: `npx node bench/queue.ts [enqueues=2000]`.
 */
import { randomUUID } from 'node:crypto';
import { makeRedis } from '../src/app/connections.ts';
import { silentLogger } from '../src/logger.ts';
import { cronTicks } from '../src/config/cron-ticks.ts';
import { tickQueueJobId } from '../src/queue/names.ts';
import { enqueueRun, makeQueue } from '../src/queue/queue.ts';
import { deleteKeys } from './lib/redis-keys.ts';

const N = Number(process.argv[2] ?? 2_000);
const redis = makeRedis(silentLogger, process.env.REDIS_URL);
const prefix = `bench_${randomUUID().slice(0, 8)}`;
const queue = makeQueue(redis, prefix);

function report(label: string, n: number, ms: number): void {
  console.log(
    `${label.padEnd(52)} ${String(n).padStart(7)} in ${ms.toFixed(0).padStart(6)} ms  ` +
      `${((n / ms) * 1000).toFixed(0).padStart(8)} /s  ${((ms / n) * 1000).toFixed(0).padStart(6)} µs each`,
  );
}

try {
  let t = performance.now();
  for (let i = 0; i < N; i++) await enqueueRun(queue, { job: 'bench', trigger: 'manual', runKey: `seq_${i}` });
  report('enqueueRun, sequential', N, performance.now() - t);

  t = performance.now();
  for (let i = 0; i < N; i += 8) {
    await Promise.all(
      Array.from({ length: 8 }, (_, k) =>
        enqueueRun(queue, { job: 'bench', trigger: 'manual', runKey: `par_${i + k}` }),
      ),
    );
  }
  report('enqueueRun, 8 in flight', N, performance.now() - t);

  t = performance.now();
  let added = 0;
  const ticks = N / 8;
  for (let i = 0; i < ticks; i++) {
    const id = tickQueueJobId('bench', new Date(Date.UTC(2026, 0, 1) + i * 60_000));
    const r = await Promise.all(
      Array.from({ length: 8 }, () =>
        enqueueRun(queue, { job: 'bench', trigger: 'schedule', runKey: id }, { jobId: id }),
      ),
    );
    added += r.filter((x) => x.added).length;
  }
  report(`same tick from 8 schedulers (${added} added of ${ticks} ticks)`, ticks, performance.now() - t);

  const daily = cronTicks('15 2 * * *', 'Europe/Zurich');
  t = performance.now();
  const M = 1000;
  for (let i = 0; i < M; i++) daily.previous(new Date(Date.UTC(2026, 0, 1) + i * 3_600_000));
  report('previous tick of a daily schedule', M, performance.now() - t);

  t = performance.now();
  const range = daily.between(new Date('2025-01-01T00:00:00Z'), new Date('2026-01-01T00:00:00Z'));
  report(`daily ticks of a year (${range.ticks.length} found)`, 1, performance.now() - t);

  const everyTwo = cronTicks('*/2 * * * * *', 'UTC');
  t = performance.now();
  const day = everyTwo.between(new Date('2026-01-01T00:00:00Z'), new Date('2026-01-01T06:00:00Z'));
  report(`*/2 s ticks of 6 h (${day.ticks.length} found)`, 1, performance.now() - t);
} finally {
  await queue.obliterate({ force: true }).catch(() => undefined);
  await queue.close();
  await deleteKeys(redis, prefix);
  redis.disconnect();
}
