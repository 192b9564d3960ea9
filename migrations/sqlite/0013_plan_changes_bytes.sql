-- The size of a plan's stored changes, in bytes, as on PostgreSQL (where
-- plan reads ask it first); SQLite reads plans whole, and computes it
-- when it is read (a column added by ALTER TABLE cannot be STORED).
ALTER TABLE config_plans ADD COLUMN changes_bytes INTEGER GENERATED ALWAYS AS (length(CAST(changes AS BLOB))) VIRTUAL;
