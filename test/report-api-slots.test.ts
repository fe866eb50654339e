/**
 * Report slots (src/report-api/report-slots.ts) on the real Redis: never more holders than the limit, waiters served
 * in order, a dead process's slots freed when their lease runs out (kill -9 of a child), and an aborted waiter gives
 * up its place.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import { makeRedis } from '../src/app/connections.ts';
import { silentLogger } from '../src/logger.ts';
import { ReportSlots, SLOT_CLASS, slotOrder, type HeldSlot } from '../src/report-api/report-slots.ts';
import { REDIS_URL, uniqueName } from './support/env.ts';
import { waitFor } from './support/queue-env.ts';

let redis: Redis;
const prefix = uniqueName('slots');
const made: ReportSlots[] = [];
/** A process's slots (each test process plays several processes). */
function processSlots(leaseMs = 30_000): ReportSlots {
  const s = new ReportSlots(redis, { prefix, leaseMs, pollMs: 200 });
  made.push(s);
  return s;
}

beforeAll(() => {
  redis = makeRedis(silentLogger, REDIS_URL);
});
afterAll(async () => {
  await Promise.all(made.map((s) => s.close()));
  const keys = await redis.keys(`${prefix}:*`);
  if (keys.length) await redis.del(...keys);
  redis.disconnect();
});

it('never lets more runs hold a slot than the limit, across processes, and serves the line in order', async () => {
  const [a, b] = [processSlots(), processSlots()];
  const first = await Promise.all([a.acquire('erp', 2), b.acquire('erp', 2)]);
  expect(await a.usage('erp')).toEqual({ held: 2, waiting: 0 });
  // Five more in line, asked in the opposite order of their place, from both processes.
  const held = new Map<number, HeldSlot>();
  const asked = new Set<number>();
  const line = [5, 4, 3, 2, 1].map(async (order, k) => {
    held.set(
      order,
      await (k % 2 ? a : b).acquire('erp', 2, { order, label: `job${order}`, onWait: () => asked.add(order) }),
    );
  });
  await waitFor('every run to wait in line', () => asked.size === 5);
  expect(await a.usage('erp')).toEqual({ held: 2, waiting: 5 });
  expect(await b.waitingLabels('erp')).toEqual(['job1', 'job2', 'job3', 'job4', 'job5']);
  expect(held.size).toBe(0);
  // Each time slots come free, the first in line take them: 1 and 2, then 3 and 4, then 5.
  const release = async (slots: HeldSlot[]) => Promise.all(slots.map((s) => s.release()));
  await release(first);
  await waitFor('two runs to hold the freed slots', () => held.size === 2);
  expect([...held.keys()].sort()).toEqual([1, 2]);
  await release([held.get(1)!, held.get(2)!]);
  await waitFor('the next two', () => held.size === 4);
  expect(held.has(3) && held.has(4)).toBe(true);
  expect(await a.usage('erp')).toEqual({ held: 2, waiting: 1 });
  await release([held.get(3)!, held.get(4)!]);
  await Promise.all(line);
  await held.get(5)!.release();
  expect(await a.usage('erp')).toEqual({ held: 0, waiting: 0 });
  // Another connection has its own slots.
  const other = await a.acquire('erp2', 1);
  await other.release();
});

it('frees the slots of a process killed with SIGKILL once their lease ran out', async () => {
  const child = spawn(process.execPath, [fileURLToPath(new URL('./fixtures/slot-holder-child.ts', import.meta.url))], {
    env: {
      ...process.env,
      REDIS_URL,
      CHILD_PREFIX: prefix,
      CHILD_CONNECTION: 'erp_kill',
      CHILD_SLOTS: '2',
      CHILD_LIMIT: '2',
      CHILD_LEASE_MS: '3000',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  await waitFor('the child to hold two slots', () => out.includes('held'));
  const slots = processSlots();
  expect(await slots.usage('erp_kill')).toEqual({ held: 2, waiting: 0 });
  child.kill('SIGKILL');
  await new Promise((resolve) => child.once('exit', resolve));
  let waited = false;
  const slot = await slots.acquire('erp_kill', 2, { onWait: () => (waited = true) });
  // It had to wait: the dead child's slots were still leased (3 s) when it first asked.
  expect(waited).toBe(true);
  // The child took its two slots one after the other: their leases run out one after the other too.
  await waitFor("the child's second lease to run out", async () => {
    const usage = await slots.usage('erp_kill');
    return usage.held === 1 && usage.waiting === 0;
  });
  await slot.release();
});

it('an aborted waiter gives up its place in line and fails with ABORTED', async () => {
  const slots = processSlots();
  const holder: HeldSlot = await slots.acquire('erp_abort', 1);
  const controller = new AbortController();
  let asked = false;
  const waiting = slots.acquire('erp_abort', 1, {
    order: slotOrder(SLOT_CLASS.scheduled, Date.now()),
    signal: controller.signal,
    onWait: () => (asked = true),
  });
  await waitFor('the run to wait', () => asked);
  expect((await slots.usage('erp_abort')).waiting).toBe(1);
  controller.abort(new Error('shutdown'));
  await expect(waiting).rejects.toMatchObject({ code: 'ABORTED' });
  expect(await slots.usage('erp_abort')).toEqual({ held: 1, waiting: 0 });
  await holder.release();
});

it('orders a backfill after scheduled ticks, whatever their logical times', () => {
  const now = Date.parse('2026-11-24T02:00:00Z');
  expect(slotOrder(SLOT_CLASS.scheduled, now)).toBeLessThan(slotOrder(SLOT_CLASS.backfill, now - 365 * 86_400_000));
  expect(slotOrder(SLOT_CLASS.backfill, now - 1000)).toBeLessThan(slotOrder(SLOT_CLASS.backfill, now));
});

it(
  'holds the cap through a Redis that lost its data: ' + 'holders register again before any waiter gets a slot',
  async () => {
    // A restart without persistence, for this installation: every key under its prefix is gone at once.
    const forget = async () => {
      const keys = await redis.keys(`${prefix}:*`);
      if (keys.length) await redis.del(...keys);
    };
    const [a, b] = [processSlots(3_000), processSlots(3_000)];
    const holders = await Promise.all([a.acquire('erp_lost', 2), a.acquire('erp_lost', 2)]);
    let holding = 2;
    let most = 2;
    let asks = 0;
    const waiters = [1, 2, 3, 4].map(async (order) => {
      const slot = await b.acquire('erp_lost', 2, { order, onWait: () => asks++ });
      most = Math.max(most, ++holding);
      return slot;
    });
    await waitFor('four runs to wait in line', async () => (await a.usage('erp_lost')).waiting === 4);
    await forget();
    // The holders' renewals find their slots gone and take them again; the line waits behind them.
    await waitFor('both holders to hold their slots again', async () => (await a.usage('erp_lost')).held === 2, 30_000);
    await waitFor('the waiters to be back in line', async () => (await a.usage('erp_lost')).waiting === 4, 30_000);
    // No slot is given while the holders may still be on their way back (one lease), nor after it.
    await waitFor('the pause after the loss to end', async () => (await redis.pttl(`${prefix}:slots:gate`)) === -2);
    const asked = asks;
    await waitFor('each waiter to ask again after the pause', () => asks >= asked + 4);
    expect(most).toBe(2);
    const release = async (slots: HeldSlot[]) => {
      holding -= slots.length;
      await Promise.all(slots.map((h) => h.release()));
    };
    await release(holders);
    await release(await Promise.all(waiters.slice(0, 2)));
    await release(await Promise.all(waiters.slice(2)));
    expect(most).toBe(2);
  },
);
