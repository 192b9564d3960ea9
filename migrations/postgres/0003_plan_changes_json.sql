-- A plan's changes are read back byte for byte as they were written (json,
-- not jsonb, which reorders keys): loading a plan then needs no
-- re-canonicalisation of every spec, and a plan reads the same from GET as
-- from the request that created it.
ALTER TABLE config_plans ALTER COLUMN changes TYPE json USING changes::json;
