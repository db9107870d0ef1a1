-- Each player's rating before their last round, beside their rating: what that round changed
-- (`last_change` on the leaderboard and a player's page), read with the player at load rather
-- than from their history row. NULL before any round and once a season start has reset the
-- rating since (the season start sets it NULL); filled here from history for players who
-- played since the last season start.
ALTER TABLE players ADD COLUMN mu_before REAL;
ALTER TABLE players ADD COLUMN sigma_before REAL;

UPDATE players SET mu_before = h.mu_before, sigma_before = h.sigma_before
FROM history h
WHERE h.pool = players.pool AND h.seq = players.last_seq AND h.player = players.player
  AND players.rounds > players.season_base;
