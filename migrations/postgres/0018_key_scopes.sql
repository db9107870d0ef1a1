-- The pools a key kept here reaches: a JSON array of pool names and name starts followed by
-- `*`, or NULL for every pool, which every key created before keeps.
ALTER TABLE api_keys ADD COLUMN pools TEXT;
