/**
 * `report-etl preview`: what a job would load, before a first load — the dbt `show` / Airbyte "test
 * read" of this tool. Runs the report with a small paging, reads its first page only, and shows the target columns
 * with the types they would get and the first rows as PostgreSQL would store them. Loads nothing (the rows go into
 * a staging table of a transaction that is rolled back), records no run, and deletes the report job
 * (docs/report-export-service.md "What the service does" 3).
 */
import { requestMandant } from '../config/mandants.ts';
import type pg from 'pg';
import type { Redis } from 'ioredis';
import type { ResolvedJob } from '../config/load.ts';
import type { Logger } from '../logger.ts';
import { makeReportClient, MIN_PAGING, withReportJob } from '../report-api/index.ts';
import { outputShape } from '../vocabulary.ts';
import { parseTableName } from '../warehouse/identifiers.ts';
import { previewRows, type PreviewResult } from '../warehouse/preview.ts';
import { resolveDeclaredTypes } from '../warehouse/target-table.ts';
import { deadlinesOf } from './deadlines.ts';
import { logicalTimeOf, runParameters, runRange } from './logical-time.ts';
import { countRangeRows, type ReplaceRange } from '../warehouse/replace-range.ts';
import type { MandantScope } from '../warehouse/mandant-column.ts';
import { countTargetRows } from '../warehouse/guard.ts';
import { jobDecoder } from './job-decoder.ts';
import { reportRows, type ReportRows } from './report-rows.ts';

/** Options of {@link previewJob}. */
export interface PreviewOptions {
  job: ResolvedJob;
  /** Explicit report parameters (override jobs.yaml's, as in `run -p`). */
  parameters?: Record<string, string>;
  /** Rows to show (1..1000); the report runs with paging max(10, rows). */
  rows: number;
  pool: pg.Pool;
  redis: Redis;
  logger: Logger;
  signal?: AbortSignal;
  /**
   * The interval the preview stands for (default: the latest complete interval of the job's schedule,
   * logical-time.ts manualInterval).
   */
  interval?: { logicalStart: Date; logicalEnd: Date } | undefined;
  /** The installation's prefix: the access token is shared under it (default `report-etl`). */
  prefix?: string | undefined;
}

/**
 * What a preview found: the server's counts, the target table and {@link PreviewResult} (undefined: no rows, no
 * header).
 */
export interface JobPreview {
  /**
   * The report's rows and pages at the preview's paging (docs/report-export-service.md "Job (report session)":
   * rows=;pages=).
   */
  reportRows: number;
  reportPages: number;
  targetTable: string;
  result: PreviewResult | undefined;
  /**
   * With target.replaceRange: the run's period and the target's rows in it now, which a load would delete (undefined:
   * no target yet); of a job with many mandants, the run's mandant, whose rows in the period alone are counted.
   */
  range?: { range: ReplaceRange; deletes: number | undefined; mandant?: MandantScope | undefined } | undefined;
  /**
   * A mandant's run of a job with many mandants, mode replace without a range: the mandant and the target's rows of it
   * now, which a load would delete (undefined: no target yet; docs/loaded-tables.md "Many mandants").
   */
  mandant?: { column: string; value: number; deletes: number | undefined } | undefined;
  /**
   * Previewed from the documents a load committed (`preview --from-pages`, pipeline/preview-kept.ts): how many it
   * loaded; `reportRows` is then that number too, the server's rows= not being recorded for documents.
   */
  loadedDocuments?: number | undefined;
}

/**
 * Previews a job.
 * @throws what a run would throw at these stages (report name, token, start, poll, fetch, parse, database), as
 *   typed EtlErrors; nothing is recorded
 */
export async function previewJob(o: PreviewOptions): Promise<JobPreview> {
  const { report, target: targetConfig } = o.job.job;
  const declaredTypes = await resolveDeclaredTypes(o.pool, o.job.name, targetConfig.columns);
  const request = {
    parameters: o.parameters,
    ...(o.interval
      ? { logicalStart: o.interval.logicalStart.toISOString(), logicalEnd: o.interval.logicalEnd.toISOString() }
      : {}),
  };
  const parameters = runParameters(o.job, request, new Date());
  const range = runRange(o.job, logicalTimeOf(o.job, request, new Date()));
  const client = await makeReportClient({
    connection: o.job.connection,
    connectionName: o.job.connectionName,
    redis: o.redis,
    logger: o.logger,
    ...(o.signal ? { signal: o.signal } : {}),
    ...(o.prefix ? { keyPrefix: `${o.prefix}:` } : {}),
  });
  try {
    const paging = Math.max(MIN_PAGING, o.rows);
    return await withReportJob(
      client,
      { ...report, mandant: requestMandant(o.job.name, o.job.job), paging, parameters, job: o.job.name },
      async (finished) => {
        const shape = outputShape(report.outputType, targetConfig);
        const announced = { pages: finished.pages, rows: shape === 'rows' ? finished.rows : undefined };
        const rows = reportRows(
          client,
          finished.jobId,
          () => jobDecoder(o.job, new Date()),
          previewLogger(o.logger),
          o.signal,
          { maxPages: 1, pageTimeoutMs: deadlinesOf(o.job).pageTimeoutMs, announced },
        );
        const shown = await previewInRollback(o.pool, o.job, rows, { declaredTypes, limit: o.rows, range });
        return { reportRows: finished.rows, reportPages: finished.pages, ...shown };
      },
      { signal: o.signal, logger: o.logger },
    );
  } finally {
    await client.close().catch(() => undefined);
  }
}

/** The logger of a preview's page reader: its progress lines (`page loaded`) would say it loaded; warnings stay. */
export function previewLogger(logger: Logger): Logger {
  return logger.isLevelEnabled('info') ? logger.child({}, { level: 'warn' }) : logger;
}

/**
 * Puts the first page of `rows` through a staging table of a transaction that is rolled back, in the job's session
 * settings (DateStyle, TimeZone), as a load would: the target columns with their types, the first `limit` rows as
 * PostgreSQL stores them, and what a load would delete now (a replaceRange's period, or a mandant's rows in mode
 * replace: docs/loaded-tables.md "Many mandants"). Loads nothing; closes `rows`.
 * @throws the decoders' and the database's errors, as a load throws them
 */
export async function previewInRollback(
  pool: pg.Pool,
  job: ResolvedJob,
  rows: ReportRows,
  o: { declaredTypes: Map<string, string>; limit: number; range: ReplaceRange | undefined },
): Promise<Pick<JobPreview, 'targetTable' | 'result' | 'range' | 'mandant'>> {
  const targetConfig = job.job.target;
  const target = parseTableName(targetConfig.table);
  const { range } = o;
  const db = await pool.connect();
  try {
    await db.query('BEGIN');
    await db.query(`SELECT set_config('DateStyle', 'ISO, DMY', true), set_config('TimeZone', $1, true)`, [
      job.connection.timezone,
    ]);
    const names = { job: job.name, target, key: targetConfig.key, declaredTypes: o.declaredTypes };
    const result = await previewRows(db, { ...names, limit: o.limit, range }, rows);
    return {
      targetTable: `${target.schema}.${target.table}`,
      result,
      range: range && {
        range,
        deletes: await countRangeRows(db, target, range, job.mandant),
        ...(job.mandant ? { mandant: job.mandant } : {}),
      },
      mandant:
        job.mandant && !range && targetConfig.mode === 'replace'
          ? { ...job.mandant, deletes: await countTargetRows(db, target, job.mandant) }
          : undefined,
    };
  } finally {
    await db.query('ROLLBACK').catch(() => undefined);
    db.release();
    await rows.close();
  }
}
