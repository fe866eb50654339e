/**
 * The loader's side of the slab pool (src/copy-slabs.ts): the rows of a COPY FROM STDIN as the stream that feeds it,
 * giving each Buffer back once PostgreSQL's socket has taken it whole, so that the page decoders write the next rows
 * into the same memory rather than into fresh Buffers (docs/architecture.md "Flow of one run").
 *
 * A Buffer has left this process when nothing on its way holds it any more: this stream's buffer, the COPY stream's
 * (pg-copy-streams writes each chunk to the connection's socket before it takes the next) and the socket's own (its
 * writableLength counts the bytes queued or being written). Each time the next rows are pulled, the Buffers sent
 * before are given back when all three are empty, or when the socket next drains if only the socket still holds
 * bytes. Without the socket (a pg client without one) nothing is given back: the slabs are then left to the garbage
 * collector, as before.
 */
import { Readable, type Writable } from 'node:stream';
import type pg from 'pg';
import { givePartBack } from '../copy-slabs.ts';

/** Buffers kept for giving back at most; older ones are left to the garbage collector (a socket that never drains). */
const MAX_HELD = 1024;

/** The socket of a pg client (pg keeps it as `connection.stream`), or undefined. */
function socketOf(client: pg.ClientBase): Writable | undefined {
  const stream = (client as { connection?: { stream?: unknown } }).connection?.stream;
  return stream !== null && typeof stream === 'object' && 'writableLength' in stream ? (stream as Writable) : undefined;
}

/**
 * `rows` as the Readable that feeds `copy` (a COPY FROM STDIN on `client`), giving each Buffer back to the slab pool
 * once PostgreSQL's socket took it (see the file comment).
 */
export function rowsGivenBack(rows: AsyncIterable<Buffer>, copy: Writable, client: pg.ClientBase): Readable {
  const socket = socketOf(client);
  if (socket === undefined) return Readable.from(rows, { objectMode: false });
  let sent: Buffer[] = [];
  const giveBack = (parts: Buffer[]): void => {
    for (const part of parts) givePartBack(part);
  };
  async function* feed(): AsyncGenerator<Buffer> {
    for await (const buf of rows) {
      // Every Buffer in `sent` was pushed into `readable` before this pull: written into `copy` unless still buffered.
      if (sent.length > 0 && readable.readableLength === 0 && copy.writableLength === 0) {
        if (socket!.writableLength === 0) {
          giveBack(sent);
          sent = [];
        } else if (socket!.writableNeedDrain) {
          socket!.once('drain', giveBack.bind(undefined, sent));
          sent = [];
        }
      }
      if (sent.length >= MAX_HELD) sent.shift();
      sent.push(buf);
      yield buf;
    }
  }
  const readable = Readable.from(feed(), { objectMode: false });
  return readable;
}
