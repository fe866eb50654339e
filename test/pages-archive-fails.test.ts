/**
 * The page archive's own database failing mid-load (docs/operations.md "Kept pages"): the load fails, saying that it
 * was the kept pages (target.archive) that could not be stored, not the target; the target is as it was, the kept
 * pages stay incomplete (a replay --from-pages refuses them), and the report job is deleted. A statement of the archive
 * that hangs is cancelled once the attempt is aborted (maxRunMs, a shutdown), so that the attempt ends.
 */
import { describe, expect, it } from 'vitest';
import { getArchive } from '../src/history/page-archive.ts';
import { uniqueName } from './support/env.ts';
import { attemptFailure, jobEntry, useHarness } from './support/harness.ts';

const h = useHarness();

/**
 * Runs `during` while a BEFORE INSERT trigger on etl.attempt_page_chunks runs `action` (PL/pgSQL statements) for
 * each chunk of `job`'s attempts whose page matches `pages` (an SQL condition on NEW.page); only this job's, since
 * other test files share etl's tables. The trigger is dropped after, whatever happened.
 */
async function withChunkTrigger<T>(job: string, name: string, pages: string, action: string, during: () => Promise<T>) {
  const fn = `${h.schema}.${name}`;
  await h.pool.query(
    `CREATE FUNCTION ${fn}() RETURNS trigger LANGUAGE plpgsql AS $$
     BEGIN
       IF ${pages} AND EXISTS (SELECT 1 FROM etl.attempts WHERE attempt_id = NEW.attempt_id AND job = '${job}') THEN
         ${action}
       END IF;
       RETURN NEW;
     END $$`,
  );
  const trigger = uniqueName(name);
  await h.pool.query(
    `CREATE TRIGGER ${trigger} BEFORE INSERT ON etl.attempt_page_chunks FOR EACH ROW EXECUTE FUNCTION ${fn}()`,
  );
  try {
    return await during();
  } finally {
    await h.pool.query(`DROP TRIGGER ${trigger} ON etl.attempt_page_chunks`);
  }
}

describe('a page archive that cannot store a chunk', () => {
  it('fails the load naming target.archive, keeps the target as it was and the pages incomplete', async () => {
    const job = uniqueName('af');
    const table = `${h.schema}.archive_fails`;
    await h.pool.query(`CREATE TABLE ${table} (auftrag_nr bigint)`);
    await h.pool.query(`INSERT INTO ${table} VALUES (1), (2)`);
    const config = h.config({
      [job]: jobEntry(
        { name: 'Sales/Orders', outputType: 'json', paging: 100, parameters: { ROWS: '250' } },
        { table, mode: 'replace', schemaChanges: 'evolve', archive: { keepDays: 1 } },
      ),
    });
    // Only this job's chunks of page 2 fail, as a full disk or a quota would.
    const fail = `RAISE EXCEPTION 'could not extend file: No space left on device' USING ERRCODE = '53100';`;
    await withChunkTrigger(job, 'fail_chunk', 'NEW.page = 2', fail, async () => {
      const failed = await attemptFailure(h.run(config, job, { runKey: uniqueName('af') }));
      expect(failed.code).toBe('DATABASE');
      expect(failed.message).toContain('target.archive');
      expect(failed.message).toContain('No space left on device');
      expect(await getArchive(h.pool, failed.attemptId)).toMatchObject({ complete: false });
      const { rows } = await h.pool.query<{ n: string }>(`SELECT count(*) AS n FROM ${table}`);
      expect(Number(rows[0]!.n)).toBe(2);
      expect(h.sim.counters().openJobs).toEqual([]);
    });
  });

  it('a chunk whose INSERT hangs is cancelled once maxRunMs ran out: the attempt ends, RUN_TIMEOUT', async () => {
    const job = uniqueName('ah');
    const config = h.config({
      [job]: {
        ...jobEntry(
          { name: 'Sales/Orders', outputType: 'json', paging: 100, parameters: { ROWS: '250' } },
          { table: `${h.schema}.archive_hangs`, mode: 'replace', archive: { keepDays: 1 } },
        ),
        maxRunMs: 2_000,
      },
    });
    // This job's chunk INSERTs wait, as behind a lock or a stalled disk; one that is not cancelled takes a number
    // (nextval is not rolled back) once its wait is over.
    const seq = `${h.schema}.hang_over`;
    await h.pool.query(`CREATE SEQUENCE ${seq}`);
    await withChunkTrigger(job, 'hang_chunk', 'true', `PERFORM pg_sleep(20); PERFORM nextval('${seq}');`, async () => {
      const err = await attemptFailure(h.run(config, job, { runKey: uniqueName('ah') }));
      expect(err.code).toBe('RUN_TIMEOUT');
      // The INSERT was cancelled, not waited for: no connection of the attempt's archive is left running it.
      const { rows } = await h.pool.query<{ is_called: boolean }>(`SELECT is_called FROM ${seq}`);
      expect(rows[0]!.is_called).toBe(false);
      expect(h.sim.counters().openJobs).toEqual([]);
    });
  });
});
