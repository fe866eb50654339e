/**
 * Fault injection with a seeded PRNG (mulberry32), so that a test run with the same faultSeed and the
 * same request order sees the same faults.
 */
import type { SimulatorFaults } from './types.ts';

const GATEWAY_STATUSES = [502, 503, 504] as const;

/** Draws faults; `faults` may be replaced at any time. */
export class FaultInjector {
  faults: SimulatorFaults;
  #state: number;

  constructor(faults: SimulatorFaults, seed: number) {
    this.faults = { ...faults };
    this.#state = seed >>> 0;
  }

  /** Uniform in [0, 1). */
  random(): number {
    this.#state = (this.#state + 0x6d2b79f5) | 0;
    let t = this.#state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  }

  /** A 5xx status to answer instead of the real response, or 0. */
  drawError(): number {
    const rate = this.faults.errorRate ?? 0;
    if (rate <= 0 || this.random() >= rate) return 0;
    return GATEWAY_STATUSES[Math.floor(this.random() * GATEWAY_STATUSES.length)]!;
  }

  /** Whether to cut this page response; when so, the fraction (0.05..0.95) of the body to send first. */
  drawReset(): number {
    const rate = this.faults.resetRate ?? 0;
    if (rate <= 0 || this.random() >= rate) return 0;
    return 0.05 + this.random() * 0.9;
  }

  /** Real token lifetime / stated lifetime. */
  get tokenLifetimeFactor(): number {
    const f = this.faults.tokenLifetimeFactor;
    return f !== undefined && f > 0 ? f : 1;
  }

  get latencyMs(): number {
    return Math.max(0, this.faults.latencyMs ?? 0);
  }
}
