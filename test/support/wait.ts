/**
 * The suite's one way to wait (docs/architecture.md "Tests"): for a condition, never for the clock.
 */
import { vi } from 'vitest';

/** Deadline of {@link waitFor}: generous, so that only a condition that never comes fails, even on a busy machine. */
export const WAIT_TIMEOUT_MS = 45_000;

type Truthy<T> = Exclude<T, undefined | null | false | 0 | ''>;

/**
 * Checks `check` (vi.waitFor, every `intervalMs`) until it returns a truthy value, and returns that value.
 * @param what the condition, for the failure's message
 * @throws Error `timed out after <ms> ms waiting for <what>` (the check's last error as its cause)
 */
export async function waitFor<T>(
  what: string,
  check: () => Promise<T> | T,
  timeoutMs = WAIT_TIMEOUT_MS,
  intervalMs = 50,
): Promise<Truthy<T>> {
  try {
    return await vi.waitFor(
      async () => {
        const value = await check();
        if (!value) throw new Error(`not yet: ${what}`);
        return value as Truthy<T>;
      },
      { timeout: timeoutMs, interval: intervalMs },
    );
  } catch (err) {
    throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`, { cause: err });
  }
}
