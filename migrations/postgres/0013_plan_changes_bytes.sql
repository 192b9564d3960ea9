-- The size of a plan's stored changes, in bytes, given at insert: a read
-- of a plan asks it before it reads the changes (configdb.planColumns),
-- and computing it then (octet_length(changes::text), a conversion of the
-- json value to text) read and decompressed the whole value each time.
ALTER TABLE config_plans ADD COLUMN changes_bytes bigint GENERATED ALWAYS AS (octet_length(changes::text)) STORED;
