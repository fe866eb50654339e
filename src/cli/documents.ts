/**
 * `report-etl documents <run-key | attempt-id> [--job J] [--out DIR] [--page N]` (README "Commands"): writes the
 * documents a run or attempt archived to files, streamed from PostgreSQL. Exit 1 when there are none or one is gone
 * from its target, 2 when the id names nothing or runs of several jobs.
 */
import { basename, join } from 'node:path';
import { Readable } from 'node:stream';
import { CONFIG_NOT_READ, wholeNumber } from './options.ts';
import { withStores } from './stores.ts';
import { fail, type RegisterCommand } from './types.ts';
import { outDirOrExit, writeFileOrReport } from './write-file.ts';

export const registerDocuments: RegisterCommand = (program, cli) => {
  program
    .command('documents <run-key|attempt-id>')
    .description("write a run's archived documents (pdf, xlsx, docx) to files; give its run key, or an attempt id")
    .option('--job <job>', 'the job the run key is of, when run keys of several jobs match')
    .option('--out <dir>', 'directory to write to (created when missing)', '.')
    .option('--page <n>', 'only this page', wholeNumber(1))
    .option('-c, --config <path>', CONFIG_NOT_READ)
    .action(async (id: string, opts: { job?: string; out: string; page?: number }) => {
      // Loaded here: `--help` and the other commands need none of it (start-up cost).
      const [{ listRunDocuments, readDocument }, { namedRunOrExit, loadingAttemptOfNamed }] = await Promise.all([
        import('../warehouse/documents.ts'),
        import('./named-run.ts'),
      ]);
      await withStores(async ({ pool }) => {
        const named = await namedRunOrExit(cli, pool, id, opts.job);
        if (named === undefined) return;
        const attemptId = await loadingAttemptOfNamed(pool, named);
        const what = named.kind === 'attempt' ? `attempt ${attemptId}` : `run ${named.run.run_key}`;
        const docs = (attemptId ? await listRunDocuments(pool, attemptId) : []).filter(
          (d) => opts.page === undefined || d.page === opts.page,
        );
        if (docs.length === 0)
          return fail(
            cli,
            `${what} archived no documents${opts.page === undefined ? '' : ` on page ${opts.page}`} (only pdf, ` +
              'excel and word runs do, when they succeed; see "report-etl runs")',
            1,
          );
        const dir = await outDirOrExit(cli, 'documents', opts.out);
        if (dir === undefined) return;
        for (const doc of docs) {
          // The name comes from the target table: keep it a plain file name inside DIR whatever it holds.
          const file = join(dir, basename(doc.fileName).replace(/^\.+/, '_') || `page_${doc.page}`);
          if (!(await writeFileOrReport(cli, file, Readable.from(readDocument(pool, doc)), doc.page))) continue;
          cli.out(`${file}  ${doc.bytes} bytes  sha256 ${doc.sha256}`);
        }
      });
    });
};
