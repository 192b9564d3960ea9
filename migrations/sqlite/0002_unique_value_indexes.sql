-- The apply and the planner look up, by value, the resources that hold a
-- unique value of a change (connection and role display_name, api
-- identifier), instead of reading every resource of the kind.
CREATE INDEX resources_display_name ON resources (environment_id, kind, json_extract(spec, '$.display_name'));
CREATE INDEX resources_identifier ON resources (environment_id, kind, json_extract(spec, '$.identifier'));
