-- The leaderboard's default order and filter became display settings (docs/display.md), and a
-- new pool's defaults changed: the conservative order, players of fewer than 3 rounds
-- provisional and left out. Pools that exist keep what they showed: μ's order, every player
-- listed, and nobody provisional unless they set a rule.
UPDATE pools SET display = json_set(
    json_insert(display, '$.provisional', json('null')),
    '$.default_order', 'mu',
    '$.list_provisional', json('true')
);
