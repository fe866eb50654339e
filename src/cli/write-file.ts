/** Writing what a command streams out of PostgreSQL (documents, kept pages) to a file of the user's directory. */
import { createWriteStream } from 'node:fs';
import { access, constants, lstat, mkdir, rm } from 'node:fs/promises';
import { resolve } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Readable } from 'node:stream';
import { coerceError, EtlError } from '../errors.ts';
import { fail, type Cli } from './types.ts';

/**
 * Streams `source` into `file`. When the source fails with an EtlError (a document gone from its target, a kept page
 * whose sha256 differs), removes the partial file, prints `page N: <why>` on stderr, sets exit 1 and gives back false;
 * a command then goes on with its next page.
 * @param o.exclusive never write over a file that exists: say so as for a failed source, and leave it as it is
 * @throws any other error, after removing the partial file
 */
export async function writeFileOrReport(
  cli: Cli,
  file: string,
  source: Readable,
  page: number,
  o: { exclusive?: boolean } = {},
): Promise<boolean> {
  try {
    await pipeline(source, createWriteStream(file, { flags: o.exclusive ? 'wx' : 'w' }));
    return true;
  } catch (err) {
    if ((err as { code?: unknown }).code === 'EEXIST') {
      source.destroy();
      fail(cli, `page ${page}: ${file} exists already: not written over`, 1);
      return false;
    }
    await rm(file, { force: true });
    if (!(err instanceof EtlError)) throw err;
    fail(cli, `page ${page}: ${err.message}`, 1);
    return false;
  }
}

/**
 * Makes the directory `out` (a command's `--out`), with its parents, for the command to write its files into.
 * @param command the command's name, for its error line
 * @returns its absolute path; undefined after printing `report-etl <command>: cannot write to --out DIR: <why>` on
 *   stderr and setting exit 2, when it cannot be made or written to (a file on its path, no right to write)
 */
export async function outDirOrExit(cli: Cli, command: string, out: string): Promise<string | undefined> {
  const dir = resolve(out);
  try {
    await mkdir(dir, { recursive: true });
    await access(dir, constants.W_OK);
    return dir;
  } catch (err) {
    fail(
      cli,
      `report-etl ${command}: cannot write to --out ${dir}: ${coerceError(err).message}: give a directory you may ` +
        'write to',
    );
    return undefined;
  }
}

/**
 * Whether none of `files` exists (a command writes them without writing over a user's files).
 * @returns false after printing `report-etl <command>: FILE exists already: …` on stderr and setting exit 2
 */
export async function noneExistOrExit(cli: Cli, command: string, files: readonly string[]): Promise<boolean> {
  for (const file of files) {
    const taken = await lstat(file).then(
      () => true,
      () => false,
    );
    if (!taken) continue;
    fail(
      cli,
      `report-etl ${command}: ${file} exists already: give --out an empty or new directory (nothing was written, ` +
        'nor written over)',
    );
    return false;
  }
  return true;
}
