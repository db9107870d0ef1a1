//! Parameters at the edge of their range never put a number that is not finite into a pool:
//! each round found to drive TrueSkill's or Weng-Lin's arithmetic there to NaN is now rated
//! finitely, stored and served as numbers, and the pool goes on with its next round. On SQLite
//! such a result used to be refused by the commit and retried for ever (the pool stopped); on
//! Postgres it was stored and served as `null`. The engine's check between rating and keeping
//! (`Error::NotFinite`, which no accepted parameter reaches any more: src/engine/tests/finite.rs)
//! would fail the round with its reason; whatever the database refuses to store, for what it
//! holds rather than for an outage, fails that round alone too, and that path is driven here.

use axum::http::StatusCode;
use serde_json::{json, Value};
use sqlx::{Connection, PgConnection, SqliteConnection};

use mmr_service::worker::Settled;

use crate::support::{num, round, TestApp, POOL};

backend_tests!(
    rounds_at_the_edges_of_the_parameters_are_rated_finitely_and_the_pool_goes_on,
    a_stalled_worker_shows_in_readyz_and_metrics,
    a_round_the_database_refuses_fails_and_the_pool_goes_on,
);

/// The parameters and rounds an adversarial test found to give NaN ratings.
fn edge_cases() -> Vec<(&'static str, Value, Vec<Value>)> {
    let solo = |id: &str, ranks: &[(&str, u32)]| {
        let standings: Vec<Value> = ranks
            .iter()
            .map(|(player, rank)| json!({"player": player, "rank": rank}))
            .collect();
        json!({"id": id, "standings": standings})
    };
    let team_of_nine = {
        let mut standings: Vec<Value> = (0..9)
            .map(|i| json!({"player": format!("p{i}"), "rank": 1, "team": "nine"}))
            .collect();
        standings.push(json!({"player": "q", "rank": 2}));
        json!({"id": "nine", "standings": standings})
    };
    let shapes = || {
        vec![
            solo("duel", &[("a", 1), ("b", 2)]),
            solo("tie", &[("a", 1), ("b", 1)]),
            solo("three", &[("a", 1), ("b", 2), ("c", 2)]),
            solo("tied-above", &[("a", 1), ("b", 1), ("c", 2)]),
        ]
    };
    vec![
        (
            "Weng-Lin Plackett-Luce, μ₀ 100,000, a team above one player",
            json!({"system": "weng_lin", "model": "plackett_luce", "mu_init": 100_000.0}),
            vec![json!({"id": "team", "standings": [
                {"player": "a", "rank": 1, "team": "t"},
                {"player": "b", "rank": 1, "team": "t"},
                {"player": "c", "rank": 2},
            ]})],
        ),
        (
            "TrueSkill, μ₀ −1e9, a team of nine",
            json!({"system": "trueskill", "mu_init": -1e9}),
            vec![team_of_nine],
        ),
        (
            "TrueSkill, β 1e-6, draw probability 1e-9",
            json!({"system": "trueskill", "beta": 1e-6, "draw_probability": 1e-9}),
            shapes(),
        ),
        (
            // A tie above a third entrant: the draw's margin is 1e-21 of a difference's spread
            // (its tails cancelled to a mass of 0 before they were integrated by their series).
            "TrueSkill, β 1e-6, τ 1e6, draw probability 1e-9",
            json!({"system": "trueskill", "beta": 1e-6, "tau": 1e6, "draw_probability": 1e-9}),
            shapes(),
        ),
        (
            "TrueSkill, τ 1e6, draw probability 1e-9",
            json!({"system": "trueskill", "tau": 1e6, "draw_probability": 1e-9}),
            shapes(),
        ),
        (
            // Members at 5e8 known to 1e-4, a pair tied with single players: the pair's sum
            // stands 5e12 spreads above them, and the round failed as not finite until
            // TrueSkill's chain stopped dividing messages out of its marginals.
            "TrueSkill, μ₀ 5e8, σ₀ 1e-4, β 1e-6, no drift, teams of other sizes",
            json!({"system": "trueskill", "mu_init": 5e8, "sigma_init": 1e-4,
                   "beta": 1e-6, "tau": 0.0, "draw_probability": 0.5}),
            vec![beyond_precision("pairs")],
        ),
    ]
}

/// A round of single players and two pairs, one pair tied with two single players: their sums
/// stand 5e12 spreads apart for TrueSkill at μ₀ 5e8, σ₀ 1e-4.
fn beyond_precision(id: &str) -> Value {
    let standings: Vec<Value> = [
        ("p0", 1, None),
        ("p1", 2, Some("t2")),
        ("p2", 4, None),
        ("p3", 3, None),
        ("p4", 4, Some("t4")),
        ("p5", 4, Some("t4")),
        ("p6", 1, None),
        ("p7", 4, None),
    ]
    .into_iter()
    .map(
        |(player, rank, team): (&str, u32, Option<&str>)| match team {
            Some(team) => json!({"player": player, "rank": rank, "team": team}),
            None => json!({"player": player, "rank": rank}),
        },
    )
    .collect();
    json!({"id": id, "standings": standings})
}

