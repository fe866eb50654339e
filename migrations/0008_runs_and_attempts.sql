-- The run history in the project's words: a run is the logical run (one tick, one manual request: its run key), an
-- attempt is one try of it. Until now etl.runs held one row per attempt under `run_id`. From here on:
--   etl.attempts  one row per try: the former etl.runs, `run_id` renamed `attempt_id`;
--   etl.runs      one row per logical run: what was asked for (the former etl.run_requests, which it absorbs) and
--                 how the run stands (its newest attempt's status, attempt count, first start, last finish, rows).
-- Every column that held an attempt's id is called attempt_id (failed_attempt_id in etl.job_alerts).
-- etl.runs is written by the statements that insert, complete and fail attempts (src/history/attempts.ts), in the
-- same transaction, so the two tables never disagree; below, existing history is carried over the same way.

-- 1. etl.runs becomes etl.attempts. Constraints and indexes are renamed too: the new etl.runs needs `runs_pkey`.
ALTER TABLE etl.runs RENAME TO attempts;
ALTER TABLE etl.attempts RENAME COLUMN run_id TO attempt_id;
ALTER TABLE etl.attempts RENAME CONSTRAINT runs_pkey TO attempts_pkey;
ALTER TABLE etl.attempts RENAME CONSTRAINT runs_trigger_check TO attempts_trigger_check;
ALTER TABLE etl.attempts RENAME CONSTRAINT runs_attempt_check TO attempts_attempt_check;
ALTER TABLE etl.attempts RENAME CONSTRAINT runs_status_check TO attempts_status_check;
ALTER INDEX etl.runs_job_started_idx RENAME TO attempts_job_started_idx;
ALTER INDEX etl.runs_status_started_idx RENAME TO attempts_status_started_idx;
ALTER INDEX etl.runs_run_key_idx RENAME TO attempts_run_idx;
ALTER INDEX etl.runs_job_scheduled_idx RENAME TO attempts_job_scheduled_idx;
ALTER INDEX etl.runs_running_idx RENAME TO attempts_running_idx;

-- 2. The tables that pointed at an attempt by run_id.
ALTER TABLE etl.run_errors RENAME COLUMN run_id TO attempt_id;
ALTER TABLE etl.run_errors RENAME CONSTRAINT run_errors_run_id_fkey TO run_errors_attempt_id_fkey;
ALTER INDEX etl.run_errors_run_idx RENAME TO run_errors_attempt_idx;
ALTER TABLE etl.run_documents RENAME COLUMN run_id TO attempt_id;
ALTER TABLE etl.run_documents RENAME CONSTRAINT run_documents_run_id_fkey TO run_documents_attempt_id_fkey;
-- The attempt whose transaction appended the run's rows.
ALTER TABLE etl.appended_runs RENAME COLUMN run_id TO attempt_id;
ALTER TABLE etl.job_alerts RENAME COLUMN failed_run_id TO failed_attempt_id;

-- 3. One row per logical run.
CREATE TABLE etl.runs (
  job              text        NOT NULL,
  run_key          text        NOT NULL,
  -- How the run came to be: its queued request's trigger, else its first attempt's. A replay's attempts are
  -- recorded with trigger 'replay'; the run keeps the trigger it was made with.
  trigger          text        NOT NULL CHECK (trigger IN ('manual', 'schedule', 'catchup', 'backfill', 'replay')),
  -- The logical time: the tick a scheduled, caught-up or backfilled run stands for (NULL for a manual run).
  scheduled_for    timestamptz,
  -- The interval a queued run covers (`%{logicalStart}`, `%{logicalEnd}` in report parameters); logical_end is the
  -- tick, or when a manual run was asked for. NULL for a foreground `report-etl run`.
  logical_start    timestamptz,
  logical_end      timestamptz,
  -- Explicit report parameters of a queued manual run (name to value); NULL when jobs.yaml's alone were used.
  parameters       jsonb,
  -- BullMQ job id of the request that first carried the run; NULL for a foreground `report-etl run`.
  queue_job_id     text,
  -- When this row was made: a worker took the run's queue job, or the run's first attempt started.
  created_at       timestamptz NOT NULL DEFAULT now(),
  -- Attempts made so far: the number of the newest one (0 while the first waits for a report slot).
  attempts         integer     NOT NULL DEFAULT 0 CHECK (attempts >= 0),
  -- The status of the newest attempt; NULL before the first attempt is recorded.
  status           text        CHECK (status IN ('running', 'succeeded', 'failed', 'interrupted')),
  first_started_at timestamptz,
  -- When an attempt of the run last finished (any status).
  last_finished_at timestamptz,
  -- Rows the run loaded: those of its first succeeded attempt; NULL until one succeeds.
  rows             bigint,
  PRIMARY KEY (job, run_key)
);
CREATE INDEX runs_job_created_idx ON etl.runs (job, created_at DESC);
CREATE INDEX runs_status_created_idx ON etl.runs (status, created_at DESC);
-- `report-etl replay <run key>` and the like name a run by its key alone.
CREATE INDEX runs_run_key_idx ON etl.runs (run_key);

-- 4. Carry the history over: one row per run key that has attempts or a request.
INSERT INTO etl.runs (job, run_key, trigger, scheduled_for, logical_start, logical_end, parameters, queue_job_id, created_at,
                      attempts, status, first_started_at, last_finished_at, rows)
SELECT k.job, k.run_key, coalesce(q.trigger, first_attempt.trigger), coalesce(q.scheduled_for, first_attempt.scheduled_for),
       q.logical_start, q.logical_end, q.parameters, q.queue_job_id, coalesce(q.created_at, figures.first_started_at),
       coalesce(figures.attempts, 0), newest.status, figures.first_started_at, figures.last_finished_at, success.rows
  FROM (SELECT job, run_key FROM etl.attempts UNION SELECT job, run_key FROM etl.run_requests) k
  LEFT JOIN etl.run_requests q ON q.job = k.job AND q.run_key = k.run_key
  LEFT JOIN LATERAL (
    SELECT max(a.attempt) AS attempts, min(a.started_at) AS first_started_at, max(a.finished_at) AS last_finished_at
      FROM etl.attempts a WHERE a.job = k.job AND a.run_key = k.run_key) figures ON true
  LEFT JOIN LATERAL (
    SELECT a.trigger, a.scheduled_for FROM etl.attempts a WHERE a.job = k.job AND a.run_key = k.run_key
     ORDER BY a.attempt, a.started_at LIMIT 1) first_attempt ON true
  LEFT JOIN LATERAL (
    SELECT a.status FROM etl.attempts a WHERE a.job = k.job AND a.run_key = k.run_key
     ORDER BY a.attempt DESC, a.started_at DESC LIMIT 1) newest ON true
  LEFT JOIN LATERAL (
    SELECT a.rows FROM etl.attempts a WHERE a.job = k.job AND a.run_key = k.run_key AND a.status = 'succeeded'
     ORDER BY a.attempt, a.started_at LIMIT 1) success ON true;

DROP TABLE etl.run_requests;

-- 5. Every attempt belongs to a run; pruning a run takes its attempts (and their errors and documents) with it.
ALTER TABLE etl.attempts ADD CONSTRAINT attempts_run_fkey FOREIGN KEY (job, run_key) REFERENCES etl.runs (job, run_key) ON DELETE CASCADE;

COMMENT ON TABLE etl.runs IS 'One row per logical run (job, run key): what was asked for and how it stands. Columns are a contract.';
COMMENT ON TABLE etl.attempts IS 'One row per attempt (try) of a run, attempt_id its id. Columns are a contract.';
COMMENT ON TABLE etl.run_errors IS 'The errors of each attempt (attempt_id): stage, error kind, the server''s own words. Columns are a contract.';
