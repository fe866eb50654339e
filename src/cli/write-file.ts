/** Writing what a command streams out of PostgreSQL (documents, kept pages) to a file of the user's directory. */
import { createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import type { Readable } from 'node:stream';
import { EtlError } from '../errors.ts';
import { fail, type Cli } from './types.ts';

/**
 * Streams `source` into `file`. When the source fails with an EtlError (a document gone from its target, a kept page
 * whose sha256 differs), removes the partial file, prints `page N: <why>` on stderr, sets exit 1 and gives back false;
 * a command then goes on with its next page.
 * @throws any other error, after removing the partial file
 */
export async function writeFileOrReport(cli: Cli, file: string, source: Readable, page: number): Promise<boolean> {
  try {
    await pipeline(source, createWriteStream(file));
    return true;
  } catch (err) {
    await rm(file, { force: true });
    if (!(err instanceof EtlError)) throw err;
    fail(cli, `page ${page}: ${err.message}`, 1);
    return false;
  }
}
