/** Pretty logs (log-format.ts) never let a server's text fake a line of their own. */
import { expect, it } from 'vitest';
import { prettyLine } from '../src/log-format.ts';

it("indents the continuation lines of a multi-line message, so that a server's text cannot fake a log line", () => {
  const fake = 'Report failed\n12:00:00 INFO  orders: run succeeded: 10 rows\r\nthe end\u2028more';
  const line = prettyLine({ level: 50, time: Date.UTC(2026, 0, 1), msg: fake, job: 'orders\nx' });
  const lines = line.split('\n');
  expect(line.endsWith('\n')).toBe(true);
  expect(lines.at(-1)).toBe('');
  // Only the first line starts at the margin; every other one is indented and no line break is lost unseen.
  for (const l of lines.slice(1, -1)) expect(l).toMatch(/^ {4}/);
  expect(lines.slice(1, -1).join('\n')).toContain('    12:00:00 INFO  orders: run succeeded: 10 rows');
  expect(line).not.toMatch(/[\r\u2028]/);
  expect(
    prettyLine({ level: 30, time: 0, msg: 'loading', job: 'j', table: 't\nu', plan: 'direct', columns: 2 }),
  ).toMatch(/^\S+ j: loading into t\n {4}u \(plan direct, 2 columns\)\n$/);
});
