/**
 * The two ways the demo and the tests bring their own Redis when none answers: a `redis-server` binary found on
 * PATH, run as a child process without persistence, or a `redis:7` container through testcontainers when a Docker
 * engine answers.
 */
import { spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';
import { childStopper, pollUntil, probeRedis } from './service-probes.ts';

/** How long redis-server may take to answer PING after it was spawned, in ms. */
const START_TIMEOUT_MS = 20_000;
/** How long redis-server may take to exit after SIGTERM before it is killed, in ms. */
const STOP_TIMEOUT_MS = 10_000;

/** A Redis this process started. */
export interface StartedRedis {
  /** `redis://127.0.0.1:<port>` or the container's mapped address. */
  url: string;
  /** Process id of redis-server (not set for a container). */
  pid?: number;
  /** Stops it and waits until it has gone; a second call waits for the first. */
  stop(): Promise<void>;
}

/**
 * The first executable `name` in the folders of `path` (a PATH-style list).
 * @returns its absolute path, or undefined when there is none
 */
export function findOnPath(name: string, path = process.env.PATH ?? ''): string | undefined {
  for (const dir of path.split(delimiter).filter(Boolean)) {
    const file = join(dir, name);
    try {
      accessSync(file, constants.X_OK);
      return file;
    } catch {
      // not here
    }
  }
  return undefined;
}

/**
 * Runs `binary` (a redis-server) on 127.0.0.1:`port` without persistence (`--save "" --appendonly no`), waits until
 * it answers PING, and kills it as a last resort when this process exits without having called `stop()`.
 * @throws Error with redis-server's own output when it exits before answering (e.g. port in use)
 */
export async function startRedisServer(binary: string, port: number): Promise<StartedRedis> {
  const child = spawn(
    binary,
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--daemonize', 'no'],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
      // Own process group: a Ctrl-C in the terminal must not stop Redis before the demo has drained its workers.
      detached: true,
    },
  );
  let output = '';
  const keep = (d: Buffer) => (output = (output + d.toString()).slice(-4000));
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let exitedEarly: string | undefined;
  child.once(
    'exit',
    (code, signal) => (exitedEarly = `redis-server exited (${signal ?? code}) before it answered: ${output.trim()}`),
  );
  child.once('error', (err) => (exitedEarly = `redis-server could not be started: ${err.message}`));
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);

  const url = `redis://127.0.0.1:${port}`;
  try {
    await pollUntil(
      `redis-server answering on port ${port}`,
      async () => (await probeRedis(url, 500)).kind === 'answers',
      START_TIMEOUT_MS,
      () => exitedEarly,
    );
  } catch (err) {
    child.kill('SIGKILL');
    await exited;
    process.removeListener('exit', killOnExit);
    throw err;
  }
  return {
    url,
    pid: child.pid!,
    stop: childStopper(child, exited, killOnExit, { gentle: 'SIGTERM', hard: 'SIGKILL', timeoutMs: STOP_TIMEOUT_MS }),
  };
}

/**
 * Does a Docker (or compatible) engine answer, as testcontainers finds it (DOCKER_HOST, the default socket,
 * ~/.testcontainers.properties)? testcontainers is loaded only here, on this path.
 * @returns undefined when one answers, else testcontainers' reason
 */
export async function dockerUnavailableReason(): Promise<string | undefined> {
  try {
    const { getContainerRuntimeClient } = await import('testcontainers');
    await getContainerRuntimeClient();
    return undefined;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}

/**
 * Starts a `redis:7` container (no persistence) through testcontainers and waits until it answers PING.
 * @throws testcontainers' error when the image cannot be pulled or the container does not start
 */
export async function startRedisContainer(): Promise<StartedRedis> {
  const { GenericContainer, Wait } = await import('testcontainers');
  const container = await new GenericContainer('redis:7')
    .withCommand(['redis-server', '--save', '', '--appendonly', 'no'])
    .withExposedPorts(6379)
    .withWaitStrategy(Wait.forLogMessage('Ready to accept connections'))
    .start();
  const url = `redis://${container.getHost()}:${container.getMappedPort(6379)}`;
  let stopping: Promise<void> | undefined;
  return {
    url,
    stop() {
      stopping ??= container.stop().then(() => undefined);
      return stopping;
    },
  };
}
