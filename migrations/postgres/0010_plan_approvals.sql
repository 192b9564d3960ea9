-- The approvals of a plan (§17), one per approving key: the plan's changes
-- stay immutable, and a rebase (a new plan) has none. The owner is the
-- approving key's, kept with the approval. A rejected plan keeps its
-- rejection ({"api_key_id", "owner", "rejected_at", "comment"}).
CREATE TABLE plan_approvals (
    environment_id text NOT NULL,
    plan_id        text NOT NULL,
    api_key_id     text NOT NULL,
    owner          text,
    approved_at    timestamptz NOT NULL,
    comment        text,
    PRIMARY KEY (environment_id, plan_id, api_key_id)
);
ALTER TABLE config_plans ADD COLUMN rejection json;
