-- What a queued run was asked to do (docs/operations.md "Replaying failed runs"): the logical time and explicit
-- parameters of a logical run, so that a replay runs the same logical run (same run_key) with the same report
-- parameters. Written by the worker when the first attempt of a run starts; replays reuse the row.
CREATE TABLE etl.run_requests (
  job            text        NOT NULL,
  run_key        text        NOT NULL,
  -- BullMQ job id of the original request (e.g. sales_orders__20260122T021500Z).
  queue_job_id   text        NOT NULL,
  trigger        text        NOT NULL,
  scheduled_for  timestamptz,
  logical_start  timestamptz,
  logical_end    timestamptz,
  -- Explicit parameters of a manual run (name to value); NULL when the run used jobs.yaml's only.
  parameters     jsonb,
  created_at     timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (job, run_key)
);

-- Catch-up reads the last scheduled tick of a job.
CREATE INDEX runs_job_scheduled_idx ON etl.runs (job, scheduled_for DESC) WHERE scheduled_for IS NOT NULL;
