-- A pool's display settings (docs/display.md): the conservative rating's k, the fixed-range
-- rating and the provisional rule, as a JSON object. `{}` means the defaults: k = 3, no
-- fixed-range rating, nobody provisional, which is what every pool showed before.
ALTER TABLE pools ADD COLUMN display TEXT NOT NULL DEFAULT '{}';
