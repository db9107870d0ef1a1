-- Replicas sharing this database (docs/replicas.md): each records that it is alive about once
-- a second, and the pools are shared out among those seen lately. A pool's lease itself is a
-- session advisory lock, which needs no row.
CREATE TABLE replicas (
    id      TEXT PRIMARY KEY,
    seen_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
