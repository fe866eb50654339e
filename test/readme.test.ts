/** The README's configuration reference is the schema's: generated from it, and checked here so it cannot drift. */
import { readFileSync } from 'node:fs';
import { expect, it } from 'vitest';
import { renderConfigReference } from '../src/config/reference.ts';
import { withReference } from '../scripts/update-readme-reference.ts';

it('README.md carries the configuration reference generated from the schema (run `npm run docs` to update)', () => {
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
  expect(readme).toBe(withReference(readme, renderConfigReference()));
  expect(readme).toContain('| `paging` | integer (≥ 10) | `10000` |');
});

it('README.md gives the test command and the commands it documents exist', () => {
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
  expect(readme).toContain('npm test');
});
