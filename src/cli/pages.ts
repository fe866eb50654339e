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
import type { Cli, RegisterCommand } from './types.ts';
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

/** A page to write: its number, Content-Type, and the size and sha256 it was served with. */
interface PageToWrite {
  page: number;
  contentType: string;
  bytes?: number | undefined;
  sha256?: string | undefined;
}

/**
 * Writes `pages` into `dir`, each to a file named by its page number (zero-padded alike) and its content type's
 * extension, one line each on stdout; writes nothing when one of those files exists (exit 2), and over no file.
 * @param open the bytes of a page
 */
async function writePageFiles<P extends PageToWrite>(
  cli: Cli,
  dir: string,
  pages: readonly P[],
  open: (page: P) => Promise<Readable>,
): Promise<void> {
  const width = String(Math.max(0, ...pages.map((p) => p.page))).length;
  const files = pages.map((p) => join(dir, `${String(p.page).padStart(width, '0')}.${pageExtension(p.contentType)}`));
  if (!(await noneExistOrExit(cli, 'pages', files))) return;
  for (const [i, p] of pages.entries()) {
    if (!(await writeFileOrReport(cli, files[i]!, await open(p), p.page, { exclusive: true }))) continue;
    cli.out(`${files[i]}  ${p.contentType}  ${p.bytes} bytes  sha256 ${p.sha256}`);
  }
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
          // readDocument checks the bytes against the sha256 recorded when they were loaded.
          await writePageFiles(cli, dir, docs, (doc) =>
            Promise.resolve(Readable.from(documents.readDocument(pool, doc))),
          );
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
          await writePageFiles(
            cli,
            dir,
            pages.pages,
            async (p) => (await pages.openPage(archive.attemptId, p.page))!.body,
          );
        } finally {
          await pages.close();
        }
      } finally {
        await releasers.releaseAll().catch(() => undefined);
        logger.flush();
      }
    });
};
