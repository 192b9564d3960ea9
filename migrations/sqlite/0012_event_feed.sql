-- The environment's feed of plan events (§19), in commit order. SQLite
-- has one writer, whose transactions commit in the order they write: seq
-- is the row's rowid, given by a trigger (a column added to a table
-- cannot alias the rowid).
ALTER TABLE plan_events ADD COLUMN seq INTEGER;
UPDATE plan_events SET seq = rowid;
CREATE TRIGGER plan_events_sequence AFTER INSERT ON plan_events BEGIN
    UPDATE plan_events SET seq = NEW.rowid WHERE rowid = NEW.rowid;
END;
CREATE INDEX plan_events_feed ON plan_events (environment_id, seq);
