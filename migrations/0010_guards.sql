-- Guards of a target (docs/loaded-tables.md "Guards and schema changes"). An attempt run with `replay --accept-guard`
-- that loaded past a guard which would have tripped keeps the guard's words here, so that the history says the load was
-- accepted by hand and what it was warned about. NULL for every other attempt.
ALTER TABLE etl.attempts ADD COLUMN accepted_guard text;
