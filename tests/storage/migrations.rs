//! Upgrades: a database written before a migration opens with every stored value intact:
//! 0002 turned JSON beliefs into rows, 0003 turned Elo-MMR's parameter columns into a system
//! name and a JSON object, and counted each pool's applied rounds, and the migration that moved
//! factors into history rows (Postgres 0014, SQLite 0013) carries every factor there, or
//! refuses to run and changes nothing; the one that keyed history by round (Postgres 0015,
//! SQLite 0014) chains every player's rows, newest first, as they were; the one that made the
//! leaderboard's defaults display settings (Postgres 0016, SQLite 0015) keeps what every pool
//! showed, its other settings to the bit; the one that kept each player's last change with
//! them (Postgres 0017, SQLite 0016) fills it from history for those who played since the last
//! season start.

use std::borrow::Cow;

use mmr_service::display::{Anchor, DefaultOrder, Display};
use mmr_service::engine::{
    EloMmrParams, EloMmrState, Factor, SystemParams, SystemState, Ties, Variant,
};
use mmr_service::storage;
use serde_json::json;
use sqlx::migrate::Migrator;

use crate::db::{with_database, Backend};
use crate::storage_ext::StorageExt;
use crate::support::{execute_raw, POOL};

/// Creates the pool as version 0001 stored it.
const INSERT_POOL: &str = "
    INSERT INTO pools (name, variant, beta, gamma, rho, mu_init, sigma_init, drift_per_day,
                       history_limit, ties)
    VALUES ($1, 'logistic', 200, 35, 1, 1500, 350, 0, 500, 'both')";

/// Stores a player as version 0001 did: the whole posterior as JSON text in `state`.
const INSERT_PLAYER: &str = "
    INSERT INTO players (pool, player, mu, sigma, rounds, last_round_id, last_round_time, state)
    VALUES ($1, $2, $3, $4, $5, 'r', NULL, $6)";

/// Stores player `$2`'s history row of the round at seq `$3`, as version 0001 did.
const INSERT_HISTORY: &str = "
    INSERT INTO history (pool, player, seq, rank, performance, mu_before, sigma_before,
                         mu_after, sigma_after)
    VALUES ($1, $2, $3, 1, 1500, 1500, 350, 1500, 350)";

/// The player whose newest history row [`store_legacy_players_one_row_short`] leaves out: they
/// keep factors.
const SHORT_PLAYER: &str = "p06";

/// A test that opens a database of `$backend` (`$pool` on `$url_suffix` appended to its URL),
/// runs its migrations up to `$version`, stores values there with macro `$store` (which returns
/// them), then opens it with every migration and checks them with `$check`.
macro_rules! upgrade_test {
    ($name:ident, $backend:expr, $pool:ty, $migrations:literal, $url_suffix:literal,
     through $version:literal, $store:ident, $check:ident) => {
        #[tokio::test]
        async fn $name() {
            with_database($backend, |url| async move {
                let pool = <$pool>::connect(&format!("{url}{}", $url_suffix))
                    .await
                    .expect("open");
                migrations_through(sqlx::migrate!($migrations), $version)
                    .run(&pool)
                    .await
                    .expect("the older migrations");
                let stored = $store!(&pool);
                pool.close().await;
                $check(&url, &stored).await;
            })
            .await;
        }
    };
}

/// Stores [`legacy_players`] in pool `POOL` as migration 0001 did, each with a history row
/// for every round they played, at the seqs [`legacy_seq`] gives; returns them.
macro_rules! store_legacy_players {
    ($pool:expr) => {{
        sqlx::query(INSERT_POOL)
            .bind(POOL)
            .execute($pool)
            .await
            .expect("pool");
        let players = legacy_players();
        for (index, (player, state, json)) in players.iter().enumerate() {
            let rounds = i64::try_from(state.rounds).expect("rounds");
            sqlx::query(INSERT_PLAYER)
                .bind(POOL)
                .bind(player)
                .bind(state.mu)
                .bind(state.sigma)
                .bind(rounds)
                .bind(json)
                .execute($pool)
                .await
                .expect("player");
            for round in 1..=rounds {
                sqlx::query(INSERT_HISTORY)
                    .bind(POOL)
                    .bind(player)
                    .bind(legacy_seq(index, round))
                    .execute($pool)
                    .await
                    .expect("history");
            }
        }
        players
    }};
}

