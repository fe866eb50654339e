/**
 * The progress of a loading attempt (etl.attempts.progress, docs/observability.md "Run history") costs the load
 * nothing it waits for: one UPDATE in flight at most, the newest figures replacing those not yet written, the last
 * ones written at close, and a failing write logged, never thrown. A pool stand-in counts the statements.
 */
import type pg from 'pg';
import { expect, it } from 'vitest';
import {
  progressRecorder,
  readingWords,
  readProgress,
  stoppedAtWords,
  commaCount,
} from '../src/history/attempt-progress.ts';
import { silentLogger } from '../src/logger.ts';

/** A pool whose queries wait until released, recording what each wrote and how many ran at once. */
function heldPool(fail = false) {
  const written: { page: number; rows: number }[] = [];
  const waiting: (() => void)[] = [];
  let running = 0;
  let most = 0;
  const pool = {
    query(_sql: string, params: unknown[]) {
      running += 1;
      most = Math.max(most, running);
      return new Promise((resolve, reject) => {
        waiting.push(() => {
          running -= 1;
          written.push(JSON.parse(params[1] as string) as { page: number; rows: number });
          if (fail) reject(new Error('connection refused'));
          else resolve({ rowCount: 1 });
        });
      });
    },
  };
  const releaseOne = async () => {
    waiting.shift()?.();
    // Let the recorder's then/finally run.
    for (let i = 0; i < 5; i++) await Promise.resolve();
  };
  return { pool: pool as unknown as pg.Pool, written, releaseOne, most: () => most, waiting };
}

it('keeps one UPDATE in flight and writes only the newest figures, the last ones at close', async () => {
  const p = heldPool();
  const recorder = progressRecorder(p.pool, 'a1', silentLogger, 0);
  for (let page = 1; page <= 50; page++) recorder.note({ page, pagesRead: page - 1, pages: 50, rows: page * 1000 });
  // The first figures went at once; 49 more notes wait as one.
  expect(p.waiting).toHaveLength(1);
  await p.releaseOne();
  expect(p.waiting).toHaveLength(1);
  const closed = recorder.close();
  await p.releaseOne();
  await closed;
  expect(p.written.map((w) => w.page)).toEqual([1, 50]);
  expect(p.most()).toBe(1);
  recorder.note({ page: 51, pagesRead: 50, pages: 50, rows: 1 });
  expect(p.waiting).toHaveLength(0);
});

it('never throws when the database refuses: the load goes on', async () => {
  const p = heldPool(true);
  const recorder = progressRecorder(p.pool, 'a2', silentLogger, 0);
  recorder.note({ page: 1, pagesRead: 0, pages: null, rows: 0 });
  recorder.note({ page: 2, pagesRead: 1, pages: null, rows: 10 });
  const closed = recorder.close();
  await p.releaseOne();
  await p.releaseOne();
  await expect(closed).resolves.toBeUndefined();
  expect(p.written.map((w) => w.page)).toEqual([1, 2]);
});

it('says where an attempt stopped', () => {
  const at = '2026-11-26T07:35:35.888Z';
  const p = readProgress({ page: 33, pagesRead: 32, pages: null, rows: 3_200_000, at })!;
  expect(stoppedAtWords(p, commaCount)).toBe('stopped at page 33 of ?, 3,200,000 rows read');
  const done = readProgress({ page: 40, pagesRead: 40, pages: 40, rows: 4_000_000, at })!;
  expect(stoppedAtWords(done, commaCount)).toBe('stopped after page 40 of 40, 4,000,000 rows read');
  // Asking past the last page (for the server's 404 that ends the pages) is no page 41 of 40.
  const past = readProgress({ page: 41, pagesRead: 40, pages: 40, rows: 4_000_000, at })!;
  expect(stoppedAtWords(past, commaCount)).toBe('stopped after page 40 of 40, 4,000,000 rows read');
  expect(readProgress(null)).toBeUndefined();
  expect(readProgress({ page: 'x' })).toBeUndefined();
});

it('says that the server was rendering the report, with its polls, before the first page', () => {
  const at = '2026-11-26T07:35:35.888Z';
  const p = readProgress({ page: 0, pagesRead: 0, pages: null, rows: 0, polls: 1234, at })!;
  expect(p.polls).toBe(1234);
  expect(stoppedAtWords(p, commaCount)).toBe(
    'stopped while the server rendered the report (1,234 polls), before its first page',
  );
  expect(readingWords(p, commaCount)).toBe('the server renders the report (1,234 polls so far)');
  const one = readProgress({ page: 0, pagesRead: 0, pages: null, rows: 0, polls: 1, at })!;
  expect(readingWords(one, commaCount)).toBe('the server renders the report (1 poll so far)');
  const reading = readProgress({ page: 3, pagesRead: 2, pages: 40, rows: 2_000, at })!;
  expect(readingWords(reading, commaCount)).toBe('reading page 3 of 40, 2,000 rows read so far');
});
