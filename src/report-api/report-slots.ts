/**
 * Report slots: at most `maxConcurrentReports` report jobs of one connection open at once, across every process
 * sharing the Redis (docs/architecture.md "A fleet"). A slot, and a place in line, is a lease renewed every leaseMs/3,
 * so a dead process's frees itself; releases are published, so waiters everywhere ask again at once. Per connection
 * three sorted sets: `held` (holder → lease end), `waiting` (holder → order), `waitLease` (holder → lease end), lease
 * ends in the Redis server's clock.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { Cluster, type Redis } from 'ioredis';
import { AbortedError } from '../errors.ts';

type RedisClient = Redis | Cluster;

// Every script first checks the slots' `epoch` (a random id the first caller wrote). A caller that knew another saw
// Redis lose its data: no new slot is given for one lease (`gate`), so every live holder registers again before a
// waiter can take a slot that only looks free.
const EPOCH = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local epoch = redis.call('GET', KEYS[4])
if not epoch then
  epoch = ARGV[6]
  redis.call('SET', KEYS[4], epoch)
end
if ARGV[5] ~= '' and ARGV[5] ~= epoch then redis.call('SET', KEYS[5], '1', 'PX', ARGV[4], 'NX') end
`;

// KEYS: held, waiting, waitLease, epoch, gate. ARGV: holder, order, limit, leaseMs, known epoch, new epoch.
// Returns {got (0|1), held, waiting, epoch}.
const ACQUIRE = `${EPOCH}
local lease = tonumber(ARGV[4])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local gone = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now)
for _, m in ipairs(gone) do redis.call('ZREM', KEYS[2], m) end
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
local held = redis.call('ZCARD', KEYS[1])
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  redis.call('ZADD', KEYS[1], now + lease, ARGV[1])
  return {1, held, redis.call('ZCARD', KEYS[2]), epoch}
end
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
redis.call('ZADD', KEYS[3], now + lease, ARGV[1])
local free = tonumber(ARGV[3]) - held
if free > 0 and redis.call('EXISTS', KEYS[5]) == 0 and redis.call('ZRANK', KEYS[2], ARGV[1]) < free then
  redis.call('ZREM', KEYS[2], ARGV[1])
  redis.call('ZREM', KEYS[3], ARGV[1])
  redis.call('ZADD', KEYS[1], now + lease, ARGV[1])
  return {1, held + 1, redis.call('ZCARD', KEYS[2]), epoch}
end
return {0, held, redis.call('ZCARD', KEYS[2]), epoch}`;

// KEYS and ARGV as ACQUIRE's (order and limit unused). Returns the epoch. A holder whose slot is gone takes it again
// (its report job is open whatever the count says) and closes the gate for one lease, so the others can too.
const RENEW = `${EPOCH}
local had = redis.call('ZSCORE', KEYS[1], ARGV[1])
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[4]), ARGV[1])
if not (had and tonumber(had) > now) then redis.call('SET', KEYS[5], '1', 'PX', ARGV[4], 'NX') end
return epoch`;

// KEYS: held, waiting, waitLease. ARGV: holder.
const RELEASE = `
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
return 1`;

// KEYS: held, waitLease. Returns {held, waiting} counting live leases only.
const USAGE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
return {redis.call('ZCOUNT', KEYS[1], '(' .. now, '+inf'), redis.call('ZCOUNT', KEYS[2], '(' .. now, '+inf')}`;

// KEYS: waiting, waitLease. Returns the waiters with a live lease, first in line first.
const WAITING = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local out = {}
for _, m in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  local e = redis.call('ZSCORE', KEYS[2], m)
  if e and tonumber(e) > now then out[#out + 1] = m end
end
return out`;

/**
 * Options of {@link ReportSlots}: the installation's key `prefix` (the queue's), how long a slot or place in line
 * outlives its holder (`leaseMs`, default 30 000) and how often a waiter asks unprompted (`pollMs`, default 1 000).
 */
interface SlotOptions {
  prefix: string;
  leaseMs?: number;
  pollMs?: number;
}

