-- Whether COPY would write history rows faster than the worker's INSERT … SELECT (BENCHMARKS.md,
-- "Backfill"): 1.2M rows shaped as history's (its 21 columns, its primary key) written into an
-- empty table both ways, each in one transaction, twice alternately.
-- Run in a scratch database from a folder psql can write: psql -d scratch -f tools/copy-vs-insert.sql
\timing on
DROP TABLE IF EXISTS stage, by_copy, by_insert;
CREATE TABLE stage AS
SELECT 'bench'::text AS pool, (i / 4000)::bigint AS seq,
       'p' || (i % 30000)::text || '-' || (i % 4000)::text AS player,
       (i % 4000 + 1)::bigint AS rank, random() * 3000 AS performance,
       random() * 3000 AS mu_before, random() * 300 AS sigma_before,
       random() * 3000 AS mu_after, random() * 300 AS sigma_after,
       NULL::text AS league_before, NULL::bigint AS division_before, NULL::float8 AS points_before,
       NULL::text AS league_after, NULL::bigint AS division_after, NULL::float8 AS points_after,
       NULL::float8 AS expected_rank, random() * 3000 AS factor_perf, random() AS factor_weight,
       200.0::float8 AS factor_beta, random() AS factor_log_decay,
       CASE WHEN i >= 4000 THEN (i / 4000 - 1)::bigint END AS prev_seq
FROM generate_series(0, 1199999) AS i;
CREATE TABLE by_copy (LIKE stage);
ALTER TABLE by_copy ADD PRIMARY KEY (pool, seq, player);
CREATE TABLE by_insert (LIKE stage);
ALTER TABLE by_insert ADD PRIMARY KEY (pool, seq, player);
\copy stage TO 'copy-vs-insert.txt'
\echo COPY
BEGIN;
\copy by_copy FROM 'copy-vs-insert.txt'
COMMIT;
\echo INSERT … SELECT
BEGIN; INSERT INTO by_insert SELECT * FROM stage; COMMIT;
TRUNCATE by_copy, by_insert;
\echo COPY
BEGIN;
\copy by_copy FROM 'copy-vs-insert.txt'
COMMIT;
\echo INSERT … SELECT
BEGIN; INSERT INTO by_insert SELECT * FROM stage; COMMIT;
DROP TABLE stage, by_copy, by_insert;
\! rm -f copy-vs-insert.txt
