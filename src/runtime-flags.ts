/**
 * Node flags report-etl runs with (bin/report-etl.js's shebang, the Dockerfile's ENTRYPOINT; test/docker.test.ts
 * checks they agree, and the benchmark's worker uses them by default).
 *
 * `--max-semi-space-size=1` (MB): V8's young generation would otherwise grow to 16 MB per semi-space, and with
 * page buffers living outside the heap the worker's peak RSS rose by 70-90 MB during a run; with 1 MB it stays
 * within about 35 MB of the idle process at no measured cost in throughput (bench/results).
 */
export const NODE_FLAGS: readonly string[] = ['--max-semi-space-size=1'];
