import { setFlagsFromString } from 'node:v8';

/**
 * Node flags report-etl runs with (bin/report-etl.js's shebang, the Dockerfile's ENTRYPOINT; test/docker.test.ts
 * checks they agree, and the benchmark's worker uses them by default).
 *
 * `--max-semi-space-size=1` (MB): V8's young generation would otherwise grow to 16 MB per semi-space, and with
 * page buffers living outside the heap the worker's peak RSS rose by 70-90 MB during a run; with 1 MB it stays
 * within about 35 MB of the idle process at no measured cost in throughput (bench/results).
 */
export const NODE_FLAGS: readonly string[] = ['--max-semi-space-size=1'];

/**
 * V8 flags for a process that loads report rows, set when it begins its first load rather than at its start, where
 * they would slow every command's start (a 10-row `report-etl run` by some 50 ms: V8 would collect more often while
 * the modules load). Set once per process; they stay set.
 *
 * `--heap-growing-percent=100`: after each mark-compact the old generation may grow to twice what survived, rather
 * than to V8's own choice, which for a loading process is 1.1 times (its collections are fast next to the little it
 * keeps). V8 counts the page chunks the network delivered since the last mark-compact as old-generation bytes, so with
 * V8's slack of some 9 MB a long load ran a mark-compact every 60-100 ms once the first one had happened (json, 5M rows:
 * 50-90 of them and 5.1-6.4 s of worker CPU; with the flag 3 and 4.0-4.7 s, peak RSS unchanged).
 */
export function useLoadingFlags(): void {
  if (loadingFlagsSet) return;
  loadingFlagsSet = true;
  setFlagsFromString('--heap-growing-percent=100');
}

let loadingFlagsSet = false;
