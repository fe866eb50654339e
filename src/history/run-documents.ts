/** etl.run_documents: the documents an attempt archived; their content is in the target (warehouse/documents.ts). */
import type { Queryable } from '../db.ts';

/** One archived document; `sha256` of the content in hex. */
export interface RunDocument {
  page: number;
  /** schema.table */
  targetTable: string;
  fileName: string;
  contentType: string;
  bytes: number;
  sha256: string;
}

/** Records the documents of an attempt, inside the loading transaction. */
export async function insertRunDocuments(
  db: Queryable,
  attemptId: string,
  targetTable: string,
  docs: readonly Omit<RunDocument, 'targetTable'>[],
): Promise<void> {
  if (docs.length === 0) return;
  await db.query(
    `INSERT INTO etl.run_documents (attempt_id, page, target_table, file_name, content_type, bytes, sha256)
     SELECT $1, d.page, $2, d.file_name, d.content_type, d.bytes, d.sha256
     FROM unnest($3::int[], $4::text[], $5::text[], $6::bigint[], $7::text[])
          AS d(page, file_name, content_type, bytes, sha256)`,
    [
      attemptId,
      targetTable,
      docs.map((d) => d.page),
      docs.map((d) => d.fileName),
      docs.map((d) => d.contentType),
      docs.map((d) => d.bytes),
      docs.map((d) => d.sha256),
    ],
  );
}

/** The documents an attempt archived, by page. */
export async function listRunDocuments(db: Queryable, attemptId: string): Promise<RunDocument[]> {
  const { rows } = await db.query<{
    page: number;
    target_table: string;
    file_name: string;
    content_type: string;
    bytes: string;
    sha256: string;
  }>(
    `SELECT page, target_table, file_name, content_type, bytes, sha256
       FROM etl.run_documents WHERE attempt_id = $1 ORDER BY page`,
    [attemptId],
  );
  return rows.map((r) => ({
    page: r.page,
    targetTable: r.target_table,
    fileName: r.file_name,
    contentType: r.content_type,
    bytes: Number(r.bytes),
    sha256: r.sha256,
  }));
}
