/**
 * A server that cannot listen (the admin server, the simulator) in one line: which address, why, and what to do,
 * instead of Node's `listen EADDRINUSE` and its stack (README "Commands": exit 2, one line on stderr).
 */

/** The codes of a refused listen, each with why in words. */
const WHY: Readonly<Record<string, string>> = {
  EADDRINUSE: 'the port is in use: stop what listens there, or choose another port',
  EACCES: 'permission denied (ports below 1024 need privileges): choose a port from 1024 up',
  EADDRNOTAVAIL: 'no network interface of this machine has that address: choose another host',
};

/**
 * The one line for a listen error, or undefined when `err` is no such error.
 * @param err what `listen` threw (Node's error with `code`, `syscall` `listen`, `address`, `port`)
 * @param how where the port and host are chosen, e.g. `--port N` / `--host H`, or `ADMIN_PORT=<free port>`
 * @returns e.g. `cannot listen on 127.0.0.1:3000: the port is in use: stop what listens there, or choose another port
 *   (--port N)`
 */
export function listenFailureText(err: unknown, how: { port: string; host: string }): string | undefined {
  if (!(err instanceof Error)) return undefined;
  const e = err as NodeJS.ErrnoException & { address?: string; port?: number };
  const why = e.syscall === 'listen' && e.code !== undefined ? WHY[e.code] : undefined;
  if (why === undefined) return undefined;
  const where = e.port === undefined ? (e.address ?? '?') : `${e.address ?? '?'}:${e.port}`;
  return `cannot listen on ${where}: ${why} (${e.code === 'EADDRNOTAVAIL' ? how.host : how.port})`;
}
