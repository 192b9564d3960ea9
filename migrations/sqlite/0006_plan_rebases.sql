-- A plan made by a rebase names the plan it was rebased from and keeps what
-- had moved since that plan was computed. Both are NULL for a plan that is
-- not a rebase.
ALTER TABLE config_plans ADD COLUMN rebased_from TEXT;
ALTER TABLE config_plans ADD COLUMN moved TEXT;
