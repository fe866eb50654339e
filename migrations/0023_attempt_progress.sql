-- How far an attempt got while it loaded (docs/observability.md "Run history"), written on a connection of its own
-- outside the load transaction as pages are read, at most about once a second, so that an attempt whose process died
-- (kill -9, OOM) still says where it stopped: "stopped at page 33 of 40, 3,200,000 rows read, nothing committed".
-- jsonb: {"page": the page being read, "pagesRead": pages read whole, "pages": the pages the server announced
-- (null when unknown), "rows": rows read so far, "at": when, ISO 8601}. NULL until the attempt reads its first page,
-- and for attempts recorded before this column. Never a committed figure: the load may still roll back.
ALTER TABLE etl.attempts ADD COLUMN progress jsonb;
