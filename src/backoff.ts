/**
 * The one backoff of report-etl (docs/architecture.md "Errors"): exponential delays with full jitter, a sleep that an
 * AbortSignal ends at once, and the retry loop built from them. The report client's HTTP calls and page resumes, and
 * the waits for a PostgreSQL that is gone or full, all retry through here; alerts are retried by BullMQ's own backoff
 * in their queue.
 */
import { AbortedError } from './errors.ts';

/** How often and how long to retry; delays in ms. */
export interface RetryPolicy {
  /** Attempts in all (first try included), >= 1; `Infinity` retries until the failure is not retryable. */
  attempts: number;
  /** Cap of the first retry's delay in ms; doubles per retry (full jitter picks 0..cap). */
  baseDelayMs: number;
  /** Upper bound of any one delay in ms. */
  maxDelayMs: number;
}

/**
 * Delay before retry number `retry` (1-based): full jitter, uniform in [0, min(maxDelayMs, baseDelayMs × 2^(retry-1))]
 * ms, so that many clients failing together do not retry together.
 */
export function backoffDelayMs(retry: number, policy: Pick<RetryPolicy, 'baseDelayMs' | 'maxDelayMs'>): number {
  const cap = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.max(0, retry - 1));
  return Math.floor(Math.random() * (cap + 1));
}

/**
 * Sleeps `ms` milliseconds.
 * @throws AbortedError as soon as `signal` aborts (also when it already has)
 */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.reject(new AbortedError(signal.reason));
  return new Promise((resolve, reject) => {
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(new AbortedError(signal?.reason));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Options of {@link retry}. */
export interface RetryOptions {
  policy: RetryPolicy;
  /** Which failures another attempt may cure. */
  retryable: (err: unknown) => boolean;
  /** Ends the waiting (AbortedError); an attempt in flight is the caller's to abort. */
  signal?: AbortSignal | undefined;
  /** Told before each wait: the failure, the 1-based attempt that failed, and the delay in ms. */
  onRetry?: (err: unknown, attempt: number, delayMs: number) => void;
}

/**
 * Runs `fn` until it succeeds, retrying the failures `o.retryable` accepts up to `o.policy.attempts` attempts in all,
 * sleeping {@link backoffDelayMs} between them.
 * @param fn gets the 1-based attempt number
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
