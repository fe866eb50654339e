-- Lineage of appended rows and reverts of appended runs (docs/loaded-tables.md "Lineage of appended rows",
-- docs/observability.md "Run history").

-- The run key of the append load in progress, NULL outside one: the DEFAULT of an append target's `_etl_run_key`
-- column (src/warehouse/lineage.ts). The load transaction sets `report_etl.run_key` for itself (set_config(…, true));
-- a setting spent that way reads back as '' in the session afterwards, hence nullif.
-- IMMUTABLE on purpose, although it reads a setting: the planner then evaluates it once, when it plans the statement
-- that writes the rows (COPY FROM, INSERT … SELECT; inside the load transaction, after the setting is set), instead of
-- once per row (a STABLE expression such as current_setting() costs COPY a function call for every row it writes).
-- Nothing may cache such a plan across transactions of one session that sets the setting (report-etl
-- prepares no statement that writes a target); any other session never sets it, so it gets NULL, as it should.
CREATE FUNCTION etl.load_run_key() RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT nullif(current_setting('report_etl.run_key', true), '') $$;

-- Every row an append run loads carries its run key in the target's `_etl_run_key` column, so `report-etl revert
-- <run>` can remove exactly that run's rows. In the same transaction it deletes the run's claim in etl.appended_runs
-- (so that a replay appends the run again) and records the revert here: one row per revert, kept like
-- etl.appended_runs (retention never deletes them), the record of rows that were deleted on purpose.
CREATE TABLE etl.reverts (
  revert_id     bigserial   PRIMARY KEY,
  job           text        NOT NULL,
  run_key       text        NOT NULL,
  -- The attempt whose transaction had appended the rows (etl.appended_runs.attempt_id), and when it committed.
  attempt_id    uuid        NOT NULL,
  appended_at   timestamptz NOT NULL,
  -- The run's attempt count when it was reverted: its attempts up to this number no longer count as its success,
  -- so a replay may run it again; an attempt numbered above it that succeeds appended the run anew.
  after_attempt integer     NOT NULL CHECK (after_attempt >= 0),
  target_table  text        NOT NULL,
  -- Rows the append had loaded (etl.appended_runs.rows), and rows the revert deleted from the target (those with the
  -- run's key; fewer when some were deleted by other means meanwhile).
  appended_rows bigint      NOT NULL,
  rows          bigint      NOT NULL,
  reverted_at   timestamptz NOT NULL DEFAULT now(),
  -- Who reverted it: user@host of the `report-etl revert` process.
  reverted_by   text
);
CREATE INDEX reverts_run_idx ON etl.reverts (job, run_key, after_attempt DESC);
