-- Keeps a zone's rules made by a process (src/copy-binary/zone-check.ts) without ever failing or holding up the load
-- transaction it runs in: etl.zone_rules is a cache, so a process that cannot write it (another process is writing the
-- same row, a lock held on the table, no INSERT privilege) simply does not keep its row. The exception block makes the
-- insert a subtransaction, lock_timeout bounds a wait for the table's lock, and the advisory lock is only tried.
CREATE FUNCTION etl.keep_zone_rules(p_zone text, p_tzdata text, p_transitions bigint[], p_offsets integer[], p_instants float8[], p_instant_offsets integer[])
RETURNS boolean
LANGUAGE plpgsql
SET lock_timeout = '200ms'
AS $$
BEGIN
  IF NOT pg_try_advisory_xact_lock(hashtext('report-etl:zone-rules'), hashtext(p_zone || ' ' || p_tzdata)) THEN
    RETURN false;
  END IF;
  INSERT INTO etl.zone_rules (zone, tzdata, transitions, offsets, instants, instant_offsets)
    VALUES (p_zone, p_tzdata, p_transitions, p_offsets, p_instants, p_instant_offsets)
    ON CONFLICT DO NOTHING;
  RETURN true;
EXCEPTION WHEN OTHERS THEN
  RETURN false;
END
$$;
