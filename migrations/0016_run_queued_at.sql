-- When a queued run was put on the queue (its BullMQ job's timestamp: the scheduler's tick, `enqueue`, `backfill`,
-- a replay), so that the run page can say how long it waited before a worker began it (for a free worker, or for
-- the job's previous run under overlap: wait). created_at is when a worker began it; NULL for runs in the
-- foreground (`report-etl run`) and for runs recorded before this column.
ALTER TABLE etl.runs ADD COLUMN queued_at timestamptz;
