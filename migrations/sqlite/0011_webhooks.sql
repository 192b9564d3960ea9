-- Webhook endpoints and their deliveries (§19). The secret is kept to sign:
-- it is the endpoint's, not a user's identity, and is never shown again
-- after the answer that created or rotated it. previous_secret keeps
-- signing beside it until previous_secret_until.
CREATE TABLE webhook_endpoints (
    environment_id        TEXT NOT NULL REFERENCES environments (id),
    id                    TEXT NOT NULL,
    url                   TEXT NOT NULL,
    events                TEXT NOT NULL,
    description           TEXT,
    status                TEXT NOT NULL,
    secret                TEXT NOT NULL,
    previous_secret       TEXT,
    previous_secret_until DATETIME,
    created_at            DATETIME NOT NULL,
    updated_at            DATETIME NOT NULL,
    PRIMARY KEY (environment_id, id)
);

-- The outbox: one delivery per announced plan event and matching enabled
-- endpoint, written by the trigger below in the transaction of the event,
-- whatever statement inserts it. next_attempt_at is null once the delivery
-- is no longer pending; lease_until and claim are the claim of a dispatcher. body is
-- the message as first sent, so that every attempt sends the same.
CREATE TABLE webhook_deliveries (
    environment_id   TEXT NOT NULL,
    id               TEXT NOT NULL,
    endpoint_id      TEXT NOT NULL,
    event_id         TEXT NOT NULL,
    plan_id          TEXT NOT NULL,
    event_type       TEXT NOT NULL,
    status           TEXT NOT NULL,
    attempts         INTEGER NOT NULL,
    last_attempt_at  DATETIME,
    last_status_code INTEGER,
    last_error       TEXT,
    next_attempt_at  DATETIME,
    lease_until      DATETIME,
    claim            TEXT,
    body             TEXT,
    created_at       DATETIME NOT NULL,
    PRIMARY KEY (environment_id, id)
);
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (environment_id, endpoint_id, id);
CREATE INDEX webhook_deliveries_plan ON webhook_deliveries (environment_id, plan_id);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';

-- The outbox trigger; the CASE is plans.WebhookType. A delivery's id is
-- msg_ and a ULID: the event's time, then 64 random bits (hexadecimal
-- digits are Crockford base32 digits).
CREATE TRIGGER plan_events_outbox AFTER INSERT ON plan_events
FOR EACH ROW
WHEN NEW.type IN ('plan_created', 'plan_approved', 'plan_rejected', 'apply_succeeded', 'apply_rejected',
                  'apply_conflicted', 'federation_failed', 'plan_expired', 'plan_rebased')
BEGIN
    INSERT INTO webhook_deliveries (environment_id, id, endpoint_id, event_id, plan_id, event_type, status, attempts,
                                    next_attempt_at, created_at)
    SELECT NEW.environment_id, 'msg_' || substr(NEW.id, 5, 10) || lower(hex(randomblob(8))),
           e.id, NEW.id, NEW.plan_id, t.typ, 'pending', 0, NEW.created_at, NEW.created_at
    FROM webhook_endpoints e,
         (SELECT CASE NEW.type
             WHEN 'plan_created' THEN 'plan.created'
             WHEN 'plan_approved' THEN 'plan.approved'
             WHEN 'plan_rejected' THEN 'plan.rejected'
             WHEN 'apply_succeeded' THEN 'plan.applied'
             WHEN 'apply_rejected' THEN 'plan.apply_rejected'
             WHEN 'apply_conflicted' THEN 'plan.conflicted'
             WHEN 'federation_failed' THEN 'plan.federation_failed'
             WHEN 'plan_expired' THEN 'plan.expired'
             WHEN 'plan_rebased' THEN 'plan.rebased'
          END AS typ) t
    WHERE e.environment_id = NEW.environment_id AND e.status = 'enabled'
      AND EXISTS (SELECT 1 FROM json_each(e.events) j WHERE j.value IN ('*', t.typ));
END;
