/**
 * The slab pool of COPY rows (src/copy-slabs.ts, pages/copy-text.ts, warehouse/copy-written.ts): a slab is filled
 * again only after every part handed out of it came back, parts come back only once PostgreSQL's socket took them,
 * and a load whose socket is slower than its rows (PostgreSQL busy with a trigger) loads every byte as produced while
 * reusing its slabs.
 */
import { createHash } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { givePartBack, slabCounts, SLAB_BYTES } from '../src/copy-slabs.ts';
import { CopyOutput } from '../src/pages/copy-text.ts';
import { loadRows } from '../src/warehouse/copy-load.ts';
import { withLoadTransaction } from '../src/warehouse/load-transaction.ts';
import { rowsGivenBack } from '../src/warehouse/copy-written.ts';
import type { RowSource } from '../src/warehouse/row-source.ts';
import { makePool } from '../src/app/connections.ts';
import { silentLogger } from '../src/logger.ts';
import { DATABASE_URL, uniqueName } from './support/env.ts';
import { waitFor } from './support/wait.ts';

const schema = uniqueName('slabs');
let db: pg.Client;
let pool: pg.Pool;
beforeAll(async () => {
  db = new pg.Client({ connectionString: DATABASE_URL });
  await db.connect();
  await db.query(`CREATE SCHEMA ${schema}`);
  pool = makePool(silentLogger, DATABASE_URL, 2);
});
afterAll(async () => {
  await db.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await db.end();
  await pool.end();
});

/** Writes `bytes` bytes into `out` (one text row) and hands them out. */
function part(out: CopyOutput, bytes: number): Buffer {
  out.reserve(bytes);
  out.buf.fill(0x61, out.pos, out.pos + bytes - 1);
  out.buf[out.pos + bytes - 1] = 0x0a;
  out.pos += bytes;
  return out.take()!;
}

describe('slab pool', () => {
  it('fills a slab again only once every part handed out of it came back, whatever else comes back', () => {
    const out = new CopyOutput();
    const first = out.buf;
    // Parts until the writer moves on to another slab.
    const parts: Buffer[] = [];
    while (out.buf === first) parts.push(part(out, 64 * 1024));
    expect(parts.every((p) => p.buffer === first.buffer)).toBe(true);
    const before = slabCounts();
    // Foreign Buffers and parts given back twice change nothing; one part outstanding keeps the slab.
    givePartBack(Buffer.alloc(16));
    for (const p of parts.slice(1)) {
      givePartBack(p);
      givePartBack(p);
    }
    expect(slabCounts().free).toBe(before.free);
    givePartBack(parts[0]!);
    expect(slabCounts().free).toBe(before.free + 1);
    // The next writer that needs a slab gets that one.
    const next = new CopyOutput();
    expect(next.buf).toBe(first);
    expect(slabCounts()).toMatchObject({ reused: before.reused + 1, made: before.made });
  });

  it('never reuses a slab nobody retired (the writer still fills it), nor one of another size', () => {
    const out = new CopyOutput();
    const p = part(out, 1000);
    const before = slabCounts();
    givePartBack(p);
    expect(slabCounts().free).toBe(before.free);
    const small = new CopyOutput(4096);
    const q = part(small, 100);
    givePartBack(q);
    expect(slabCounts().free).toBe(before.free);
  });
});

describe('the COPY side gives parts back', () => {
  it('only when the feed, the COPY stream and the socket hold none of them, or when the socket drains', async () => {
    // Parts of nearly a slab each, so that a part given back puts its slab on the free list at once; each one made
    // when the test opens its gate.
    const gates: (() => void)[] = [];
    const opened = (k: number): Promise<void> => new Promise((resolve) => (gates[k] = resolve));
    const waiting = [0, 1, 2, 3].map(opened);
    async function* rows(): AsyncGenerator<Buffer> {
      const out = new CopyOutput();
      for (let k = 0; k < 4; k++) {
        await waiting[k];
        yield part(out, SLAB_BYTES - 60_000);
      }
    }
    // A COPY stream that hands each part to the socket at once (as pg-copy-streams does while the socket takes it), and
    // a socket whose queue the test sets.
    let copied = 0;
    const copy = new Writable({ write: (_chunk, _enc, cb) => void (copied++, cb()) });
    const socket = Object.assign(new EventEmitter(), { writableLength: 0, writableNeedDrain: false });
    const client = { connection: { stream: socket } } as unknown as pg.ClientBase;
    // Slabs that came back: on the free list, or taken from it again since.
    const free = (): number => slabCounts().free + slabCounts().reused;
    const start = free();
    const done = pipeline(rowsGivenBack(rows(), copy, client), copy);

    // Part 1 is still in the socket's queue when part 2 is pulled: nothing comes back.
    socket.writableLength = 100;
    gates[0]!();
    await waitFor('part 1 copied', () => copied === 1);
    gates[1]!();
    await waitFor('part 2 copied', () => copied === 2);
    expect(free()).toBe(start);
    // The socket emptied: parts 1 and 2 come back when part 3 is pulled.
    socket.writableLength = 0;
    gates[2]!();
    await waitFor('part 3 copied', () => copied === 3);
    expect(free()).toBe(start + 2);
    // Part 3 is queued and the socket will drain when part 4 is pulled: it comes back on 'drain', not before.
    socket.writableLength = 100;
    socket.writableNeedDrain = true;
    gates[3]!();
    await waitFor('part 4 copied', () => copied === 4);
    expect(socket.listenerCount('drain')).toBe(1);
    expect(free()).toBe(start + 2);
    socket.writableLength = 0;
    socket.writableNeedDrain = false;
    socket.emit('drain');
    expect(free()).toBe(start + 3);
    // The last part is never followed by a pull: it stays out (the garbage collector's), and the load ends as ever.
    await done;
    expect(free()).toBe(start + 3);
  });
});

