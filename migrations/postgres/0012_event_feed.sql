-- The environment's feed of plan events (§19: the live stream and
-- GET /v1/config-events) in an order that a reader following it cannot
-- skip an event in: (xact_id, seq). xact_id is the writing transaction's
-- id (pg_current_xact_id(), as a bigint), seq the order of the inserts. A
-- reader only reads the events whose transaction is older than the oldest
-- transaction still running (pg_snapshot_xmin of its snapshot): those are
-- final, and every event committed later sorts after them. See
-- docs/decisions.md, "The live event stream".
ALTER TABLE plan_events ADD COLUMN seq bigserial;
ALTER TABLE plan_events ADD COLUMN xact_id bigint NOT NULL DEFAULT (pg_current_xact_id()::text::bigint);
CREATE INDEX plan_events_feed ON plan_events (environment_id, xact_id, seq);
