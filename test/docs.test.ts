/**
 * The repository explains itself: every citation of a section (`docs/x.md "Heading"`, `README "Heading"`) names a
 * heading that exists there, and no comment points outside the repository (to files a reader cannot open, or to a
 * tracker's issue numbers).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

function sources(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return e.name === 'node_modules' || e.name === 'results' ? [] : sources(path);
    return /\.(ts|js|mjs|sql|ya?ml|json)$/.test(e.name) ? [path] : [];
  });
}

const FILES = [
  ...['src', 'test', 'scripts', 'bench', 'bin', 'migrations', 'deploy'].flatMap(sources),
  'docker-compose.yml',
  'Dockerfile',
  'jobs.yaml',
];

/** The headings of a markdown file, without their #s. */
function headings(file: string): Set<string> {
  return new Set(
    [...readFileSync(join(ROOT, file), 'utf8').matchAll(/^#{1,6} +(.+?) *$/gm)].map((m) => m[1]!.replaceAll('`', '')),
  );
}

it('cites only sections that exist in docs/ and the README', () => {
  const known = new Map(readdirSync(join(ROOT, 'docs')).map((f) => [`docs/${f}`, headings(`docs/${f}`)]));
  known.set('README', headings('README.md'));
  const missing: string[] = [];
  let cited = 0;
  for (const file of FILES) {
    if (file === relative(ROOT, fileURLToPath(import.meta.url))) continue;
    const text = readFileSync(join(ROOT, file), 'utf8');
    for (const m of text.matchAll(/(docs\/[a-z-]+\.md|README)\s+"([^"]+)"/g)) {
      cited++;
      // A citation may wrap inside a comment: its words are joined again.
      const section = m[2]!.replace(/\s*\n\s*(\*|\/\/|--|#)?\s*/g, ' ');
      if (!known.get(m[1]!)?.has(section)) missing.push(`${file}: ${m[1]} "${section}"`);
    }
  }
  expect(missing).toEqual([]);
  expect(cited).toBeGreaterThan(100);
});

it('points at nothing outside the repository: no DESIGN.md, CONVENTIONS.md or issue numbers', () => {
  const outside: string[] = [];
  for (const file of FILES) {
    const lines = readFileSync(join(ROOT, file), 'utf8').split('\n');
    lines.forEach((line, k) => {
      if (/DESIGN\.md|CONVENTIONS\.md|\b[Ii]ssues? \d+/.test(line) && !file.endsWith('docs.test.ts'))
        outside.push(`${file}:${k + 1}: ${line.trim()}`);
    });
  }
  expect(outside).toEqual([]);
});
