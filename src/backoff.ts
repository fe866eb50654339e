/**
 * The one backoff (docs/architecture.md "Errors"): exponential delays with full jitter, an abortable sleep, and the
 * retry loop built from them.
 */
import { setTimeout as wait } from 'node:timers/promises';
import { AbortedError } from './errors.ts';

/** How often and how long to retry; delays in ms. */
export interface RetryPolicy {
  /** Attempts in all (first try included), >= 1; `Infinity` retries until the failure is not retryable. */
  attempts: number;
  /** Cap of the first retry's delay in ms; doubles per retry. */
  baseDelayMs: number;
  /** Upper bound of any one delay in ms. */
  maxDelayMs: number;
}

/**
 * Delay in ms before retry number `retry` (1-based): uniform in [0, min(maxDelayMs, baseDelayMs × 2^(retry-1))], so
 * that clients failing together do not retry together.
 */
export function backoffDelayMs(retry: number, policy: Pick<RetryPolicy, 'baseDelayMs' | 'maxDelayMs'>): number {
  const cap = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.max(0, retry - 1));
  return Math.floor(Math.random() * (cap + 1));
}

/** Sleeps `ms` milliseconds. @throws AbortedError as soon as `signal` aborts (also when it already has) */
export async function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  try {
    await wait(ms, undefined, { signal });
  } catch (err) {
    throw signal?.aborted ? new AbortedError(signal.reason) : err;
  }
}

/** Options of {@link retry}. */
interface RetryOptions {
  policy: RetryPolicy;
  /** Which failures another attempt may cure. */
  retryable: (err: unknown) => boolean;
  /** Ends the waiting (AbortedError); an attempt in flight is the caller's to abort. */
  signal?: AbortSignal | undefined;
  /** Told before each wait: the failure, the 1-based attempt that failed, and the delay in ms. */
  onRetry?: (err: unknown, attempt: number, delayMs: number) => void;
}

/**
 * Runs `fn` (given the 1-based attempt number) until it succeeds, retrying what `o.retryable` accepts up to
 * `o.policy.attempts` attempts in all.
 * @throws the last error when it is not retryable or the attempts ran out; AbortedError on abort
 */
export async function retry<T>(fn: (attempt: number) => Promise<T>, o: RetryOptions): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn(attempt);
    } catch (err) {
      if (o.signal?.aborted) throw err instanceof AbortedError ? err : new AbortedError(o.signal.reason);
      if (!o.retryable(err) || attempt >= o.policy.attempts) throw err;
      const delay = backoffDelayMs(attempt, o.policy);
      o.onRetry?.(err, attempt, delay);
      await sleep(delay, o.signal);
    }
  }
}
