-- `runs --job <job>` (and `runs --attempts`, the run key lookups) take in the runs of the job's mandants, `<job>[…]`
-- (docs/loaded-tables.md "Many mandants"): `job = $1 OR job LIKE <$1, its _ % \ escaped> || '[%'`, where it was
-- `left(job, length($1) + 1) = $1 || '['`, which no index serves (a scan of every run).
-- text_pattern_ops, not the indexes on job already there: those follow the database's collation, and a btree of any
-- collation but "C" cannot serve LIKE (en_US.UTF-8 orders by letters before punctuation, and PostgreSQL does not take
-- even C.UTF-8 for "C" before 17), so the planner cannot turn the pattern's fixed prefix into a range of them. An
-- index of text_pattern_ops compares bytes: `job LIKE 'sales[%'` becomes the range `job ~>=~ 'sales[' AND
-- job ~<~ 'sales\'`, and `job = $1` is served by the same index (a BitmapOr of the two). A range condition in the
-- query on `job COLLATE "C"` would have needed an index of that collation all the same.
-- Built under the migration's lock (not CONCURRENTLY: migrations run in a transaction): about 30 ms per 100,000 runs.
CREATE INDEX runs_job_pattern_idx ON etl.runs (job text_pattern_ops);
CREATE INDEX attempts_job_pattern_idx ON etl.attempts (job text_pattern_ops);
