-- Report jobs left open on the server (docs/operations.md "No orphans (the janitor)"): `report_job_open` is true from
-- the moment an attempt records its report job's id until its DELETE succeeded (or the server no longer knew the
-- job). A process killed between its COMMIT and the DELETE, or a DELETE that failed (the server down at that moment),
-- leaves it true: the janitor deletes such a job once the attempt has ended a while ago. Attempts before this
-- migration count as closed.
ALTER TABLE etl.attempts ADD COLUMN report_job_open boolean NOT NULL DEFAULT false;
CREATE INDEX attempts_report_job_open_idx ON etl.attempts (finished_at) WHERE report_job_open;
