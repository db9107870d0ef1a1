-- The audit log: one row per admin or key action, written in the action's own transaction.
-- No foreign key to pools: a deleted pool keeps its rows, its deletion last. `at` in Unix
-- seconds; the states are JSON text (NULL where the action has none), as the pools' columns.
-- Rows are never deleted, so the rowid alone orders them.
CREATE TABLE audit_log (
    id           INTEGER PRIMARY KEY,
    at           INTEGER NOT NULL,
    actor        TEXT NOT NULL,
    request_id   TEXT,
    action       TEXT NOT NULL,
    pool         TEXT,
    subject      TEXT,
    state_before TEXT,
    state_after  TEXT
) STRICT;
-- A pool's entries newest first, and one action's.
CREATE INDEX audit_log_by_pool ON audit_log (pool, id);
CREATE INDEX audit_log_by_action ON audit_log (action, id);
