-- A time zone's rules as Node's Intl knows them, made once per zone and tz database of Node and kept for every later
-- process (src/copy-binary/zone-rules.ts, zone-check.ts): the transitions from 1850 to 2040 that binary COPY reads
-- local times with, and the instants and offsets the zone check compares with PostgreSQL's own (each process compares
-- them again: PostgreSQL's tz database may change). Nothing here is a user's data; a row deleted is made again.
CREATE TABLE etl.zone_rules (
  zone            text     NOT NULL,
  -- Node's tz database and the table's method: 'icu 77.1, tz 2025b, rules 1'.
  tzdata          text     NOT NULL,
  -- Epoch ms of each transition, ascending; offsets (ms) has one more: before the first, then from each on.
  transitions     bigint[] NOT NULL,
  offsets         integer[] NOT NULL,
  -- Epoch seconds compared with PostgreSQL, and this table's offsets there in seconds.
  instants        float8[] NOT NULL,
  instant_offsets integer[] NOT NULL,
  made_at         timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (zone, tzdata)
);
