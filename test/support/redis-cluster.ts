/**
 * A real Redis Cluster of three masters for the tests, from the machine's redis-server and redis-cli: each node on a
 * free port (and its cluster bus port, +10000) with a data folder of its own, joined with `redis-cli --cluster
 * create`, ready once every node says `cluster_state:ok`; stopped and removed by `stop()`.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitFor } from './wait.ts';

/** A running test cluster. */
export interface TestCluster {
  /** `redis-cluster://127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3` */
  url: string;
  ports: number[];
  stop(): Promise<void>;
}

async function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

/** A port whose cluster bus port (+10000) is free too. */
async function freeNodePort(taken: Set<number>): Promise<number> {
  for (let tries = 0; tries < 200; tries++) {
    const port = 20_000 + Math.floor(Math.random() * 20_000);
    if (taken.has(port) || taken.has(port + 10_000)) continue;
    if ((await isFree(port)) && (await isFree(port + 10_000))) return port;
  }
  throw new Error('no free port pair for a Redis Cluster node');
}

function redisCli(port: number, ...args: string[]): string {
  const r = spawnSync('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...args], {
    encoding: 'utf8',
    timeout: 30_000,
  });
  if (r.error)
    throw new Error(`redis-cli is needed for the Redis Cluster test (apt-get install redis-tools): ${r.error.message}`);
  return `${r.stdout}${r.stderr}`;
}

/**
 * Starts three cluster nodes and joins them.
 * @throws when redis-server or redis-cli is missing, or the cluster does not become ready within 60 s
 */
export async function startTestCluster(): Promise<TestCluster> {
  const dir = mkdtempSync(join(tmpdir(), 'report-etl-cluster-'));
  const nodes: ChildProcess[] = [];
  const ports: number[] = [];
  const taken = new Set<number>();
  const stop = async () => {
    await Promise.all(
      nodes.map(
        (n) =>
          new Promise<void>((resolve) => {
            if (n.exitCode !== null) return resolve();
            n.once('exit', () => resolve());
            n.kill('SIGKILL');
          }),
      ),
    );
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (let k = 0; k < 3; k++) {
      const port = await freeNodePort(taken);
      taken.add(port).add(port + 10_000);
      ports.push(port);
      const node = spawn(
        'redis-server',
        [
          '--port',
          String(port),
          '--bind',
          '127.0.0.1',
          '--cluster-enabled',
          'yes',
          '--cluster-config-file',
          `nodes-${port}.conf`,
          '--dir',
          dir,
          '--save',
          '',
          '--appendonly',
          'no',
        ],
        {
          stdio: 'ignore',
        },
      );
      await new Promise<void>((resolve, reject) => {
        node.once('spawn', () => resolve());
        node.once('error', (err) =>
          reject(new Error(`redis-server is needed for the Redis Cluster test: ${err.message}`)),
        );
      });
      nodes.push(node);
    }
    await waitFor('every node to answer PING', () => ports.every((p) => redisCli(p, 'PING').includes('PONG')), 60_000);
    const created = redisCli(
      ports[0]!,
      '--cluster',
      'create',
      ...ports.map((p) => `127.0.0.1:${p}`),
      '--cluster-replicas',
      '0',
      '--cluster-yes',
    );
    if (!/All 16384 slots covered/.test(created)) throw new Error(`redis-cli --cluster create failed:\n${created}`);
    await waitFor(
      'cluster_state:ok on every node',
      () => ports.every((p) => redisCli(p, 'CLUSTER', 'INFO').includes('cluster_state:ok')),
      60_000,
    );
    return { url: `redis-cluster://${ports.map((p) => `127.0.0.1:${p}`).join(',')}`, ports, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
