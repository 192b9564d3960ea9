-- Webhook endpoints and their deliveries (§19). The secret is kept to sign:
-- it is the endpoint's, not a user's identity, and is never shown again
-- after the answer that created or rotated it. previous_secret keeps
-- signing beside it until previous_secret_until.
CREATE TABLE webhook_endpoints (
    environment_id        text NOT NULL REFERENCES environments (id),
    id                    text NOT NULL,
    url                   text NOT NULL,
    events                jsonb NOT NULL,
    description           text,
    status                text NOT NULL,
    secret                text NOT NULL,
    previous_secret       text,
    previous_secret_until timestamptz,
    created_at            timestamptz NOT NULL,
    updated_at            timestamptz NOT NULL,
    PRIMARY KEY (environment_id, id)
);

-- The outbox: one delivery per announced plan event and matching enabled
-- endpoint, written by the trigger below in the transaction of the event,
-- whatever statement inserts it. next_attempt_at is null once the delivery
-- is no longer pending; lease_until and claim are the claim of a dispatcher. body is
-- the message as first sent, so that every attempt sends the same.
CREATE TABLE webhook_deliveries (
    environment_id   text NOT NULL,
    id               text NOT NULL,
    endpoint_id      text NOT NULL,
    event_id         text NOT NULL,
    plan_id          text NOT NULL,
    event_type       text NOT NULL,
    status           text NOT NULL,
    attempts         integer NOT NULL,
    last_attempt_at  timestamptz,
    last_status_code integer,
    last_error       text,
    next_attempt_at  timestamptz,
    lease_until      timestamptz,
    claim            text,
    body             text,
    created_at       timestamptz NOT NULL,
    PRIMARY KEY (environment_id, id)
);
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (environment_id, endpoint_id, id);
CREATE INDEX webhook_deliveries_plan ON webhook_deliveries (environment_id, plan_id);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';

-- The webhook type of a plan event (plans.WebhookType); null for one that
-- is not announced (apply_started).
CREATE FUNCTION webhook_type(event_type text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE event_type
        WHEN 'plan_created' THEN 'plan.created'
        WHEN 'plan_approved' THEN 'plan.approved'
        WHEN 'plan_rejected' THEN 'plan.rejected'
        WHEN 'apply_succeeded' THEN 'plan.applied'
        WHEN 'apply_rejected' THEN 'plan.apply_rejected'
        WHEN 'apply_conflicted' THEN 'plan.conflicted'
        WHEN 'federation_failed' THEN 'plan.federation_failed'
        WHEN 'plan_expired' THEN 'plan.expired'
        WHEN 'plan_rebased' THEN 'plan.rebased'
    END
$$;

-- A delivery's id is msg_ and a ULID: the event's time, then 64 random
-- bits (hexadecimal digits are Crockford base32 digits).
CREATE FUNCTION plan_events_outbox() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    typ text := webhook_type(NEW.type);
BEGIN
    IF typ IS NULL THEN
        RETURN NULL;
    END IF;
    INSERT INTO webhook_deliveries (environment_id, id, endpoint_id, event_id, plan_id, event_type, status, attempts,
                                    next_attempt_at, created_at)
    SELECT NEW.environment_id, 'msg_' || substr(NEW.id, 5, 10) || substr(replace(gen_random_uuid()::text, '-', ''), 1, 16),
           e.id, NEW.id, NEW.plan_id, typ, 'pending', 0, NEW.created_at, NEW.created_at
    FROM webhook_endpoints e
    WHERE e.environment_id = NEW.environment_id AND e.status = 'enabled'
      AND (e.events @> '["*"]'::jsonb OR e.events @> jsonb_build_array(typ));
    RETURN NULL;
END
$$;

CREATE TRIGGER plan_events_outbox AFTER INSERT ON plan_events
    FOR EACH ROW EXECUTE FUNCTION plan_events_outbox();
