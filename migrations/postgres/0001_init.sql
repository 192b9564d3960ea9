-- Every table but environments carries environment_id and leads its primary
-- key and indexes with it, so the schema can be sharded by environment.

CREATE TABLE environments (
    id          text PRIMARY KEY,
    name        text NOT NULL,
    -- bumped by every apply: the row an apply locks to serialise the
    -- applies of one environment.
    generation  bigint NOT NULL DEFAULT 0,
    created_at  timestamptz NOT NULL
);

CREATE TABLE api_keys (
    environment_id text NOT NULL REFERENCES environments (id),
    id             text NOT NULL,
    secret_hash    bytea NOT NULL,
    permissions    jsonb NOT NULL,
    created_at     timestamptz NOT NULL,
    revoked_at     timestamptz,
    PRIMARY KEY (environment_id, id)
);

CREATE TABLE resources (
    environment_id text NOT NULL REFERENCES environments (id),
    kind           text NOT NULL,
    key            text NOT NULL,
    resource_id    text NOT NULL DEFAULT '',
    version        integer NOT NULL,
    spec           jsonb NOT NULL,
    created_at     timestamptz NOT NULL,
    updated_at     timestamptz NOT NULL,
    PRIMARY KEY (environment_id, kind, key)
);

-- One row per (environment, kind): a generation bumped by every write to a
-- resource of that kind. It is the fingerprint of the whole type's content:
-- it changes whenever the content does, and costs one row to read.
CREATE TABLE type_states (
    environment_id text NOT NULL REFERENCES environments (id),
    kind           text NOT NULL,
    generation     bigint NOT NULL,
    PRIMARY KEY (environment_id, kind)
);

CREATE TABLE config_plans (
    environment_id    text NOT NULL REFERENCES environments (id),
    id                text NOT NULL,
    status            text NOT NULL,
    prune             boolean NOT NULL,
    types             jsonb NOT NULL,
    referencing_types jsonb NOT NULL,
    changes           jsonb NOT NULL,
    warnings          jsonb NOT NULL,
    required_secrets  jsonb NOT NULL,
    requires_sp_host  boolean NOT NULL,
    summary           jsonb NOT NULL,
    versions          jsonb NOT NULL,
    fingerprints      jsonb NOT NULL,
    created_at        timestamptz NOT NULL,
    expires_at        timestamptz NOT NULL,
    applied_at        timestamptz,
    revision_id       text,
    created_by        text NOT NULL,
    lease_token       text NOT NULL DEFAULT '',
    lease_until       timestamptz,
    applied_by        text,
    idempotency_fingerprint text,
    PRIMARY KEY (environment_id, id)
);
CREATE INDEX config_plans_status ON config_plans (environment_id, status, id);

CREATE TABLE plan_events (
    environment_id text NOT NULL REFERENCES environments (id),
    plan_id        text NOT NULL,
    id             text NOT NULL,
    type           text NOT NULL,
    created_at     timestamptz NOT NULL,
    api_key_id     text NOT NULL,
    request_id     text NOT NULL,
    data           jsonb NOT NULL,
    PRIMARY KEY (environment_id, plan_id, id)
);

CREATE TABLE config_revisions (
    environment_id text NOT NULL REFERENCES environments (id),
    id             text NOT NULL,
    plan_id        text NOT NULL,
    types          jsonb NOT NULL,
    counts         jsonb NOT NULL,
    resources      jsonb NOT NULL,
    created_at     timestamptz NOT NULL,
    expires_at     timestamptz NOT NULL,
    PRIMARY KEY (environment_id, id)
);
CREATE INDEX config_revisions_expiry ON config_revisions (environment_id, expires_at);

CREATE TABLE management_logs (
    environment_id text NOT NULL REFERENCES environments (id),
    id             text NOT NULL,
    type           text NOT NULL,
    created_at     timestamptz NOT NULL,
    api_key_id     text NOT NULL,
    request_id     text NOT NULL,
    plan_id        text,
    revision_id    text,
    data           jsonb NOT NULL,
    PRIMARY KEY (environment_id, id)
);
CREATE INDEX management_logs_type ON management_logs (environment_id, type, id);

CREATE TABLE token_activity (
    environment_id  text NOT NULL REFERENCES environments (id),
    application_key text NOT NULL,
    last_issued_at  timestamptz NOT NULL,
    PRIMARY KEY (environment_id, application_key)
);

CREATE TABLE environment_policies (
    environment_id text NOT NULL REFERENCES environments (id),
    policies       jsonb NOT NULL,
    updated_at     timestamptz NOT NULL,
    PRIMARY KEY (environment_id)
);

-- The OIDC material the federation service confirmed it holds, per
-- connection, by a hash of the material (never the secret).
CREATE TABLE connection_materials (
    environment_id text NOT NULL REFERENCES environments (id),
    connection_id  text NOT NULL,
    material_hash  text NOT NULL,
    confirmed_at   timestamptz NOT NULL,
    PRIMARY KEY (environment_id, connection_id)
);

-- The latest connection test, against a hash of the material tested.
CREATE TABLE connection_tests (
    environment_id text NOT NULL REFERENCES environments (id),
    connection_id  text NOT NULL,
    material_hash  text NOT NULL,
    status         text NOT NULL,
    reason         text,
    tested_at      timestamptz NOT NULL,
    PRIMARY KEY (environment_id, connection_id)
);
