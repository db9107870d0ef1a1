-- Keys kept in the database (README "Keys"): created by an admin through /v1/keys, or on the
-- first start of a service with no key configured. Only the hex SHA-256 of a key is stored;
-- a revoked key keeps its row (revoked_at set) so its name cannot be reused by mistake.
CREATE TABLE api_keys (
    name       TEXT PRIMARY KEY,
    role       TEXT NOT NULL CHECK (role IN ('read', 'write', 'admin')),
    sha256     TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    revoked_at INTEGER
) STRICT;
