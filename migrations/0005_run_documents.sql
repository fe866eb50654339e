-- The documents a run archived (docs/loaded-tables.md "Output types": pdf, excel-xlsx*, word-docx): one row per page,
-- written in the transaction that loads them into the target table. The content itself lives in the target table only
-- (row found by file_name); a later replace of the target removes it there, and this list still says what the run had.
-- Read by `report-etl documents <run-id>` and the admin run page. Columns are a contract, as etl.runs'.
CREATE TABLE etl.run_documents (
  run_id        uuid    NOT NULL REFERENCES etl.runs (run_id) ON DELETE CASCADE,
  page          integer NOT NULL CHECK (page >= 1),
  target_table  text    NOT NULL,
  file_name     text    NOT NULL,
  content_type  text    NOT NULL,
  bytes         bigint  NOT NULL,
  sha256        text    NOT NULL,
  PRIMARY KEY (run_id, page)
);
