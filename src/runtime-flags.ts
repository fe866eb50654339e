/**
 * Node flags report-etl runs with (bin/report-etl.js's shebang, the Dockerfile's ENTRYPOINT; test/docker.test.ts
 * checks they agree, and the benchmark's worker uses them by default).
 *
 * `--max-semi-space-size=1` (MB): V8's young generation would otherwise grow to 16 MB per semi-space, and with
 * page buffers living outside the heap the worker's peak RSS rose by 70-90 MB during a run; with 1 MB it stays
 * within about 35 MB of the idle process at no measured cost in throughput (bench/results).
 */
export const NODE_FLAGS: readonly string[] = ['--max-semi-space-size=1'];

/** Commands whose process loads report after report for as long as it runs: they get {@link LONG_RUNNING_FLAGS}. */
export const LONG_RUNNING_COMMANDS: readonly string[] = ['worker', 'start'];

/**
 * V8 flags of a long-running process besides {@link NODE_FLAGS}; bin/report-etl.js restarts such a process with them
 * (a one-off command does without: the flag cost a 10-row `report-etl run` some 50 ms of start).
 *
 * `--heap-growing-percent=100`: after a mark-compact the old generation may grow to twice what survived, not V8's
 * 1.1 times for a process that keeps little. V8 counts the network's page chunks as old-generation bytes, so a long
 * load ran a mark-compact every 60-100 ms without it (json 2M rows: worker CPU 4.1 s, with it 2.8 s; bench/results).
 */
export const LONG_RUNNING_FLAGS: readonly string[] = ['--heap-growing-percent=100'];
