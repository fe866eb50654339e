/**
 * Lists every line over 120 characters in the tracked .ts, .js, .mjs and .md files as file:line (prettier breaks
 * code at printWidth 120 but not strings, template literals or comments). Markdown table rows and lines that are
 * only a URL are let through: neither can be broken. Exits 1 when it listed any, else 0.
 *
 *     node scripts/check-line-length.ts
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

const MAX = 120;
const EXTENSIONS = /\.(?:ts|js|mjs|md)$/;

/** A markdown line no wrapping can shorten: a table row, or a bare URL (also as a list item or a link target). */
function unbreakableMarkdown(line: string): boolean {
  const t = line.trim();
  return t.startsWith('|') || /^(?:[-*] |\[[^\]]*\]: )?<?https?:\/\/\S+>?$/.test(t);
}

// Run from the repository root; `git ls-files` lists what is tracked, nothing generated or ignored.
const files = execFileSync('git', ['ls-files', '-z'], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 })
  .split('\0')
  .filter((f) => EXTENSIONS.test(f));
let found = 0;
for (const file of files) {
  const markdown = file.endsWith('.md');
  const lines = readFileSync(file, 'utf8').split(/\r?\n/);
  lines.forEach((line, i) => {
    // Characters, not UTF-16 units: prettier counts "—" or "×" as one.
    if ([...line].length <= MAX || (markdown && unbreakableMarkdown(line))) return;
    console.log(`${file}:${i + 1}: ${[...line].length} characters`);
    found++;
  });
}
if (found > 0) {
  console.log(`${found} line(s) over ${MAX} characters`);
  process.exitCode = 1;
}
