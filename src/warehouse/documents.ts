/**
 * Reading archived documents back out of their target table (docs/loaded-tables.md "Output types": documents), for
 * `report-etl documents` and the admin run page's download links. A document is read in slices of
 * {@link SLICE_BYTES} with `substring(content …)` (the bytea is stored EXTERNAL, so a slice reads only its own
 * part), so a 200 MB document never sits whole in the reader's memory; its sha256 is checked on the way.
 */
import { createHash } from 'node:crypto';
import type { Queryable } from '../db.ts';
import { EtlError } from '../errors.ts';
import { listRunDocuments, type RunDocument } from '../history/run-documents.ts';
import { parseTableName, quoteTable } from './identifiers.ts';
import { targetExists } from './target-table.ts';

export { listRunDocuments, type RunDocument };

/** Bytes read per query. */
export const SLICE_BYTES = 4 * 1024 * 1024;

/**
 * The document of a run's page is no longer in its target table (a later replace, or a revert of its run, removed it).
 */
export class DocumentNotFoundError extends EtlError {
  constructor(doc: RunDocument) {
    super(
      'DOCUMENT_NOT_FOUND',
      `document ${doc.fileName} (page ${doc.page}) is no longer in ${doc.targetTable}: a later run replaced it, ` +
        `or report-etl revert removed its run's rows (write mode replace keeps the latest run's documents; ` +
        `use append to keep them all)`,
      { retryable: false, details: { page: doc.page, fileName: doc.fileName, table: doc.targetTable } },
    );
  }
}

/**
 * The bytes of an archived document, slice by slice.
 * @throws DocumentNotFoundError when the target no longer holds it (or the table is gone)
 * @throws EtlError INTERNAL when the bytes read do not have the recorded sha256
 */
export async function* readDocument(db: Queryable, doc: RunDocument): AsyncGenerator<Buffer> {
  const target = parseTableName(doc.targetTable);
  if (!(await targetExists(db, target))) throw new DocumentNotFoundError(doc);
  const table = quoteTable(target);
  const hash = createHash('sha256');
  let read = 0;
  for (;;) {
    const { rows } = await db.query<{ part: Buffer | null }>({
      text:
        `SELECT substring(content FROM $3::int + 1 FOR $4::int) AS part FROM ${table} WHERE ` +
        `file_name = $1 AND sha256 = $2 LIMIT 1`,
      values: [doc.fileName, doc.sha256, read, SLICE_BYTES],
    });
    if (rows.length === 0) throw new DocumentNotFoundError(doc);
    const part = rows[0]!.part ?? Buffer.alloc(0);
    if (part.length === 0) break;
    hash.update(part);
    read += part.length;
    yield part;
    if (part.length < SLICE_BYTES) break;
  }
  const sum = hash.digest('hex');
  if (read !== doc.bytes || sum !== doc.sha256) {
    throw new EtlError(
      'INTERNAL',
      `document ${doc.fileName} in ${doc.targetTable} has ${read} bytes with sha256 ${sum}, ` +
        `the run recorded ${doc.bytes} bytes with ${doc.sha256}`,
    );
  }
}
