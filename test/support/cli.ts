/**
 * `report-etl` as a user runs it, for the CLI tests: a child process of bin/report-etl.js (which runs the build,
 * dist/, compiled by the test setup) with its shebang's Node flags and the test's real services in its environment,
 * its exit code and its output. Killed after `timeoutMs` so that a hang fails the test.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { NODE_FLAGS } from '../../src/runtime-flags.ts';
import { DATABASE_URL, REDIS_URL } from './env.ts';

/** The command line entry, as `npx report-etl` runs it. */
export const BIN = fileURLToPath(new URL('../../bin/report-etl.js', import.meta.url));

/** How a CLI child ended. */
export interface CliExit {
  /** Exit code; null when killed (a hang past the timeout). */
  code: number | null;
  stdout: string;
  stderr: string;
  /** Wall time, ms. */
  ms: number;
}

/** Options of {@link runCli}. */
export interface RunCliOptions {
  /** Over the test process's environment and DATABASE_URL / REDIS_URL. */
  env?: Record<string, string | undefined>;
  /** Called with all stdout / stderr so far whenever more arrives; may act on the child (e.g. send SIGINT). */
  onStdout?: (text: string, child: ChildProcess) => void;
  onStderr?: (text: string, child: ChildProcess) => void;
  /** Kill the child after this many ms (default 120 000). */
  timeoutMs?: number;
  /** Keep stdin open as a pipe (for prompts); default ignored. */
  stdin?: boolean;
}

/** Runs `report-etl <args>` to its end. Asynchronous: a simulator in the test process keeps answering meanwhile. */
export function runCli(args: readonly string[], o: RunCliOptions = {}): Promise<CliExit> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...NODE_FLAGS, BIN, ...args], {
      env: { ...process.env, DATABASE_URL, REDIS_URL, ...o.env },
      stdio: [o.stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    const killer = setTimeout(() => child.kill('SIGKILL'), o.timeoutMs ?? 120_000);
    child.stdout!.on('data', (d: Buffer) => {
      stdout += d.toString();
      o.onStdout?.(stdout, child);
    });
    child.stderr!.on('data', (d: Buffer) => {
      stderr += d.toString();
      o.onStderr?.(stderr, child);
    });
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(killer);
      resolve({ code, stdout, stderr, ms: Date.now() - started });
    });
  });
}

/**
 * The head of a jobs.yaml a test writes, as lines up to and including `jobs:`: connection `sim` at `baseUrl` with the
 * simulator's client `demo-client` and its secret read from environment variable `secretVar` (docs/configuration.md
 * "connections.<name>"), then each of `fields` as a `key: value` line of the connection.
 */
export function simConnectionLines(
  baseUrl: string,
  secretVar: string,
  fields: Record<string, string | number> = {},
): string[] {
  return [
    'connections:',
    '  sim:',
    `    baseUrl: ${baseUrl}`,
    '    clientId: demo-client',
    `    clientSecret: \${${secretVar}}`,
    ...Object.entries(fields).map(([key, value]) => `    ${key}: ${value}`),
    'jobs:',
  ];
}

/** Non-empty lines of a text. */
export function lines(text: string): string[] {
  return text.split('\n').filter(Boolean);
}
