-- Kept pages (docs/operations.md "Kept pages"): with target.archive an attempt stores every page as the server sent it,
-- compressed, so that the run can be loaded again without the server (`replay --from-pages`), `--accept-guard` loads
-- exactly the pages reviewed, and `report-etl pages` hands them to the ERP vendor's support.
--
-- etl.attempt_archives: one row per attempt that keeps its pages. `complete` once its last page was stored (a
-- replay reads complete archives only); `keep_until` is when the janitor deletes the pages (keepDays), the attempt's
-- own row staying until history.keep. The announced pages= and rows= are kept so that a replay checks what it reads
-- against what the server announced.
CREATE TABLE etl.attempt_archives (
  attempt_id      uuid        PRIMARY KEY REFERENCES etl.attempts (attempt_id) ON DELETE CASCADE,
  output_type     text        NOT NULL,
  announced_pages integer     NOT NULL,
  announced_rows  bigint,
  complete        boolean     NOT NULL DEFAULT false,
  keep_until      timestamptz NOT NULL,
  created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX attempt_archives_keep_until ON etl.attempt_archives (keep_until);

-- One row per kept page: its Content-Type, size and sha256 as served (after HTTP content decoding), the codec its
-- chunks are compressed with, and what they take. bytes and sha256 are NULL until the page's last byte was stored.
CREATE TABLE etl.attempt_pages (
  attempt_id   uuid    NOT NULL REFERENCES etl.attempt_archives (attempt_id) ON DELETE CASCADE,
  page         integer NOT NULL CHECK (page >= 1),
  content_type text    NOT NULL,
  codec        text    NOT NULL CHECK (codec IN ('gzip')),
  bytes        bigint,
  stored_bytes bigint,
  sha256       text,
  PRIMARY KEY (attempt_id, page)
);

-- A page in chunks of up to 1 MiB of its bytes, each compressed on its own (a gzip member), so that neither storing nor
-- reading holds a page whole. A chunk table rather than large objects: plain rows go with their page by the cascade
-- (large objects need lo_unlink, or they stay behind), need no privileges beyond the etl tables', and pg streams no
-- large object without a helper package. EXTERNAL: the data is compressed already, TOAST need not try again.
CREATE TABLE etl.attempt_page_chunks (
  attempt_id uuid    NOT NULL,
  page       integer NOT NULL,
  chunk      integer NOT NULL CHECK (chunk >= 0),
  data       bytea   NOT NULL,
  PRIMARY KEY (attempt_id, page, chunk),
  FOREIGN KEY (attempt_id, page) REFERENCES etl.attempt_pages (attempt_id, page) ON DELETE CASCADE
);
ALTER TABLE etl.attempt_page_chunks ALTER COLUMN data SET STORAGE EXTERNAL;

-- Where an attempt's rows came from: NULL from the server, else the attempt whose kept pages it loaded.
ALTER TABLE etl.attempts ADD COLUMN pages_from uuid;
