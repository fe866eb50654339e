/**
 * Rewrites the configuration reference in docs/configuration.md from the zod schema (src/config/schema.ts), between
 * the markers <!-- config-reference:start --> and <!-- config-reference:end -->. test/config-reference.test.ts fails
 * when the two disagree; `npm run docs` brings the page up to date.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { renderConfigReference } from '../src/config/reference.ts';

export const START = '<!-- config-reference:start -->';
export const END = '<!-- config-reference:end -->';

/** The page's text with the reference section replaced by `reference`. */
export function withReference(page: string, reference: string): string {
  const a = page.indexOf(START);
  const b = page.indexOf(END);
  if (a < 0 || b < a) throw new Error(`docs/configuration.md lacks the markers ${START} … ${END}`);
  return `${page.slice(0, a + START.length)}\n${reference.trim()}\n${page.slice(b)}`;
}

if (import.meta.main) {
  const path = new URL('../docs/configuration.md', import.meta.url);
  writeFileSync(path, withReference(readFileSync(path, 'utf8'), renderConfigReference()));
}
