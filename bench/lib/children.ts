/**
 * The child processes of `npm run bench`: the page server (one, long-lived) and the measured worker (one per
 * measurement). Both are forked with this Node (24, type stripping) and talk JSON over IPC.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { PageServerRequest } from './page-server.ts';
import type { WorkerInput, WorkerResult } from './worker-types.ts';

const here = (f: string): string => fileURLToPath(new URL(f, import.meta.url));

function nextMessage<T>(child: ChildProcess): Promise<T> {
  return new Promise((resolve, reject) => {
    const onMessage = (m: unknown): void => {
      child.off('exit', onExit);
      resolve(m as T);
    };
    const onExit = (code: number | null): void => {
      child.off('message', onMessage);
      reject(new Error(`${child.spawnfile} exited (code ${code}) without answering`));
    };
    child.once('message', onMessage);
    child.once('exit', onExit);
  });
}

/** What a prerender gave. */
export interface Prerendered {
  rows: number;
  pages: number;
  bytes: number;
  ms: number;
}

/** The running page server. */
export interface PageServer {
  url: string;
  /** Clears the cache, then renders every page of the report run into it. @throws Error from the simulator */
  prerender(req: Omit<Extract<PageServerRequest, { cmd: 'prerender' }>, 'cmd'>): Promise<Prerendered>;
  close(): Promise<void>;
}

/** Starts bench/lib/page-server.ts (adding `latencyMs` to every response) and waits until it listens. */
export async function startPageServer(latencyMs = 0): Promise<PageServer> {
  const child = fork(here('./page-server.ts'), [String(latencyMs)], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    execArgv: ['--max-old-space-size=8192'],
  });
  const { url } = await nextMessage<{ url: string }>(child);
  return {
    url,
    async prerender(req) {
      const answer = nextMessage<Prerendered & { error?: string }>(child);
      child.send({ cmd: 'prerender', ...req } satisfies PageServerRequest);
      const r = await answer;
      if (r.error) throw new Error(r.error);
      return r;
    },
    async close() {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.send({ cmd: 'close' } satisfies PageServerRequest);
      await exited;
    },
  };
}

/**
 * Runs one measurement in a fresh bench/lib/worker.js (the compiled product).
 * @param execArgv extra node flags (profiling)
 * @param worker the worker script: this checkout's by default, another's (its own dist/) to compare builds
 * @throws Error when the worker dies without a result
 */
export async function measureWorker(
  input: WorkerInput,
  execArgv: string[] = [],
  worker = here('./worker.js'),
): Promise<WorkerResult> {
  const child = fork(worker, [JSON.stringify(input)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], execArgv });
  const result = await nextMessage<WorkerResult>(child);
  if (child.exitCode === null) await new Promise((resolve) => child.once('exit', resolve));
  return result;
}
