-- What retention deleted from etl.attempts, summed per (job, status), so that the counters /metrics derives from the
-- run history (attempts, rows, bytes, the duration histogram) keep growing when history.keep prunes old attempts:
-- before, every prune made them drop, which Prometheus reads as a counter reset (rate() then counted everything
-- again). The pruning statement adds to these rows in the same transaction as it deletes (src/history/retention.ts).
CREATE TABLE etl.pruned_attempts (
  job       text    NOT NULL,
  status    text    NOT NULL,
  attempts  bigint  NOT NULL,
  -- Attempts with a duration, and the sum of their durations.
  timed     bigint  NOT NULL,
  sum_ms    numeric NOT NULL,
  -- Rows and page bytes of succeeded attempts (0 for the other statuses).
  rows      numeric NOT NULL,
  bytes     numeric NOT NULL,
  -- Cumulative counts of durations at or below each upper bound of bounds_ms (the duration histogram's buckets,
  -- src/history/attempt-aggregates.ts DURATION_BUCKETS_SECONDS). Counts kept under other bounds are not added.
  bounds_ms bigint[] NOT NULL,
  buckets   bigint[] NOT NULL,
  PRIMARY KEY (job, status)
);