/// As [`store_legacy_players`], without [`SHORT_PLAYER`]'s newest history row: their newest
/// factor has no row to move to.
macro_rules! store_legacy_players_one_row_short {
    ($pool:expr) => {{
        let players = store_legacy_players!($pool);
        let (index, (_, short, _)) = players
            .iter()
            .enumerate()
            .find(|(_, (player, _, _))| player == SHORT_PLAYER)
            .expect("the short player");
        assert!(!short.factors.is_empty());
        let rounds = i64::try_from(short.rounds).expect("rounds");
        sqlx::query("DELETE FROM history WHERE pool = $1 AND player = $2 AND seq = $3")
            .bind(POOL)
            .bind(SHORT_PLAYER)
            .bind(legacy_seq(index, rounds))
            .execute($pool)
            .await
            .expect("delete");
        players
    }};
}

// `mode=rwc`: create the SQLite file, as the service does.
upgrade_test!(
    sqlite_json_beliefs_become_rows_bit_for_bit,
    Backend::Sqlite,
    sqlx::SqlitePool,
    "./migrations/sqlite",
    "?mode=rwc",
    through 1,
    store_legacy_players,
    check_upgraded
);
upgrade_test!(
    postgres_json_beliefs_become_rows_bit_for_bit,
    Backend::Postgres,
    sqlx::PgPool,
    "./migrations/postgres",
    "",
    through 1,
    store_legacy_players,
    check_upgraded
);

upgrade_test!(
    sqlite_a_factor_without_its_history_row_stops_the_upgrade,
    Backend::Sqlite,
    sqlx::SqlitePool,
    "./migrations/sqlite",
    "?mode=rwc",
    through 1,
    store_legacy_players_one_row_short,
    check_refused
);
upgrade_test!(
    postgres_a_factor_without_its_history_row_stops_the_upgrade,
    Backend::Postgres,
    sqlx::PgPool,
    "./migrations/postgres",
    "",
    through 1,
    store_legacy_players_one_row_short,
    check_refused
);

/// `migrator` with its migrations up to `version` only: the schema as that version left it.
fn migrations_through(mut migrator: Migrator, version: i64) -> Migrator {
    migrator.migrations = Cow::Owned(
        migrator
            .migrations
            .iter()
            .filter(|m| m.version <= version)
            .cloned()
            .collect(),
    );
    migrator
}

/// Creates a pool as versions 0001 and 0002 stored it: one column per Elo-MMR parameter.
const INSERT_LEGACY_POOL: &str = "
    INSERT INTO pools (name, variant, beta, gamma, rho, mu_init, sigma_init, drift_per_day,
                       history_limit, ties)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)";

/// Stores round `$2` of pool `$1` at place `$3` with status `$4`.
const INSERT_LEGACY_ROUND: &str = "
    INSERT INTO rounds (pool, id, seq, body, content_hash, status)
    VALUES ($1, $2, $3, '{}', $4, $5)";

/// Pools with parameters whose every bit matters (last digits, a subnormal, an infinite ρ),
/// each with its rounds' statuses.
fn legacy_pools() -> Vec<(String, EloMmrParams, Vec<&'static str>)> {
    let odd = EloMmrParams {
        variant: Variant::Gaussian,
        beta: 0.1 + 0.2,
        gamma: 1.0 / 3.0,
        rho: f64::INFINITY,
        mu_init: -7.25e-3,
        sigma_init: std::f64::consts::PI * 1e5,
        drift_per_day: 5e-324,
        history_limit: 7,
        ties: Ties::Split,
    };
    let tiny_rho = EloMmrParams {
        rho: f64::MIN_POSITIVE,
        beta: 123_456.789_012_345_67,
        ..EloMmrParams::default()
    };
    vec![
        ("default".into(), EloMmrParams::default(), vec![]),
        (
            "odd".into(),
            odd,
            vec!["applied", "applied", "failed", "queued"],
        ),
        (
            "tiny-rho".into(),
            tiny_rho,
            vec!["applied", "queued", "queued"],
        ),
    ]
}

/// Stores [`legacy_pools`] and their rounds as migrations 0001 and 0002 did; returns them.
macro_rules! store_legacy_pools {
    ($pool:expr) => {{
        let pools = legacy_pools();
        for (name, params, rounds) in &pools {
            sqlx::query(INSERT_LEGACY_POOL)
                .bind(name)
                .bind(match params.variant {
                    Variant::Logistic => "logistic",
                    Variant::Gaussian => "gaussian",
                })
                .bind(params.beta)
                .bind(params.gamma)
                .bind(params.rho)
                .bind(params.mu_init)
                .bind(params.sigma_init)
                .bind(params.drift_per_day)
                .bind(i64::try_from(params.history_limit).expect("limit"))
                .bind(match params.ties {
                    Ties::Both => "both",
                    Ties::Split => "split",
                })
                .execute($pool)
                .await
                .expect("pool");
            for (seq, status) in (1_i64..).zip(rounds) {
                sqlx::query(INSERT_LEGACY_ROUND)
                    .bind(name)
                    .bind(format!("r{seq}"))
                    .bind(seq)
                    .bind(vec![0_u8; 32])
                    .bind(*status)
                    .execute($pool)
                    .await
                    .expect("round");
            }
        }
        pools
    }};
}

