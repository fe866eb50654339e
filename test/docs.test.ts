/**
 * The repository explains itself: every citation of a section (`docs/x.md "Heading"`, `README "Heading"`) names a
 * heading that exists there, every relative link of the markdown files leads to a file and heading that exist, no
 * line of them is over 120 characters, and nothing points outside the repository (to files a reader cannot open, or
 * to a tracker's issue numbers).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { END, START } from '../scripts/update-config-reference.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

function sources(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return e.name === 'node_modules' || e.name === 'results' ? [] : sources(path);
    return /\.(ts|js|mjs|sql|ya?ml|json)$/.test(e.name) ? [path] : [];
  });
}

const DOCS = ['README.md', 'CHANGELOG.md', ...readdirSync(join(ROOT, 'docs')).map((f) => `docs/${f}`)];
const FILES = [
  ...['src', 'test', 'scripts', 'bench', 'bin', 'migrations', 'deploy'].flatMap(sources),
  'docker-compose.yml',
  'Dockerfile',
  'jobs.yaml',
  ...DOCS,
];
const SELF = relative(ROOT, fileURLToPath(import.meta.url));

/** The headings of a markdown file, without their #s and backticks, outside code blocks. */
function headings(file: string): string[] {
  const text = readFileSync(join(ROOT, file), 'utf8').replace(/^```[\s\S]*?^```$/gm, '');
  return [...text.matchAll(/^#{1,6} +(.+?) *$/gm)].map((m) => m[1]!.replaceAll('`', ''));
}

/** A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces as dashes. */
function anchor(heading: string): string {
  return heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replaceAll(' ', '-');
}

it('cites only sections that exist in docs/ and the README', () => {
  const known = new Map(DOCS.filter((f) => f.startsWith('docs/')).map((f) => [f, new Set(headings(f))]));
  known.set('README', new Set(headings('README.md')));
  const missing: string[] = [];
  let cited = 0;
  for (const file of FILES) {
    if (file === SELF) continue;
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

it('links the markdown files only to files and headings that exist', () => {
  const broken: string[] = [];
  let links = 0;
  for (const file of DOCS) {
    const text = readFileSync(join(ROOT, file), 'utf8').replace(/^```[\s\S]*?^```$/gm, '');
    for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      const [path, hash] = m[1]!.split('#') as [string, string | undefined];
      if (/^[a-z]+:/.test(path)) continue;
      links++;
      const target = path === '' ? file : relative(ROOT, join(ROOT, dirname(file), path));
      if (!existsSync(join(ROOT, target))) broken.push(`${file}: ${m[1]} (no file ${target})`);
      else if (hash !== undefined && !headings(target).map(anchor).includes(hash))
        broken.push(`${file}: ${m[1]} (no heading #${hash} in ${target})`);
    }
  }
  expect(broken).toEqual([]);
  expect(links).toBeGreaterThan(30);
});

it('cites in docs/performance.md only results files that bench/results/ holds', () => {
  const text = readFileSync(join(ROOT, 'docs/performance.md'), 'utf8');
  const cited = [...new Set([...text.matchAll(/`([\w-]+\.json)`/g)].map((m) => m[1]!))];
  expect(cited.length).toBeGreaterThan(3);
  expect(cited.filter((f) => !existsSync(join(ROOT, 'bench/results', f)))).toEqual([]);
});

it('keeps the markdown files within 120 characters a line, but for tables, URLs and the generated reference', () => {
  const long: string[] = [];
  for (const file of DOCS) {
    const text = readFileSync(join(ROOT, file), 'utf8');
    const generated = text.indexOf(START) < 0 ? '' : text.slice(text.indexOf(START), text.indexOf(END));
    text
      .replace(generated, '')
      .split('\n')
      .forEach((line, k) => {
        if (line.length > 120 && !line.startsWith('|') && !/https?:\/\//.test(line))
          long.push(`${file}:${k + 1}: ${line.slice(0, 60)}…`);
      });
  }
  expect(long).toEqual([]);
});

it('points at nothing outside the repository: no DESIGN.md, CONVENTIONS.md or issue numbers', () => {
  const outside: string[] = [];
  for (const file of FILES) {
    if (file === SELF) continue;
    const lines = readFileSync(join(ROOT, file), 'utf8').split('\n');
    lines.forEach((line, k) => {
      if (/DESIGN\.md|CONVENTIONS\.md|\b[Ii]ssues? \d+/.test(line)) outside.push(`${file}:${k + 1}: ${line.trim()}`);
    });
  }
  expect(outside).toEqual([]);
});
