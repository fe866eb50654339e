/**
 * `report-etl documents <run-id> [--out DIR] [--page N]`: writes the documents a run archived (pdf, xlsx, docx;
 * README "Output types") to files named as in the target table, streaming each from PostgreSQL, and prints one
 * line per file. Exit 1 when the run archived none or a document is gone from its target (replaced by a later run).
 */
import { createWriteStream } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { EtlError } from '../errors.ts';
import { wholeNumber } from './options.ts';
import type { RegisterCommand } from './types.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const registerDocuments: RegisterCommand = (program, cli) => {
  program
    .command('documents <run-id>')
    .description("write a run's archived documents (pdf, xlsx, docx) to files")
    .option('--out <dir>', 'directory to write to (created when missing)', '.')
    .option('--page <n>', 'only this page', wholeNumber(1))
    .action(async (runId: string, opts: { out: string; page?: number }) => {
      if (!UUID.test(runId)) {
        cli.err(`error: "${runId}" is not a run id (a UUID, as "report-etl runs" shows them)`);
        cli.exit(2);
        return;
      }
      // Loaded here, not at the top: `--help` and the other commands need none of it (start-up cost).
      const [{ openStores }, { makeLogger }, { listRunDocuments, readDocument }] = await Promise.all([import('../app/bootstrap.ts'), import('../logger.ts'), import('../warehouse/documents.ts')]);
      const logger = makeLogger();
      const { pool, releasers } = await openStores(logger, { poolMax: 2 });
      try {
        const docs = (await listRunDocuments(pool, runId)).filter((d) => opts.page === undefined || d.page === opts.page);
        if (docs.length === 0) {
          cli.err(`run ${runId} archived no documents${opts.page === undefined ? '' : ` on page ${opts.page}`} (only pdf, excel and word runs do; see "report-etl runs")`);
          cli.exit(1);
          return;
        }
        const dir = resolve(opts.out);
        await mkdir(dir, { recursive: true });
        for (const doc of docs) {
          // The name comes from the target table: keep it a plain file name inside DIR whatever it holds.
          const file = join(dir, basename(doc.fileName).replace(/^\.+/, '_') || `page_${doc.page}`);
          try {
            await pipeline(Readable.from(readDocument(pool, doc)), createWriteStream(file));
          } catch (err) {
            await rm(file, { force: true });
            if (!(err instanceof EtlError)) throw err;
            cli.err(`page ${doc.page}: ${err.message}`);
            cli.exit(1);
            continue;
          }
          cli.out(`${file}  ${doc.bytes} bytes  sha256 ${doc.sha256}`);
        }
      } finally {
        await releasers.releaseAll().catch(() => undefined);
        logger.flush();
      }
    });
};
