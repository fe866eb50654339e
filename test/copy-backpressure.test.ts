/**
 * COPY under backpressure (pages/copy-text.ts, warehouse/copy-load.ts): a load whose PostgreSQL is slower than its
 * rows (busy with a trigger) loads every byte as the decoder wrote it, whether the decoder hands out parts of nearly
 * a slab or many small parts per slab: a part handed out is never written again while COPY still holds it.
 */
import { createHash } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CopyOutput } from '../src/pages/copy-text.ts';
import { loadRows } from '../src/warehouse/copy-load.ts';
import { withLoadTransaction } from '../src/warehouse/load-transaction.ts';
import type { RowSource } from '../src/warehouse/row-source.ts';
import { makePool } from '../src/app/connections.ts';
import { migrate } from '../src/history/migrate.ts';
import { silentLogger } from '../src/logger.ts';
import { DATABASE_URL, uniqueName } from './support/env.ts';

/** Bytes of a CopyOutput's default slab (pages/copy-text.ts). */
const SLAB_BYTES = 1 << 20;

const schema = uniqueName('backpressure');
let db: pg.Client;
let pool: pg.Pool;
beforeAll(async () => {
  db = new pg.Client({ connectionString: DATABASE_URL });
  await db.connect();
  await db.query(`CREATE SCHEMA ${schema}`);
  pool = makePool(silentLogger, DATABASE_URL, 2);
  await migrate(pool);
});
afterAll(async () => {
  await db.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await db.end();
  await pool.end();
});

/**
 * A RowSource of `rows` text rows (n, s) written into a CopyOutput, handed out in parts of about `partBytes` (parts
 * of nearly a slab each make the writer move on to a new slab at once).
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
    rowsBeforePage: () => 0,
    close: async () => undefined,
  };
}

describe('COPY under backpressure', () => {
  it('loads every byte as produced while PostgreSQL is slower than the rows', async () => {
    const table = 'slow';
    await db.query(`CREATE TABLE ${schema}.${table} (n bigint, s text)`);
    // A row trigger that makes PostgreSQL the slow side, so that the socket's queue fills and drains.
    await db.query(`CREATE FUNCTION ${schema}.slow() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN PERFORM md5(repeat(NEW.s, 20)); RETURN NEW; END $$`);
    await db.query(
      `CREATE TRIGGER slow BEFORE INSERT ON ${schema}.${table} FOR EACH ROW EXECUTE FUNCTION ${schema}.slow()`,
    );
    const rows = 150_000;
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
        `SELECT count(*)::int AS n, md5(string_agg(s, '' ORDER BY n)) AS md5, bool_and(s = 'row ' || n || ' ' || ` +
          `repeat('xyz', (n % 50)::int) || ' ' || (n * 7919)) AS exact FROM ${schema}.${table}`,
      );
      expect({ partBytes, got }).toEqual({ partBytes, got: [{ n: rows, md5: source.md5, exact: true }] });
    }
  });
});
