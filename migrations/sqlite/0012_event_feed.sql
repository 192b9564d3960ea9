-- The environment's feed of plan events (§19), in (xact_id, seq) order as
-- on PostgreSQL. SQLite has one writer, whose transactions commit in the
-- order they write: xact_id stays 0 and seq is the row's rowid, given by a
-- trigger (a column added to a table cannot be an alias of the rowid).
ALTER TABLE plan_events ADD COLUMN seq INTEGER NOT NULL DEFAULT 0;
ALTER TABLE plan_events ADD COLUMN xact_id INTEGER NOT NULL DEFAULT 0;
UPDATE plan_events SET seq = rowid;
CREATE TRIGGER plan_events_seq AFTER INSERT ON plan_events BEGIN
    UPDATE plan_events SET seq = NEW.rowid WHERE rowid = NEW.rowid;
END;
CREATE INDEX plan_events_feed ON plan_events (environment_id, xact_id, seq);
