-- The report column each target column was made for (docs/loaded-tables.md "Column names"): a later load maps the
-- report's columns by these original names, so that two report columns whose names clash after normalising (`Amount`,
-- `amount`) always land in the same columns, in whatever order the report sends them. Written in the load transaction
-- that creates or extends the target; rows of a dropped and re-created table are replaced then.
CREATE TABLE etl.target_columns (
  target_table   text        NOT NULL,   -- schema.table
  report_column  text        NOT NULL,   -- the name as the report sends it
  column_name    text        NOT NULL,   -- the target's column
  recorded_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (target_table, report_column)
);
