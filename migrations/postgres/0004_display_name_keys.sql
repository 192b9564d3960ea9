-- Connection and role display names are unique under a folded key (Unicode
-- NFC and case folding: "Main", "MAIN" and "main" are one name), which the
-- service writes with every resource it writes (NULL for the kinds whose
-- display name need not be unique). The apply and the planner look up the
-- holders of a name on this index, as they did on the display name itself.
-- SQL cannot fold as Go does (SQLite has no NFC, and lower() is not case
-- folding), so the migrator computes the key of the rows written before
-- this migration, in Go, in the same transaction (migrations.go).
ALTER TABLE resources ADD COLUMN display_name_key text;
DROP INDEX resources_display_name;
CREATE INDEX resources_display_name_key ON resources (environment_id, kind, display_name_key);