async fn rounds_at_the_edges_of_the_parameters_are_rated_finitely_and_the_pool_goes_on(
    app: TestApp,
) {
    for (i, (case, params, rounds)) in edge_cases().into_iter().enumerate() {
        let pool = format!("edge{i}");
        app.put_pool(&pool, params)
            .await
            .assert_status(StatusCode::CREATED, case);
        let mut ids = Vec::new();
        for round in rounds {
            ids.push(round["id"].as_str().expect("an id").to_owned());
            app.post_round(&pool, round)
                .await
                .assert_status(StatusCode::ACCEPTED, case);
        }
        // The next round, ordinary, is settled after them: the pool goes on.
        app.post_round(&pool, round("after", &["x", "y"]))
            .await
            .assert_status(StatusCode::ACCEPTED, case);
        let settled = app.apply_queued(&pool).await;
        assert_eq!(settled.len(), ids.len() + 1, "{case}: every round settled");
        for (id, outcome) in ids.iter().zip(&settled) {
            assert!(
                matches!(outcome, Settled::Applied(_)),
                "{case}: {id}: {outcome:?}"
            );
            let path = format!("/v1/pools/{pool}/rounds/{id}");
            let read = app.get(&path).await;
            let body = read.assert_status(StatusCode::OK, case);
            assert_eq!(body["status"], "applied", "{case}: {id}");
        }
        let info = app.pool_info(&pool).await;
        assert_eq!(info["rounds_failed"], 0, "{case}: nothing failed");
        assert_eq!(info["rounds_queued"], 0, "{case}: nothing left queued");
        let board = app
            .get(&format!(
                "/v1/pools/{pool}/leaderboard?limit=100&established=false"
            ))
            .await;
        let board = board.assert_status(StatusCode::OK, case);
        let entries = board["entries"].as_array().expect("entries");
        assert!(!entries.is_empty(), "{case}: someone is rated");
        for entry in entries {
            for field in ["mu", "sigma", "conservative"] {
                assert!(num(&entry[field]).is_finite(), "{case}: {field} of {entry}");
            }
            let player = entry["player"].as_str().expect("a player");
            let page = app
                .get(&format!("/v1/pools/{pool}/players/{player}/history"))
                .await;
            let page = page.assert_status(StatusCode::OK, case);
            for row in page["entries"].as_array().expect("history entries") {
                for field in ["performance", "mu_before", "mu", "delta"] {
                    assert!(num(&row[field]).is_finite(), "{case}: {field} of {row}");
                }
            }
        }
    }
}

async fn a_stalled_worker_shows_in_readyz_and_metrics(app: TestApp) {
    app.create_pool(POOL).await;
    let pool = app.state.pools.get(POOL).expect("the pool");
    // As if its worker ran: no test runs one.
    pool.set_worker_running(true);
    let ready = app.get("/readyz").await;
    assert_eq!(ready.status, StatusCode::OK, "{:#}", ready.body);
    assert_eq!(ready.body["stalled_pools"], 0, "{:#}", ready.body);
    for _ in 0..3 {
        pool.step_ended(false);
    }
    let stalled = app.get("/readyz").await;
    assert_eq!(stalled.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(stalled.body["stalled_pools"], 1, "{:#}", stalled.body);
    assert_eq!(stalled.body["workers"], false);
    let metrics = app.get_text("/metrics", "text/plain").await.2;
    assert!(
        metrics.contains(&format!("mmr_worker_failing_steps{{pool=\"{POOL}\"}} 3")),
        "{metrics}"
    );
    pool.step_ended(true);
    let ready = app.get("/readyz").await;
    assert_eq!(ready.status, StatusCode::OK, "{:#}", ready.body);
}

/// A round the database refuses to store, for what it holds rather than for an outage, is
/// failed with a reason, counted, and the pool goes on; before, its batch was committed again
/// every second, for ever, and nothing behind it (a void of it included) was applied. The
/// refusal is a rule the test adds to the database: no history row for player `poison`.
async fn a_round_the_database_refuses_fails_and_the_pool_goes_on(app: TestApp) {
    app.create_pool(POOL).await;
    let url = app.state.settings.database.url.clone();
    if url.starts_with("sqlite") {
        let mut db = SqliteConnection::connect(&url).await.expect("the database");
        sqlx::query(
            "CREATE TRIGGER poison BEFORE INSERT ON history WHEN NEW.player = 'poison' \
             BEGIN SELECT RAISE(ABORT, 'no poison'); END",
        )
        .execute(&mut db)
        .await
        .expect("the rule");
    } else {
        let mut db = PgConnection::connect(&url).await.expect("the database");
        sqlx::query("ALTER TABLE history ADD CONSTRAINT poison CHECK (player <> 'poison')")
            .execute(&mut db)
            .await
            .expect("the rule");
    }
    for (id, players) in [
        ("r1", ["a", "b"]),
        ("r2", ["poison", "c"]),
        ("r3", ["d", "e"]),
    ] {
        app.post_round(POOL, round(id, &players))
            .await
            .assert_status(StatusCode::ACCEPTED, id);
    }
    assert_eq!(
        app.apply_queued(POOL).await,
        [
            Settled::Applied("r1".into()),
            Settled::Failed("r2".into()),
            Settled::Applied("r3".into()),
        ]
    );
    let failed = app.get(&format!("/v1/pools/{POOL}/rounds/r2")).await;
    let failed = failed.assert_status(StatusCode::OK, "r2");
    assert_eq!(failed["status"], "failed");
    assert!(
        failed["error"]
            .as_str()
            .is_some_and(|e| e.contains("refused")),
        "{failed}"
    );
    let info = app.pool_info(POOL).await;
    assert_eq!(
        (
            info["rounds_applied"].clone(),
            info["rounds_failed"].clone()
        ),
        (json!(2), json!(1))
    );
}
