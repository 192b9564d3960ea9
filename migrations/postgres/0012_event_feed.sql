-- The environment's feed of plan events (§19: the live stream and
-- GET /v1/config-events), in commit order: seq is given when the writing
-- transaction commits, not when it inserts (a sequence taken at insert is
-- not commit order: a transaction that took 5 may commit after one that
-- took 6, and a reader past 6 would skip 5). A deferred constraint trigger
-- runs at COMMIT; it takes the environment's transaction-scoped advisory
-- lock, held until the commit ends, then the next value: the commits that
-- carry events of one environment end in the order of their seq, and a
-- reader that has seen seq n has seen every event of the environment
-- below n. See docs/decisions.md, "The live event stream".
CREATE SEQUENCE plan_events_seq;
ALTER TABLE plan_events ADD COLUMN seq bigint;
UPDATE plan_events e SET seq = o.n
    FROM (SELECT environment_id, plan_id, id, row_number() OVER (ORDER BY created_at, id) AS n FROM plan_events) o
    WHERE e.environment_id = o.environment_id AND e.plan_id = o.plan_id AND e.id = o.id;
SELECT setval('plan_events_seq', coalesce(max(seq), 0) + 1, false) FROM plan_events;
CREATE INDEX plan_events_feed ON plan_events (environment_id, seq);

CREATE FUNCTION plan_events_sequence() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- 7394202: the feed's lock space (7394201 is the migrations').
    PERFORM pg_advisory_xact_lock(7394202, hashtext(NEW.environment_id));
    UPDATE plan_events SET seq = nextval('plan_events_seq')
        WHERE environment_id = NEW.environment_id AND plan_id = NEW.plan_id AND id = NEW.id;
    RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER plan_events_sequence AFTER INSERT ON plan_events
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION plan_events_sequence();