/** Slots held now (report jobs open, or about to be) and runs waiting for one, of one connection. */
type SlotUsage = { held: number; waiting: number };

/** A held slot. */
export interface HeldSlot {
  /** Frees the slot and tells the waiters; never throws (an unreachable Redis lets the lease run out instead). */
  release(): Promise<void>;
}

/** How a run asks for a slot. */
interface SlotRequest {
  /** Place in line, lower first ({@link slotOrder}); default 0. */
  order?: number;
  /** The jobs.yaml job name, for the jobs overview. */
  label?: string;
  signal?: AbortSignal | undefined;
  /** Called after each ask that got no slot (the first says that the run waits). */
  onWait?: (usage: SlotUsage & { limit: number }) => void;
}

type Keys = ReturnType<ReportSlots['keys']>;

/** A run of this process waiting for a slot. */
type Waker = { heldKey: string; order: number; limit: number; wake(): void };

/** The report slots of every connection, for one process. Close it at shutdown (its subscriber connection). */
export class ReportSlots {
  private readonly leaseMs: number;
  private readonly pollMs: number;
  private readonly processId = `${hostname()}:${process.pid}`;
  private subscriber: RedisClient | undefined;
  /** The epoch last seen ('' before the first call). */
  private epoch = '';
  private readonly wakers = new Set<Waker>();
  private closed = false;

  private readonly redis: RedisClient;
  private readonly options: SlotOptions;

  constructor(redis: RedisClient, options: SlotOptions) {
    this.redis = redis;
    this.options = options;
    this.leaseMs = options.leaseMs ?? 30_000;
    this.pollMs = options.pollMs ?? 1_000;
  }

  /**
   * Waits until `connection` has a free slot and this run is first in line, then holds it until released.
   * @param limit the connection's maxConcurrentReports
   * @throws AbortedError when `w.signal` aborts while waiting (the place is given up); Redis errors
   */
  async acquire(connection: string, limit: number, w: SlotRequest = {}): Promise<HeldSlot> {
    const { order = 0, signal, onWait } = w;
    const keys = this.keys(connection);
    // The label (a jobs.yaml job name: no '|') leads, so that the jobs overview can tell which jobs wait.
    const holder = `${w.label ?? ''}|${this.processId}:${randomUUID()}`;
    try {
      for (;;) {
        if (signal?.aborted) throw new AbortedError(signal.reason);
        const woken = this.nextWake(keys.held, order, limit, signal);
        const answer = await this.evalState(ACQUIRE, keys, holder, String(order), String(limit));
        const [got, held, waiting, epoch] = answer as [number, number, number, string];
        this.epoch = epoch;
        if (got === 1) {
          woken.cancel();
          return this.hold(keys, holder);
        }
        onWait?.({ held, waiting, limit });
        await woken.promise;
      }
    } catch (err) {
      await this.redis.eval(RELEASE, 3, keys.held, keys.waiting, keys.waitLease, holder).catch(() => undefined);
      throw err;
    }
  }

  /** The labels of the runs waiting on `connection` with a live lease, first in line first. */
  async waitingLabels(connection: string): Promise<string[]> {
    const keys = this.keys(connection);
    const line = (await this.redis.eval(WAITING, 2, keys.waiting, keys.waitLease)) as string[];
    return line.map((h) => h.slice(0, h.indexOf('|')));
  }

  /** Slots held and runs waiting on `connection` now (live leases only). */
  async usage(connection: string): Promise<SlotUsage> {
    const keys = this.keys(connection);
    const [held, waiting] = (await this.redis.eval(USAGE, 2, keys.held, keys.waitLease)) as number[];
    return { held: held!, waiting: waiting! };
  }

  /** Closes the subscriber connection; waiters still waiting fall back to polling. Idempotent. */
  async close(): Promise<void> {
    this.closed = true;
    const s = this.subscriber;
    this.subscriber = undefined;
    if (s) await s.quit().catch(() => s.disconnect());
  }

