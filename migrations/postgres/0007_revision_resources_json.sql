-- A revision's resources are read back byte for byte as they were written
-- (json, not jsonb, which reorders members and adds spacing): the specs are
-- stored canonical, so reading a revision needs no re-encoding of each one.
-- Rows converted here come back in jsonb's form, and revisions.Get makes
-- each of their specs canonical again when it reads them.
ALTER TABLE config_revisions ALTER COLUMN resources TYPE json USING resources::json;
