-- Run history (docs/observability.md "Run history"): one row per attempt in etl.runs, the details of each failure in
-- etl.run_errors. Dashboards and on-call staff query these tables directly: columns are part of the contract.
CREATE SCHEMA IF NOT EXISTS etl;

CREATE TABLE etl.runs (
  run_id         uuid PRIMARY KEY,
  job            text        NOT NULL,
  -- The logical run: every attempt, retry and replay of one scheduled tick (or one manual request) shares it.
  run_key        text        NOT NULL,
  scheduled_for  timestamptz,
  trigger        text        NOT NULL CHECK (trigger IN ('manual', 'schedule', 'catchup', 'backfill', 'replay')),
  attempt        integer     NOT NULL DEFAULT 1 CHECK (attempt >= 1),
  status         text        NOT NULL CHECK (status IN ('running', 'succeeded', 'failed', 'interrupted')),
  report_job_id  text,
  target_table   text        NOT NULL,
  write_mode     text        NOT NULL,
  rows           bigint,
  pages          integer,
  bytes          bigint,
  started_at     timestamptz NOT NULL DEFAULT now(),
  finished_at    timestamptz,
  duration_ms    bigint,
  error          text,
  worker         text
);
CREATE INDEX runs_job_started_idx ON etl.runs (job, started_at DESC);
CREATE INDEX runs_status_started_idx ON etl.runs (status, started_at DESC);
CREATE INDEX runs_run_key_idx ON etl.runs (job, run_key);

CREATE TABLE etl.run_errors (
  id              bigserial PRIMARY KEY,
  run_id          uuid        NOT NULL REFERENCES etl.runs (run_id) ON DELETE CASCADE,
  occurred_at     timestamptz NOT NULL DEFAULT now(),
  stage           text        NOT NULL,
  error_kind      text        NOT NULL,
  retryable       boolean     NOT NULL,
  http_status     integer,
  -- Our own description of what went wrong, with job, page, column and value where they are known.
  message         text        NOT NULL,
  -- The server's own words, verbatim: the job message, or the SvcServletExceptionMessage header.
  server_message  text,
  -- The application/problem+json body of a refusal, verbatim.
  problem         jsonb,
  details         jsonb
);
CREATE INDEX run_errors_run_idx ON etl.run_errors (run_id);

-- Append loads are exactly-once per logical run: the loading transaction claims (job, run_key) here, so a
-- retried or replayed attempt of a run whose rows were already committed adds nothing.
CREATE TABLE etl.appended_runs (
  job          text        NOT NULL,
  run_key      text        NOT NULL,
  run_id       uuid        NOT NULL,
  target_table text        NOT NULL,
  rows         bigint      NOT NULL,
  committed_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (job, run_key)
);

-- Used only on the error path, to find the first value of a staging column that does not fit a type.
CREATE FUNCTION etl.fits_type(value text, type_name text) RETURNS boolean
LANGUAGE plpgsql STABLE AS $$
BEGIN
  IF value IS NULL THEN
    RETURN true;
  END IF;
  EXECUTE format('SELECT %L::%s', value, type_name::regtype::text);
  RETURN true;
EXCEPTION WHEN others THEN
  RETURN false;
END;
$$;
