/**
 * When a failed run is superseded (docs/operations.md "Replaying failed runs"; the overview, run pages, `replay
 * --failed`): it wrote with replace or merge, and a later run (by logical time) of its job succeeded into its target,
 * replacing what the failed run would have: the whole target (or the mandant's rows), or with target.replaceRange the
 * same period. A success that replaced another period (a later night's window) leaves the failed run's period as it
 * was, so it supersedes nothing; each attempt keeps its rendered period in `etl.attempts.request -> 'replaceRange'`.
 */

/** Write modes whose target holds the latest state. */
export const STATE_WRITE_MODES: readonly string[] = ['replace', 'merge'];

/** SQL: the logical time of etl.runs row `r`; a foreground run's is its first start. */
export function logicalTimeSql(r: string): string {
  return `coalesce(${r}.logical_end, ${r}.scheduled_for, ${r}.first_started_at)`;
}

/**
 * SQL: the run key of the newest run that supersedes the failed run `f`, or NULL.
 * @param f a row with the run's `job` and `run_key` and its newest attempt's `write_mode`, `target_table` and
 *   `request` (etl.attempts.request)
 * @param logicalTime the failed run's logical time ({@link logicalTimeSql})
 */
export function supersededBySql(f: string, logicalTime: string): string {
  const modes = STATE_WRITE_MODES.map((m) => `'${m}'`).join(', ');
  return `(SELECT s.run_key FROM etl.runs s
     WHERE ${f}.write_mode IN (${modes}) AND s.job = ${f}.job AND s.run_key <> ${f}.run_key
       AND ${logicalTimeSql('s')} > ${logicalTime}
       AND EXISTS (SELECT 1 FROM etl.attempts x WHERE x.job = s.job AND x.run_key = s.run_key
                      AND x.status = 'succeeded' AND x.target_table = ${f}.target_table
                      AND (x.request -> 'replaceRange' IS NULL
                           OR x.request -> 'replaceRange' = ${f}.request -> 'replaceRange'))
     ORDER BY ${logicalTimeSql('s')} DESC LIMIT 1)`;
}
