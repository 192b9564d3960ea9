-- A plan made by a rebase names the plan it was rebased from and keeps what
-- had moved since that plan was computed (json, as changes, so that it reads
-- back byte for byte). Both are NULL for a plan that is not a rebase.
ALTER TABLE config_plans ADD COLUMN rebased_from text;
ALTER TABLE config_plans ADD COLUMN moved json;
