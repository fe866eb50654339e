/**
 * When a failed run is superseded, decided in one place for the jobs overview, the run pages and `replay --failed`
 * (README "Replaying failed runs"): its newest attempt wrote in write mode `replace` or `merge`, and another logical
 * run of the same job succeeded into the same target table with a later logical time. Such a target already holds
 * newer data, and a replay would overwrite it (replace) or its keys (merge) with older rows. Logical time, not the
 * clock, decides: a backfill of an older tick that succeeds today does not supersede a newer failed tick. `append`
 * runs are never superseded: every logical run appends its own rows, which no later run brings.
 */

/** Write modes whose target holds the latest state, so that an older logical run's rows would overwrite newer ones. */
export const STATE_WRITE_MODES: readonly string[] = ['replace', 'merge'];

/**
 * SQL: the logical time of run `r` (an etl.runs alias): its `logical_end` (the tick, or when a manual run was asked
 * for), else its `scheduled_for`, else when its first attempt started (a foreground `report-etl run`, which records
 * no request).
 */
export function logicalTimeSql(r: string): string {
  return `coalesce(${r}.logical_end, ${r}.scheduled_for, ${r}.first_started_at)`;
}

/** SQL expressions naming a failed run: its job and run key, its newest attempt's write mode and target, its logical time. */
export interface FailedRunSql {
  job: string;
  runKey: string;
  writeMode: string;
  targetTable: string;
  logicalTime: string;
}

/** SQL: the run key of the newest logical run that supersedes the failed run `f` (see the file comment), or NULL. */
export function supersededBySql(f: FailedRunSql): string {
  const modes = STATE_WRITE_MODES.map((m) => `'${m}'`).join(', ');
  return `(SELECT s.run_key FROM etl.runs s
     WHERE ${f.writeMode} IN (${modes}) AND s.job = ${f.job} AND s.run_key <> ${f.runKey} AND ${logicalTimeSql('s')} > ${f.logicalTime}
       AND EXISTS (SELECT 1 FROM etl.attempts x WHERE x.job = s.job AND x.run_key = s.run_key AND x.status = 'succeeded' AND x.target_table = ${f.targetTable})
     ORDER BY ${logicalTimeSql('s')} DESC LIMIT 1)`;
}