upgrade_test!(
    sqlite_parameter_columns_become_a_system_and_exact_json,
    Backend::Sqlite,
    sqlx::SqlitePool,
    "./migrations/sqlite",
    "?mode=rwc",
    through 2,
    store_legacy_pools,
    check_pools_upgraded
);
upgrade_test!(
    postgres_parameter_columns_become_a_system_and_exact_json,
    Backend::Postgres,
    sqlx::PgPool,
    "./migrations/postgres",
    "",
    through 2,
    store_legacy_pools,
    check_pools_upgraded
);

/// Opens the database at `url` with every migration and checks each of `pools`.
async fn check_pools_upgraded(url: &str, pools: &[(String, EloMmrParams, Vec<&'static str>)]) {
    let storage = storage::connect(url).await.expect("migrate");
    for (name, want, rounds) in pools {
        let info = storage.pool(name).await.expect("read").expect("kept");
        let SystemParams::EloMmr(got) = info.params else {
            panic!("{name}: an Elo-MMR pool");
        };
        let floats = |p: &EloMmrParams| {
            [
                p.beta,
                p.gamma,
                p.rho,
                p.mu_init,
                p.sigma_init,
                p.drift_per_day,
            ]
            .map(f64::to_bits)
        };
        assert_eq!(floats(&got), floats(want), "{name}");
        assert_eq!(got, *want, "{name}");
        let count = |status| rounds.iter().filter(|&&s| s == status).count() as u64;
        assert_eq!(
            (info.applied, info.queued, info.failed),
            (count("applied"), count("queued"), count("failed")),
            "{name}"
        );
        let progress = storage.pool_progress(name).await.expect("read");
        assert_eq!(
            progress.map(|p| p.applied),
            Some(count("applied")),
            "{name}"
        );
    }
    storage.close().await;
}

/// The seq of the round in which the legacy player at `index` played their `round`-th: the
/// players' rounds interleave, so that a player's n-th round is not at seq n.
fn legacy_seq(index: usize, round: i64) -> i64 {
    round * 100 + i64::try_from(index).expect("an index")
}

/// Players with beliefs of 0 to 6 factors, each with the JSON version 0001 stored: every
/// factor at its current weight, no decay.
fn legacy_players() -> Vec<(String, EloMmrState, String)> {
    let mut rng = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = move || {
        // Doubles of every magnitude a belief holds, with random mantissas: the last digit of
        // each printed number matters.
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let exponent = (rng >> 52) % 80;
        f64::from_bits((rng & ((1 << 52) - 1)) | ((1023 - 40 + exponent) << 52))
    };
    (0..30_u64)
        .map(|i| {
            let factors: Vec<Factor> = (0..i % 7)
                .map(|_| Factor {
                    perf: next(),
                    weight: next(),
                    beta: next(),
                    log_decay: 0.0,
                })
                .collect();
            let state = EloMmrState {
                mu: next(),
                sigma: next(),
                p0: next(),
                w0: next(),
                factors: factors.iter().copied().collect(),
                log_decay: 0.0,
                last_time: (i % 3 != 0).then_some(i as i64 * 86_400 - 1_000_000),
                rounds: i % 7 + i,
            };
            let json = json!({
                "mu": state.mu,
                "sigma": state.sigma,
                "p0": state.p0,
                "w0": state.w0,
                "factors": factors
                    .iter()
                    .map(|f| json!({"perf": f.perf, "weight": f.weight, "beta": f.beta}))
                    .collect::<Vec<_>>(),
                "last_time": state.last_time,
                "rounds": state.rounds,
            });
            (format!("p{i:02}"), state, json.to_string())
        })
        .collect()
}

/// Opens the database at `url` with every migration and checks that each of `players` loads
/// with exactly the belief it was stored with.
async fn check_upgraded(url: &str, players: &[(String, EloMmrState, String)]) {
    let storage = storage::connect(url).await.expect("migrate");
    let stored = storage.load_players(POOL).await.expect("load");
    storage.close().await;
    // Each history row chains to the player's row before it, and each player's row names
    // their newest (the legacy rounds have no `rounds` rows to read history through).
    let unchained = execute_raw(
        url,
        "SELECT count(*) FROM history h
         WHERE prev_seq IS DISTINCT FROM (SELECT max(seq) FROM history b
                                          WHERE b.pool = h.pool AND b.player = h.player
                                            AND b.seq < h.seq)",
    )
    .await;
    assert_eq!(unchained, Some(0));
    let unanchored = execute_raw(
        url,
        "SELECT count(*) FROM players p
         WHERE last_seq <> COALESCE((SELECT max(seq) FROM history h
                                     WHERE h.pool = p.pool AND h.player = p.player), 0)",
    )
    .await;
    assert_eq!(unanchored, Some(0));
    let firsts = execute_raw(url, "SELECT count(*) FROM history WHERE prev_seq IS NULL").await;
    let played = players
        .iter()
        .filter(|(_, state, _)| state.rounds > 0)
        .count();
    assert_eq!(firsts, Some(played as i64));
    assert_eq!(stored.len(), players.len());
    for (got, (player, want, _)) in stored.iter().zip(players) {
        assert_eq!(&got.player, player);
        let SystemState::EloMmr(state) = &got.state else {
            panic!("{player}: an Elo-MMR belief");
        };
        assert_eq!(bits(state), bits(want), "{player}");
        assert_eq!(state, want, "{player}");
    }
}

/// Opens the database at `url`: the service refuses to start, and the factors of `players`
/// are all still in their table, which the refused migration would have dropped.
async fn check_refused(url: &str, players: &[(String, EloMmrState, String)]) {
    let refused = storage::connect(url).await;
    assert!(refused.is_err(), "the upgrade ran");
    let stored = execute_raw(url, "SELECT count(*) FROM factors").await;
    let want: usize = players
        .iter()
        .map(|(_, state, _)| state.factors.len())
        .sum();
    assert_eq!(stored, Some(want as i64));
}

/// Every float of a belief, as bits.
fn bits(state: &EloMmrState) -> Vec<u64> {
    let mut all = vec![state.mu, state.sigma, state.p0, state.w0, state.log_decay];
    for f in &state.factors {
        all.extend([f.perf, f.weight, f.beta, f.log_decay]);
    }
    all.into_iter().map(f64::to_bits).collect()
}

/// Pools as a database before the leaderboard's defaults stored them: one that never set its
/// display (`{}`), and one with every setting, with numbers whose last digit matters.
const DISPLAYS: [(&str, &str); 2] = [
    ("plain", "{}"),
    (
        "shown",
        r#"{"conservative_k":2.000000000000001,"fixed_range":{"max":3000.0,"center":1234.5678901234567,"scale":"auto"},"provisional":{"min_rounds":7,"max_sigma":1e-300},"leagues":null,"expected_ranks":true}"#,
    ),
];

/// Stores [`DISPLAYS`]' pools; returns their names and settings.
macro_rules! store_displays {
    ($pool:expr) => {{
        for (name, display) in DISPLAYS {
            sqlx::query("INSERT INTO pools (name, system, params, applied, display) VALUES ($1, 'elo_mmr', '{}', 0, $2)")
                .bind(name)
                .bind(display)
                .execute($pool)
                .await
                .expect("pool");
        }
        DISPLAYS
    }};
}

upgrade_test!(
    sqlite_pools_keep_their_leaderboards_and_settings,
    Backend::Sqlite,
    sqlx::SqlitePool,
    "./migrations/sqlite",
    "?mode=rwc",
    through 14,
    store_displays,
    check_displays_upgraded
);
upgrade_test!(
    postgres_pools_keep_their_leaderboards_and_settings,
    Backend::Postgres,
    sqlx::PgPool,
    "./migrations/postgres",
    "",
    through 15,
    store_displays,
    check_displays_upgraded
);

/// Opens the database at `url` with every migration: each pool of [`DISPLAYS`] lists every
/// player by μ, provisional only by a rule it set, and keeps its other settings to the bit.
async fn check_displays_upgraded(url: &str, stored: &[(&str, &str)]) {
    let storage = storage::connect(url).await.expect("migrate");
    for (name, before) in stored {
        let got = storage
            .pool(name)
            .await
            .expect("read")
            .expect("kept")
            .display;
        let mut want: Display = serde_json::from_str(before).expect("valid");
        if *before == "{}" {
            want.provisional = None;
        }
        want.default_order = DefaultOrder::Mu;
        want.list_provisional = true;
        assert_eq!(got, want, "{name}");
        let bits = |d: &Display| {
            let range = d.fixed_range.expect("a range");
            let Anchor::Value(center) = range.center else {
                panic!("a center")
            };
            [d.conservative_k, range.max, center].map(f64::to_bits)
        };
        if got.fixed_range.is_some() {
            assert_eq!(bits(&got), bits(&want), "{name}");
        }
    }
    storage.close().await;
}

/// Players as a database before their last change was kept with them stored them: each with
/// their rounds, rounds when the season started, last seq, and the rating (μ, σ) their last
/// round started from in its history row: one who played this season, one whose rating the
/// season start reset after their last round, and one stored before history rows were chained.
const LAST_ROUNDS: [StoredLast; 3] = [
    StoredLast {
        player: "played",
        rounds: 2,
        season_base: 1,
        last_seq: 2,
        before: Some((1_512.345_678_901_234_5, 301.000_000_000_000_06)),
    },
    StoredLast {
        player: "reset",
        rounds: 1,
        season_base: 1,
        last_seq: 1,
        before: Some((1_500.0, 350.0)),
    },
    StoredLast {
        player: "unchained",
        rounds: 1,
        season_base: 0,
        last_seq: 0,
        before: None,
    },
];

/// A player of [`LAST_ROUNDS`].
#[derive(Clone, Copy)]
struct StoredLast {
    player: &'static str,
    rounds: i64,
    season_base: i64,
    last_seq: i64,
    /// μ and σ before the last round, in its history row (none: no row).
    before: Option<(f64, f64)>,
}

/// A player's id and the bits of the μ and σ their last round started from, as loaded.
type LoadedLast = (String, Option<(u64, Option<u64>)>);

/// Stores [`LAST_ROUNDS`]' players and history rows in an Elo-MMR pool; returns them.
macro_rules! store_last_rounds {
    ($pool:expr) => {{
        sqlx::query("INSERT INTO pools (name, system, params, applied, display) VALUES ($1, 'elo_mmr', '{}', 2, '{}')")
            .bind(POOL)
            .execute($pool)
            .await
            .expect("pool");
        for StoredLast {
            player,
            rounds,
            season_base,
            last_seq,
            before,
        } in LAST_ROUNDS
        {
            sqlx::query(
                "INSERT INTO players (pool, player, mu, sigma, rounds, last_round_id, p0, w0,
                                      log_decay, season_base, last_seq)
                 VALUES ($1, $2, 1600, 200, $3, 'r', 1600, 0.01, 0, $4, $5)",
            )
            .bind(POOL)
            .bind(player)
            .bind(rounds)
            .bind(season_base)
            .bind(last_seq)
            .execute($pool)
            .await
            .expect("player");
            if let Some((mu, sigma)) = before {
                sqlx::query(
                    "INSERT INTO history (pool, player, seq, rank, performance, mu_before,
                                          sigma_before, mu_after, sigma_after)
                     VALUES ($1, $2, $3, 1, 1600, $4, $5, 1600, 200)",
                )
                .bind(POOL)
                .bind(player)
                .bind(last_seq)
                .bind(mu)
                .bind(sigma)
                .execute($pool)
                .await
                .expect("history");
            }
        }
        LAST_ROUNDS
    }};
}

