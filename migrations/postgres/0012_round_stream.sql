-- Season starts (docs/seasons.md) and corrections (docs/corrections.md) are lines of a pool's
-- round stream, queued and applied in order with the rounds: `kind` tells them apart. A round a
-- correction voided keeps its row, so its id stays taken, with the status 'voided'.
-- `season_base` is how many rounds a player had played when the current season started:
-- placement in a league counts the rounds played since.
ALTER TABLE rounds ADD COLUMN kind TEXT NOT NULL DEFAULT 'round'
    CHECK (kind IN ('round', 'season', 'correction'));
ALTER TABLE rounds DROP CONSTRAINT rounds_status_check;
ALTER TABLE rounds ADD CONSTRAINT rounds_status_check
    CHECK (status IN ('queued', 'applied', 'failed', 'voided'));
CREATE INDEX rounds_by_kind ON rounds (pool, kind, seq) WHERE kind <> 'round';
ALTER TABLE players ADD COLUMN season_base BIGINT NOT NULL DEFAULT 0;
