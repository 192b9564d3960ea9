-- PostgreSQL compresses its large values with lz4 from here on; SQLite does
-- not compress, so nothing changes here.
SELECT 1;
