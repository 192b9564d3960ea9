-- A plan is listed to a key that can read every one of its types. type_set
-- is the plan's types, sorted bytewise and joined by commas ("api,role"),
-- written by the service with the plan. The list reads the few distinct
-- sets of an environment from this index (a loose index scan), keeps those
-- the key can read, and pages through each of them on the index, so that
-- the plans a key cannot see cost nothing. '' is a plan whose set was not
-- written: it is read and checked plan by plan.
ALTER TABLE config_plans ADD COLUMN type_set TEXT NOT NULL DEFAULT '';
-- json_each in a subquery ordered by value (BINARY, bytewise): group_concat
-- joins in that order.
UPDATE config_plans SET type_set = COALESCE(
    (SELECT group_concat(value, ',') FROM (SELECT value FROM json_each(config_plans.types) ORDER BY value)), '');
CREATE INDEX config_plans_type_set ON config_plans (environment_id, type_set, status, id);
