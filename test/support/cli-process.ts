/**
 * report-etl as a child process, as users and on-call staff run it: bin/report-etl.js (which runs the build, dist/)
 * with its shebang's Node flags and its own environment, its output collected, and helpers to wait for a line and to
 * kill it for real (SIGKILL).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { NODE_FLAGS } from '../../src/runtime-flags.ts';
import { DATABASE_URL, REDIS_URL } from './env.ts';

export const BIN = fileURLToPath(new URL('../../bin/report-etl.js', import.meta.url));

/** A running report-etl child. */
export interface CliProcess {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves with the exit code (null when killed by a signal). */
  exited: Promise<number | null>;
}

/** Starts `report-etl <args>`; `env` is added to the test's environment (DATABASE_URL, REDIS_URL set). */
export function startCli(args: string[], env: Record<string, string> = {}): CliProcess {
  const child = spawn(process.execPath, [...NODE_FLAGS, BIN, ...args], {
    env: { ...process.env, DATABASE_URL, REDIS_URL, LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve(code));
  });
  return { child, stdout: () => out, stderr: () => err, exited };
}

/** Runs `report-etl <args>` to its end. */
export async function runCli(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const p = startCli(args, env);
  const code = await p.exited;
  return { code, stdout: p.stdout(), stderr: p.stderr() };
}

/** kill -9, and waits until the process is gone. */
export async function killHard(p: CliProcess): Promise<void> {
  p.child.kill('SIGKILL');
  await p.exited;
}
