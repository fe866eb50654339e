/**
 * A failure's first meaningful line (src/failure-text.ts), and its SQL twin (history/attempt-list.ts summaryLineSql)
 * on the real PostgreSQL: both sum up the same texts the same way.
 */
import { afterAll, expect, it } from 'vitest';
import { makePool } from '../src/app/connections.ts';
import { summaryLineSql } from '../src/history/attempt-list.ts';
import { summaryLine } from '../src/failure-text.ts';
import { silentLogger } from '../src/logger.ts';
import { DATABASE_URL } from './support/env.ts';

const pool = makePool(silentLogger, DATABASE_URL, 1);
afterAll(async () => {
  await pool.end();
});

const CASES: [string, string][] = [
  [
    "Report execution failed:\nDivision by zero in formula 'Marge'\nline 42",
    "Report execution failed: Division by zero in formula 'Marge'",
  ],
  ['\n\n  The user has no access to the service  \n\nmore', 'The user has no access to the service'],
  ['One line only', 'One line only'],
  ['Ends with a colon:', 'Ends with a colon:'],
  ['Heading:\r\n\r\n  detail after blank lines\r\nrest', 'Heading: detail after blank lines'],
  ['', ''],
];

it('sums a failure up by its first meaningful line, in TypeScript and in SQL alike', async () => {
  for (const [text, summary] of CASES) {
    expect(summaryLine(text), JSON.stringify(text)).toBe(summary);
    const { rows } = await pool.query<{ s: string | null }>(`SELECT ${summaryLineSql('$1::text')} AS s`, [text]);
    expect(rows[0]!.s ?? '', `SQL: ${JSON.stringify(text)}`).toBe(summary);
  }
});
