-- The embedded (SQLite) twin of postgres/0001_init.sql for `keenauthd dev`:
-- the same tables, columns, keys and indexes. jsonb is TEXT holding the
-- JSON; timestamptz is DATETIME, which the driver writes as
-- "2006-01-02 15:04:05.999999999-07:00" text and reads back as a time (the
-- service writes only UTC times, so text order is time order); bytea is BLOB.

-- Every table but environments carries environment_id and leads its primary
-- key and indexes with it, so the schema can be sharded by environment.

CREATE TABLE environments (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    -- bumped by every apply: the row an apply locks to serialise the
    -- applies of one environment.
    generation  INTEGER NOT NULL DEFAULT 0,
    created_at  DATETIME NOT NULL
);

CREATE TABLE api_keys (
    environment_id TEXT NOT NULL REFERENCES environments (id),
    id             TEXT NOT NULL,
    secret_hash    BLOB NOT NULL,
    permissions    TEXT NOT NULL,
    created_at     DATETIME NOT NULL,
    revoked_at     DATETIME,
    PRIMARY KEY (environment_id, id)
);

CREATE TABLE resources (
    environment_id TEXT NOT NULL REFERENCES environments (id),
    kind           TEXT NOT NULL,
    key            TEXT NOT NULL,
    resource_id    TEXT NOT NULL DEFAULT '',
    version        INTEGER NOT NULL,
    spec           TEXT NOT NULL,
    created_at     DATETIME NOT NULL,
    updated_at     DATETIME NOT NULL,
    PRIMARY KEY (environment_id, kind, key)
);

-- One row per (environment, kind): a generation bumped by every write to a
-- resource of that kind. It is the fingerprint of the whole type's content:
-- it changes whenever the content does, and costs one row to read.
CREATE TABLE type_states (
    environment_id TEXT NOT NULL REFERENCES environments (id),
    kind           TEXT NOT NULL,
    generation     INTEGER NOT NULL,
    PRIMARY KEY (environment_id, kind)
);

CREATE TABLE config_plans (
    environment_id    TEXT NOT NULL REFERENCES environments (id),
    id                TEXT NOT NULL,
    status            TEXT NOT NULL,
    prune             BOOLEAN NOT NULL,
    types             TEXT NOT NULL,
    referencing_types TEXT NOT NULL,
    changes           TEXT NOT NULL,
    warnings          TEXT NOT NULL,
    required_secrets  TEXT NOT NULL,
    requires_sp_host  BOOLEAN NOT NULL,
    summary           TEXT NOT NULL,
    versions          TEXT NOT NULL,
    fingerprints      TEXT NOT NULL,
    created_at        DATETIME NOT NULL,
    expires_at        DATETIME NOT NULL,
    applied_at        DATETIME,
    revision_id       TEXT,
    created_by        TEXT NOT NULL,
    lease_token       TEXT NOT NULL DEFAULT '',
    lease_until       DATETIME,
    applied_by        TEXT,
    idempotency_fingerprint TEXT,
    PRIMARY KEY (environment_id, id)
);
CREATE INDEX config_plans_status ON config_plans (environment_id, status, id);

CREATE TABLE plan_events (
    environment_id TEXT NOT NULL REFERENCES environments (id),
    plan_id        TEXT NOT NULL,
    id             TEXT NOT NULL,
    type           TEXT NOT NULL,
    created_at     DATETIME NOT NULL,
    api_key_id     TEXT NOT NULL,
    request_id     TEXT NOT NULL,
    data           TEXT NOT NULL,
    PRIMARY KEY (environment_id, plan_id, id)
);

CREATE TABLE config_revisions (
    environment_id TEXT NOT NULL REFERENCES environments (id),
    id             TEXT NOT NULL,
    plan_id        TEXT NOT NULL,
    types          TEXT NOT NULL,
    counts         TEXT NOT NULL,
    resources      TEXT NOT NULL,
    created_at     DATETIME NOT NULL,
    expires_at     DATETIME NOT NULL,
    PRIMARY KEY (environment_id, id)
);
CREATE INDEX config_revisions_expiry ON config_revisions (environment_id, expires_at);

CREATE TABLE management_logs (
    environment_id TEXT NOT NULL REFERENCES environments (id),
    id             TEXT NOT NULL,
    type           TEXT NOT NULL,
    created_at     DATETIME NOT NULL,
    api_key_id     TEXT NOT NULL,
    request_id     TEXT NOT NULL,
    plan_id        TEXT,
    revision_id    TEXT,
    data           TEXT NOT NULL,
    PRIMARY KEY (environment_id, id)
);
CREATE INDEX management_logs_type ON management_logs (environment_id, type, id);

CREATE TABLE token_activity (
    environment_id  TEXT NOT NULL REFERENCES environments (id),
    application_key TEXT NOT NULL,
    last_issued_at  DATETIME NOT NULL,
    PRIMARY KEY (environment_id, application_key)
);

CREATE TABLE environment_policies (
    environment_id TEXT NOT NULL REFERENCES environments (id),
    policies       TEXT NOT NULL,
    updated_at     DATETIME NOT NULL,
    PRIMARY KEY (environment_id)
);

-- The OIDC material the federation service confirmed it holds, per
-- connection, by a hash of the material (never the secret).
CREATE TABLE connection_materials (
    environment_id TEXT NOT NULL REFERENCES environments (id),
    connection_id  TEXT NOT NULL,
    material_hash  TEXT NOT NULL,
    confirmed_at   DATETIME NOT NULL,
    PRIMARY KEY (environment_id, connection_id)
);

-- The latest connection test, against a hash of the material tested.
CREATE TABLE connection_tests (
    environment_id TEXT NOT NULL REFERENCES environments (id),
    connection_id  TEXT NOT NULL,
    material_hash  TEXT NOT NULL,
    status         TEXT NOT NULL,
    reason         TEXT,
    tested_at      DATETIME NOT NULL,
    PRIMARY KEY (environment_id, connection_id)
);
