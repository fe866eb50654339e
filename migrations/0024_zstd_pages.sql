-- Kept pages compressed with zstd (docs/operations.md "Kept pages"): new chunks are zstd level 1, which stores less
-- than gzip level 1 at about twice its speed (docs/performance.md "Kept pages"). Pages kept before stay gzip and are
-- read as they are: the codec is recorded per page.
ALTER TABLE etl.attempt_pages DROP CONSTRAINT attempt_pages_codec_check;
ALTER TABLE etl.attempt_pages ADD CONSTRAINT attempt_pages_codec_check CHECK (codec IN ('gzip', 'zstd'));
