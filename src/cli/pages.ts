/**
 * `report-etl pages <run-key | attempt-id> [--job J] [--out DIR]` (docs/operations.md "Kept pages"): writes the pages
 * an attempt kept (`target.archive`) to files named by page number, with an extension from the Content-Type the server
 * sent, byte for byte as served (checked against the sha256 taken as they were read), for the ERP vendor's support.
 * A run key names its newest attempt that kept every page. Documents (pdf, excel, word) a load committed count as
 * kept pages: they are written from their target (as `report-etl documents` does, named by page number here). No
 * file is written over: a DIR holding one of those names is refused, nothing written (exit 2). Exit 1
 * when there are none or one is damaged, 2 when the id names nothing or runs of several jobs.
 */
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { CONFIG_NOT_READ } from './options.ts';
import type { RegisterCommand } from './types.ts';
import { noneExistOrExit, outDirOrExit, writeFileOrReport } from './write-file.ts';

/** File extensions by the media type of a page's Content-Type; `bin` for any other. */
const EXTENSIONS: Readonly<Record<string, string>> = {
  'application/json': 'json',
  'text/plain': 'txt',
  'text/xml': 'xml',
  'application/xml': 'xml',
  'text/csv': 'csv',
  'application/pdf': 'pdf',
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': 'xlsx',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document': 'docx',
};

/** The file extension of a Content-Type, e.g. `text/plain; charset=utf-8` → `txt`. */
export function pageExtension(contentType: string): string {
  return EXTENSIONS[contentType.split(';')[0]!.trim().toLowerCase()] ?? 'bin';
}

/** The file a page is written to: its number, zero-padded to `width` digits, and its content type's extension. */
function pageFileName(page: number, width: number, contentType: string): string {
  return `${String(page).padStart(width, '0')}.${pageExtension(contentType)}`;
}

export const registerPages: RegisterCommand = (program, cli) => {
  program
    .command('pages <run-key|attempt-id>')
    .description('write the pages a run kept (target.archive) to files, byte for byte as the server sent them')
    .option('--job <job>', 'the job the run key is of, when run keys of several jobs match')
    .option('--out <dir>', 'directory to write to (created when missing)', '.')
    .option('-c, --config <path>', CONFIG_NOT_READ)
    .action(async (id: string, opts: { job?: string; out: string }) => {
      // Loaded here: `--help` and the other commands need none of it (start-up cost).
      const [{ openStores }, { makeLogger }, { namedRunOrExit, keptOfNamed, namedWhat }, { openKeptPages }, documents] =
        await Promise.all([
          import('../app/bootstrap.ts'),
          import('../logger.ts'),
          import('./named-run.ts'),
          import('../pipeline/kept-pages.ts'),
          import('../warehouse/documents.ts'),
        ]);
      const logger = makeLogger();
      const { pool, releasers } = await openStores(logger, { poolMax: 2 });
      try {
        const named = await namedRunOrExit(cli, pool, id, opts.job);
        if (named === undefined) return;
        const kept = await keptOfNamed(pool, named);
        if ('documents' in kept) {
          const { docs } = kept.documents;
          const dir = await outDirOrExit(cli, 'pages', opts.out);
          if (dir === undefined) return;
          const width = String(Math.max(...docs.map((d) => d.page))).length;
          const files = docs.map((d) => join(dir, pageFileName(d.page, width, d.contentType)));
          if (!(await noneExistOrExit(cli, 'pages', files))) return;
          for (const [i, doc] of docs.entries()) {
            const file = files[i]!;
            // readDocument checks the bytes against the sha256 recorded when they were loaded.
            const source = Readable.from(documents.readDocument(pool, doc));
            if (!(await writeFileOrReport(cli, file, source, doc.page, { exclusive: true }))) continue;
            cli.out(`${file}  ${doc.contentType}  ${doc.bytes} bytes  sha256 ${doc.sha256}`);
          }
          return;
        }
        const { archive } = kept;
        if (!archive?.complete) {
          cli.err(
            `${namedWhat(named)} kept no complete pages (target.archive off, its reading stopped early, or ` +
              'keepDays ran out), nor loaded documents',
          );
          cli.exit(1);
          return;
        }
        const dir = await outDirOrExit(cli, 'pages', opts.out);
        if (dir === undefined) return;
        const pages = await openKeptPages(pool, archive);
        try {
          const width = String(pages.pages.length).length;
          const files = pages.pages.map((p) => join(dir, pageFileName(p.page, width, p.contentType)));
          if (!(await noneExistOrExit(cli, 'pages', files))) return;
          for (const [i, page] of pages.pages.entries()) {
            const file = files[i]!;
            const stream = await pages.openPage(archive.attemptId, page.page);
            if (!(await writeFileOrReport(cli, file, stream!.body, page.page, { exclusive: true }))) continue;
            cli.out(`${file}  ${page.contentType}  ${page.bytes} bytes  sha256 ${page.sha256}`);
          }
        } finally {
          await pages.close();
        }
      } finally {
        await releasers.releaseAll().catch(() => undefined);
        logger.flush();
      }
    });
};
