/**
 * Node flags report-etl runs with (bin/report-etl.js's shebang, the Dockerfile's ENTRYPOINT; test/docker.test.ts
 * checks they agree). `--max-semi-space-size=1` (MB) keeps V8's young generation small: page buffers live outside
 * the heap, and the default 16 MB raised a worker's peak RSS by 70-90 MB at no gain in throughput.
 */
export const NODE_FLAGS: readonly string[] = ['--max-semi-space-size=1'];

/** Commands whose process loads report after report for as long as it runs: they get {@link LONG_RUNNING_FLAGS}. */
export const LONG_RUNNING_COMMANDS: readonly string[] = ['worker', 'start'];

/**
 * V8 flags that bin/report-etl.js restarts a long-running process with (docs/performance.md "The heap flag and the
 * slab pool"): `--heap-growing-percent=100`, as V8 counts the network's page chunks as old-generation bytes.
 */
export const LONG_RUNNING_FLAGS: readonly string[] = ['--heap-growing-percent=100'];
