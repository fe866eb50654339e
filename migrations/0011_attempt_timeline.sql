-- Where an attempt's time went (docs/observability.md "Tracing", "Run history"):
--   trace_id  the W3C trace id of the attempt's spans when traces are exported (OTEL_EXPORTER_OTLP_ENDPOINT set and
--             the trace sampled), else NULL: the key to the attempt's trace in the tracing backend;
--   timeline  when each step of the attempt ran and how long it took, and each page's request, download, decoding
--             and COPY (src/history/timeline.ts), written when the attempt ends, whether or not traces are exported;
--             NULL for attempts before this migration, running ones and those the janitor closed.
ALTER TABLE etl.attempts ADD COLUMN trace_id text, ADD COLUMN timeline jsonb;