  private keys(connection: string) {
    const base = `${this.options.prefix}:slots:${connection}`;
    return {
      held: `${base}:held`,
      waiting: `${base}:waiting`,
      waitLease: `${base}:wait-lease`,
      channel: `${this.options.prefix}:slots:released`,
      epoch: `${this.options.prefix}:slots:epoch`,
      gate: `${this.options.prefix}:slots:gate`,
    };
  }

  /** Runs ACQUIRE or RENEW; the last ARGV are leaseMs, the epoch known and a new one in case Redis has none. */
  private evalState(script: string, k: Keys, holder: string, order = '', limit = ''): Promise<unknown> {
    const keys = [k.held, k.waiting, k.waitLease, k.epoch, k.gate];
    return this.redis.eval(script, 5, ...keys, holder, order, limit, String(this.leaseMs), this.epoch, randomUUID());
  }

  private hold(keys: Keys, holder: string): HeldSlot {
    const renew = setInterval(
      () => {
        this.evalState(RENEW, keys, holder)
          .then((epoch) => (this.epoch = epoch as string))
          .catch(() => undefined);
      },
      Math.max(1, Math.floor(this.leaseMs / 3)),
    );
    renew.unref();
    let released: Promise<void> | undefined;
    return {
      release: () =>
        (released ??= (async () => {
          clearInterval(renew);
          try {
            await this.redis.eval(RELEASE, 3, keys.held, keys.waiting, keys.waitLease, holder);
            await this.redis.publish(keys.channel, keys.held);
          } catch {
            // The lease runs out by itself.
          }
        })()),
    };
  }

  /**
   * Resolves at the next published release on `heldKey`'s connection (for the process's `limit` first in line there:
   * only they can get a slot, so a release does not make hundreds ask at once), after pollMs, or on abort.
   */
  private nextWake(
    heldKey: string,
    order: number,
    limit: number,
    signal?: AbortSignal,
  ): { promise: Promise<void>; cancel: () => void } {
    this.subscribe();
    let done!: () => void;
    const promise = new Promise<void>((resolve) => (done = resolve));
    // Polls are spread by up to a quarter, so that waiters started together do not ask together.
    const timer = setTimeout(() => finish(), this.pollMs * (0.75 + Math.random() / 4));
    const onAbort = () => finish();
    const waker: Waker = { heldKey, order, limit, wake: () => finish() };
    const finish = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      this.wakers.delete(waker);
      done();
    };
    this.wakers.add(waker);
    signal?.addEventListener('abort', onAbort, { once: true });
    return { promise, cancel: finish };
  }

  /** Wakes the first waiters in line on the connection whose `held` key was published. */
  private wakeFirst(heldKey: string): void {
    const line = [...this.wakers].filter((w) => w.heldKey === heldKey).sort((a, b) => a.order - b.order);
    for (const w of line.slice(0, line[0]?.limit ?? 0)) w.wake();
  }

  private subscribe(): void {
    if (this.subscriber || this.closed) return;
    const s: RedisClient = this.redis instanceof Cluster ? this.redis.duplicate() : this.redis.duplicate();
    this.subscriber = s;
    s.on('error', () => undefined);
    s.on('message', (_channel: string, key: string) => this.wakeFirst(key));
    void s.subscribe(this.keys('').channel).catch(() => undefined);
  }
}

/** Fairness classes of runs waiting for a slot, first served first (docs/architecture.md "A fleet"). */
export const SLOT_CLASS = { scheduled: 0, manual: 1, backfill: 2 } as const;

/**
 * A run's place in line: its fairness class, then its logical time (its tick, epoch ms), so that a backfill of a
 * thousand old ticks does not go before other jobs' scheduled ticks.
 */
export function slotOrder(cls: (typeof SLOT_CLASS)[keyof typeof SLOT_CLASS], logicalTimeMs: number): number {
  // 1e13 ms is beyond year 2286: the classes never overlap, and the sum stays an exact double.
  return cls * 1e13 + Math.max(0, logicalTimeMs);
}
