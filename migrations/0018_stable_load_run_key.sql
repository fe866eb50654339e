-- etl.load_run_key() reads a setting, so it is STABLE, not IMMUTABLE as migrations/0009 declared it: the planner no
-- longer folds it into a constant when it plans a statement, which a plan kept across transactions would have kept
-- with an old run key. COPY and INSERT evaluate it for every row they write: 10-12 % more of COPY's CPU for an append
-- target (bench/append-lineage.ts).
ALTER FUNCTION etl.load_run_key() STABLE;
