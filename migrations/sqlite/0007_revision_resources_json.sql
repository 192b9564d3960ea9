-- PostgreSQL turns config_revisions.resources into json, kept byte for
-- byte; the TEXT column of SQLite already keeps the bytes, so nothing
-- changes here.
SELECT 1;