upgrade_test!(
    sqlite_players_keep_their_last_rounds_change_unless_a_season_reset_it,
    Backend::Sqlite,
    sqlx::SqlitePool,
    "./migrations/sqlite",
    "?mode=rwc",
    through 15,
    store_last_rounds,
    check_last_changes
);
upgrade_test!(
    postgres_players_keep_their_last_rounds_change_unless_a_season_reset_it,
    Backend::Postgres,
    sqlx::PgPool,
    "./migrations/postgres",
    "",
    through 16,
    store_last_rounds,
    check_last_changes
);

/// Opens the database at `url` with every migration: the player who played since the season
/// started loads with their last round's starting rating to the bit, the others with none.
async fn check_last_changes(url: &str, stored: &[StoredLast]) {
    let storage = storage::connect(url).await.expect("migrate");
    let loaded = storage.load_players(POOL).await.expect("load");
    storage.close().await;
    let got: Vec<LoadedLast> = loaded
        .iter()
        .map(|p| {
            let before = p
                .before
                .map(|r| (r.mu.to_bits(), r.sigma.map(f64::to_bits)));
            (p.player.clone(), before)
        })
        .collect();
    let want: Vec<LoadedLast> = stored
        .iter()
        .map(
            |&StoredLast {
                 player,
                 rounds,
                 season_base,
                 before,
                 ..
             }| {
                let kept = before
                    .filter(|_| rounds > season_base)
                    .map(|(mu, sigma)| (mu.to_bits(), Some(sigma.to_bits())));
                (player.to_owned(), kept)
            },
        )
        .collect();
    assert_eq!(got, want);
    assert!(want[0].1.is_some(), "one player keeps a change");
}
