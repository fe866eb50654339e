/**
 * Keeping the pages of a failed load (docs/operations.md "Kept pages") is bounded as the load is: each page it reads
 * from the server again has the job's pageTimeoutMs. A load that failed on a server trickling its page (PAGE_TIMEOUT)
 * fails with PAGE_TIMEOUT, not once maxRunMs ran out while its pages were being kept.
 */
import { describe, expect, it } from 'vitest';
import { getArchive } from '../src/history/page-archive.ts';
import { uniqueName } from './support/env.ts';
import { attemptFailure, jobEntry, useHarness } from './support/harness.ts';

const h = useHarness();

describe('keeping the pages of a failed load', () => {
  it('gives each page pageTimeoutMs: a trickled page fails the attempt with PAGE_TIMEOUT', async () => {
    const config = h.config({
      t: {
        ...jobEntry(
          {
            name: 'Sales/Orders',
            outputType: 'json',
            paging: 100,
            parameters: { ROWS: '250', SIM_FAULT: 'trickle', SIM_FAULT_PAGE: '2' },
          },
          { table: `${h.schema}.kept_trickle`, mode: 'replace', archive: { keepDays: 1 } },
        ),
        pageTimeoutMs: 1500,
        // Far more than the load and the keeping of its pages take with pageTimeoutMs, far less than a trickled
        // page's 26 kB at one byte every 2 s.
        maxRunMs: 30_000,
      },
    });
    const failed = await attemptFailure(h.run(config, 't', { runKey: uniqueName('t') }));
    expect(failed.code).toBe('PAGE_TIMEOUT');
    expect(failed.message).toContain('page 2 of report job');
    // What was read before the trickled page is kept, incomplete; the report job is deleted.
    expect(await getArchive(h.pool, failed.attemptId)).toMatchObject({ complete: false });
    expect(h.sim.counters().openJobs).toEqual([]);
  });
});
