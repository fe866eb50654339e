/**
 * When a failed run is superseded (docs/operations.md "Replaying failed runs"), for the overview, the run pages and
 * `replay --failed`: it wrote with replace or merge, and a run of the same job with a later logical time succeeded into
 * the same target.
 */

/** Write modes whose target holds the latest state. */
export const STATE_WRITE_MODES: readonly string[] = ['replace', 'merge'];

/** SQL: the logical time of etl.runs row `r`; a foreground run's is its first start. */
export function logicalTimeSql(r: string): string {
  return `coalesce(${r}.logical_end, ${r}.scheduled_for, ${r}.first_started_at)`;
}

/** SQL expressions of a failed run: job, run key, its newest attempt's write mode and target, logical time. */
export type FailedRunSql = { job: string; runKey: string; writeMode: string; targetTable: string; logicalTime: string };

/** SQL: the run key of the newest run that supersedes the failed run `f`, or NULL. */
export function supersededBySql(f: FailedRunSql): string {
  const modes = STATE_WRITE_MODES.map((m) => `'${m}'`).join(', ');
  return `(SELECT s.run_key FROM etl.runs s
     WHERE ${f.writeMode} IN (${modes}) AND s.job = ${f.job} AND s.run_key <> ${f.runKey}
       AND ${logicalTimeSql('s')} > ${f.logicalTime}
       AND EXISTS (SELECT 1 FROM etl.attempts x WHERE x.job = s.job AND x.run_key = s.run_key
                      AND x.status = 'succeeded' AND x.target_table = ${f.targetTable})
     ORDER BY ${logicalTimeSql('s')} DESC LIMIT 1)`;
}
