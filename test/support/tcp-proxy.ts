/**
 * A TCP proxy in front of a real server, for fault tests: `cut()` drops every open connection and refuses new
 * ones (as a stopped or unreachable server does), `restore()` lets connections through again. Lets a test take
 * PostgreSQL away from report-etl without stopping the server other test files share.
 */
import { createConnection, createServer, type Server, type Socket } from 'node:net';

/** A running proxy. */
export interface TcpProxy {
  /** The port to connect to instead of the server's. */
  port: number;
  /** Destroys every open connection (both sides) and refuses new ones until {@link restore}. */
  cut(): void;
  restore(): void;
  /** Connections accepted so far (refused ones included). */
  accepted(): number;
  close(): Promise<void>;
}

/** Starts a proxy on a free port of 127.0.0.1 that forwards to `host:port`. */
export async function startTcpProxy(port: number, host = '127.0.0.1'): Promise<TcpProxy> {
  const open = new Set<Socket>();
  let down = false;
  let accepted = 0;
  const server: Server = createServer((client) => {
    accepted += 1;
    if (down) {
      client.destroy();
      return;
    }
    const upstream = createConnection({ port, host });
    open.add(client);
    open.add(upstream);
    const drop = () => {
      client.destroy();
      upstream.destroy();
      open.delete(client);
      open.delete(upstream);
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('proxy has no port');
  return {
    port: address.port,
    cut() {
      down = true;
      for (const s of open) s.destroy();
      open.clear();
    },
    restore() {
      down = false;
    },
    accepted: () => accepted,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of open) s.destroy();
        server.close(() => resolve());
      }),
  };
}
