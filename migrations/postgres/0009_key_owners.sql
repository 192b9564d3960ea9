-- An API key may name who it is for (§17: 1–200 printable characters, NULL
-- when absent). A plan keeps its creator's owner beside created_by; events
-- and management-log entries read the owner of their key when listed (an
-- owner never changes once the key exists).
ALTER TABLE api_keys ADD COLUMN owner text;
ALTER TABLE config_plans ADD COLUMN created_by_owner text;
