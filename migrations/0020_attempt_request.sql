-- What each attempt asked the server for: the report request as sent (mandant, report name, output type, paging and
-- the parameters after their %{...} templates were rendered) and the logical interval it stood for, so that the run
-- and attempt pages, `runs --attempts` and the failure alert can show it (docs/observability.md "Run history").
-- jsonb: {"logicalStart", "logicalEnd", "tick", "report": {"mandant", "name", "outputType", "paging",
-- "parameters": [[name, value], ...] in the order sent}}; "report" is missing when the attempt failed before its
-- parameters were rendered. Never a secret:
-- tokens and credentials are not part of the request, and a parameter value holding the connection's secret is
-- written "[redacted]". NULL for attempts recorded before this column.
ALTER TABLE etl.attempts ADD COLUMN request jsonb;