/**
 * A RowSource of `rows` text rows (n, s) written into a CopyOutput, handed out in parts of about `partBytes` (parts
 * of nearly a slab each retire their slab at once, so that a slab given back too early would be written again while
 * the socket still holds its bytes).
 */
function generated(rows: number, partBytes: number): RowSource & { md5: string } {
  const hash = createHash('md5');
  const text = (i: number): string => `row ${i} ${'xyz'.repeat(i % 50)} ${i * 7919}`;
  for (let i = 0; i < rows; i++) hash.update(text(i));
  async function* all(): AsyncGenerator<Buffer> {
    const out = new CopyOutput();
    for (let i = 0; i < rows; i++) {
      const line = `${i}\t${text(i)}\n`;
      out.reserve(line.length);
      out.pos += out.buf.write(line, out.pos, 'latin1');
      if (out.pos - out.start >= partBytes || i === rows - 1) yield out.take()!;
    }
  }
  return {
    md5: hash.digest('hex'),
    copyFormat: 'text',
    writesBinary: false,
    format: 'text',
    open: async (plan) => {
      plan(['n', 's']);
      return ['n', 's'];
    },
    rows: all,
    restart: async () => undefined,
    kinds: () => [],
    pageOfRow: () => 1,
    close: async () => undefined,
  };
}

describe('COPY gives its rows back to the slab pool', () => {
  it('loads every byte as produced while PostgreSQL is slower than the rows, reusing slabs once its socket took them', async () => {
    const table = 'slow';
    await db.query(`CREATE TABLE ${schema}.${table} (n bigint, s text)`);
    // A row trigger that makes PostgreSQL the slow side, so that the socket's queue fills and drains.
    await db.query(`CREATE FUNCTION ${schema}.slow() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN PERFORM md5(repeat(NEW.s, 20)); RETURN NEW; END $$`);
    await db.query(
      `CREATE TRIGGER slow BEFORE INSERT ON ${schema}.${table} FOR EACH ROW EXECUTE FUNCTION ${schema}.slow()`,
    );
    const rows = 150_000;
    const before = slabCounts();
    // Parts of nearly a slab (each retires its slab), and parts of about 20 KB (many per slab).
    for (const partBytes of [SLAB_BYTES - 60_000, 20_000]) {
      const source = generated(rows, partBytes);
      await withLoadTransaction(pool, { target: { schema, table }, timezone: 'UTC' }, async (lt) => {
        const spec = {
          target: { schema, table },
          mode: 'replace' as const,
          key: [],
          declaredTypes: new Map(),
          expectedRows: rows,
          timezone: 'UTC',
          logger: silentLogger,
        };
        expect(await loadRows(lt.tx, spec, source)).toMatchObject({ plan: 'direct', rows });
        await lt.commit();
      });
      const { rows: got } = await db.query(
        `SELECT count(*)::int AS n, md5(string_agg(s, '' ORDER BY n)) AS md5, bool_and(s = 'row ' || n || ' ' || repeat('xyz', (n % 50)::int) || ' ' || (n * 7919)) AS exact FROM ${schema}.${table}`,
      );
      expect({ partBytes, got }).toEqual({ partBytes, got: [{ n: rows, md5: source.md5, exact: true }] });
    }
    // About 2 x 15 MB of rows: most of them were written into slabs that came back.
    expect(slabCounts().reused - before.reused).toBeGreaterThan((2 * rows * 100) / SLAB_BYTES / 2);
  });
});
