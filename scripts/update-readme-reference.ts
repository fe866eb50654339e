/**
 * Rewrites the configuration reference in README.md from the zod schema (src/config/schema.ts), between the
 * markers <!-- config-reference:start --> and <!-- config-reference:end -->. test/readme.test.ts fails when the
 * README and the schema disagree; run `npm run docs` to bring the README up to date.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { renderConfigReference } from '../src/config/reference.ts';

export const START = '<!-- config-reference:start -->';
export const END = '<!-- config-reference:end -->';

/** The README text with the reference section replaced by `reference`. */
export function withReference(readme: string, reference: string): string {
  const a = readme.indexOf(START);
  const b = readme.indexOf(END);
  if (a < 0 || b < a) throw new Error(`README.md lacks the markers ${START} … ${END}`);
  return `${readme.slice(0, a + START.length)}\n${reference.trim()}\n${readme.slice(b)}`;
}

if (import.meta.main) {
  const path = new URL('../README.md', import.meta.url);
  writeFileSync(path, withReference(readFileSync(path, 'utf8'), renderConfigReference()));
}
