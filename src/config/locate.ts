/**
 * Where an option of a job stands in jobs.yaml, as `file:line:col` (the form validate's problems take,
 * docs/configuration.md), so that a command that finds a wrong name at run time can point at the line to fix.
 */
import { readFile } from 'node:fs/promises';
import { LineCounter, parseDocument } from 'yaml';
import { makeLocator } from './problems.ts';

/**
 * `file:line:col` of option `option` (dotted, e.g. `target.key`) of job `job` in `file`, or of its nearest parent
 * written there (a connection's or the defaults' option is not followed); undefined when the file cannot be read.
 */
export async function locateJobOption(file: string, job: string, option: string): Promise<string | undefined> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch {
    return undefined;
  }
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, merge: true });
  const { line, col } = makeLocator(doc, lines).node(['jobs', job, ...option.split('.')]);
  return `${file}:${line}:${col}`;
}
