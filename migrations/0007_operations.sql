-- On-call grade operations (docs/architecture.md "Liveness").
--
-- The owner of an attempt: a PostgreSQL session-level advisory lock (this bigint key) held by the process that runs
-- it for as long as it lives. When the process dies (kill -9, crash, lost machine) PostgreSQL ends its session and
-- the lock is free: the janitor then knows the attempt is orphaned, deletes its report job and records it
-- interrupted. NULL for attempts recorded before this migration or by callers without an owner.
ALTER TABLE etl.runs ADD COLUMN owner_lock bigint;
CREATE INDEX runs_running_idx ON etl.runs (job, started_at) WHERE status = 'running';

-- What the alerts of a job last said, so that each event is sent once: `recovered` after a failure that was
-- alerted, `stale` once per breach of the job's freshness.
CREATE TABLE etl.job_alerts (
  job                text        PRIMARY KEY,
  -- Set by a run that failed for good, cleared by the next success (which sends `recovered`).
  failing_since      timestamptz,
  failed_run_id      uuid,
  -- The last success (or first_seen when there was none) a `stale` alert was sent for.
  stale_alerted_for  timestamptz,
  -- When the janitor first checked the job's freshness: the base of a job that never succeeded.
  first_seen         timestamptz NOT NULL DEFAULT now(),
  updated_at         timestamptz NOT NULL DEFAULT now()
);
