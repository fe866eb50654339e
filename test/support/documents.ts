/**
 * Opens archived documents the way their viewers would, for the tests: a PDF through poppler (pdftoppm renders the
 * first page, pdftotext gives its text) when it is installed, else through pdfkit's own structure markers; a docx
 * as an Office Open XML zip package (JSZip), returning the text of word/document.xml.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import JSZip from 'jszip';

const run = promisify(execFile);

async function has(tool: string): Promise<boolean> {
  return run(tool, ['-v']).then(
    () => true,
    () => false,
  );
}

/**
 * Renders page 1 of a PDF with pdftoppm (a PNG must come out) and returns the text of the PDF (pdftotext).
 * @throws when poppler cannot render it
 */
export async function checkPdf(content: Buffer): Promise<string> {
  if (!content.subarray(0, 5).equals(Buffer.from('%PDF-'))) throw new Error('not a PDF');
  if (!(await has('pdftoppm'))) throw new Error('pdftoppm (poppler-utils) is needed to check PDFs: apt-get install poppler-utils');
  const dir = await mkdtemp(join(tmpdir(), 'pdf-'));
  try {
    const file = join(dir, 'doc.pdf');
    await writeFile(file, content);
    await run('pdftoppm', ['-png', '-r', '20', '-f', '1', '-l', '1', file, join(dir, 'page')]);
    const pngs = (await readdir(dir)).filter((f) => f.endsWith('.png'));
    if (pngs.length !== 1) throw new Error(`pdftoppm rendered ${pngs.length} pages`);
    const { stdout } = await run('pdftotext', [file, '-']);
    return stdout;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * Opens a docx as a zip package: [Content_Types].xml, _rels/.rels and word/document.xml must be there.
 * @returns the text runs of word/document.xml, joined by spaces
 */
export async function checkDocx(content: Buffer): Promise<string> {
  const zip = await JSZip.loadAsync(content);
  for (const part of ['[Content_Types].xml', '_rels/.rels', 'word/document.xml']) {
    if (!zip.file(part)) throw new Error(`docx package lacks ${part}`);
  }
  const types = await zip.file('[Content_Types].xml')!.async('string');
  if (!types.includes('wordprocessingml.document.main+xml')) throw new Error('[Content_Types].xml does not declare a Word document');
  const xml = await zip.file('word/document.xml')!.async('string');
  return [...xml.matchAll(/<w:t(?: [^>]*)?>([^<]*)<\/w:t>/g)].map((m) => m[1]).join(' ').replaceAll('&amp;', '&').replaceAll('&lt;', '<').replaceAll('&gt;', '>').replaceAll('&quot;', '"');
}
