-- The zone rules cache of migrations 0014 and 0015 goes: a process compares Intl's offsets of a zone with
-- PostgreSQL's itself again, in one query once per zone (src/copy-binary/zone-check.ts). A worker of an older release
-- that is still running reads etl.zone_rules at its first load of a zone with timestamps, and that load fails until
-- the worker is replaced.
DROP FUNCTION IF EXISTS etl.keep_zone_rules(text, text, bigint[], integer[], float8[], integer[]);
DROP TABLE IF EXISTS etl.zone_rules;
