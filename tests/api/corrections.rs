//! Corrections on both backends: a round voided, a player disqualified from a round, a player
//! renamed, two players merged and new parameters, each applied by rating the pool again; the
//! result equals `replay` of the pool's export (the corrected rounds) bit for bit, leagues
//! included, before and after a restart, and rounds posted meanwhile are applied after. A
//! correction the worker cannot apply fails and changes nothing.

use axum::http::{Method, StatusCode};
use mmr_service::api::auth::hash_key;
use serde_json::{json, Value};

use crate::leagues::{ladder, ladder_rounds, put_display, read, replayed_csv};
use mmr_service::worker::{self, Processed, Settled};

use crate::support::{history_ids, num, round, Payload, TestApp, ADMIN_KEY, POOL};

backend_tests!(
    corrections_rate_the_pool_again_as_replay_of_the_corrected_rounds_would,
    a_correction_the_worker_cannot_apply_fails_and_changes_nothing,
    voids_queued_one_after_another_are_applied_in_one_recomputation_as_one_by_one,
);

const CORRECTIONS: &str = "/v1/pools/main/corrections";

async fn correct(app: &TestApp, body: Value) {
    app.post(CORRECTIONS, Some(ADMIN_KEY), body.clone())
        .await
        .assert_status(StatusCode::ACCEPTED, &body.to_string());
}

/// Every rated player's `(mu, sigma, league)` as the leaderboard lists them, by id.
async fn everyone(app: &TestApp) -> Vec<(String, f64, f64, Value)> {
    let page = read(app, "/v1/pools/main/leaderboard?limit=1000").await;
    let mut all: Vec<_> = page["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| {
            (
                e["player"].as_str().expect("a player").to_owned(),
                num(&e["mu"]),
                num(&e["sigma"]),
                e["league"]["league"].clone(),
            )
        })
        .collect();
    all.sort_by(|a, b| a.0.cmp(&b.0));
    all
}

async fn corrections_rate_the_pool_again_as_replay_of_the_corrected_rounds_would(app: TestApp) {
    let (_, rounds) = ladder_rounds();
    let display = json!({ "leagues": ladder() });
    let (posted_r2, posted_r4) = (rounds[2].clone(), rounds[4].clone());
    app.create_pool(POOL).await;
    put_display(&app, POOL, display.clone()).await;
    app.play(rounds).await;
    let before = everyone(&app).await;

    let void = || {
        app.send(
            Method::DELETE,
            "/v1/pools/main/rounds/r2",
            Some(ADMIN_KEY),
            Payload::Empty,
        )
    };
    assert_eq!(
        void().await.assert_status(StatusCode::ACCEPTED, "void r2"),
        &json!({"id": "void/r2", "status": "queued", "position": 1})
    );
    correct(
        &app,
        json!({"id": "dq", "action": "disqualify", "round": "r4", "player": "p3"}),
    )
    .await;
    correct(
        &app,
        json!({"id": "handle", "action": "rename", "player": "p5", "to": "five"}),
    )
    .await;
    correct(
        &app,
        json!({"id": "smurf", "action": "merge", "player": "p7", "into": "p6"}),
    )
    .await;
    correct(
        &app,
        json!({"id": "beta", "action": "params", "params": {"beta": 150.0}}),
    )
    .await;
    // Posted behind the corrections: applied after them, on the corrected pool.
    app.queue_round(round("r10", &["five", "p0", "p6"])).await;
    assert_eq!(
        everyone(&app).await,
        before,
        "nothing moves until the worker gets there"
    );
    app.apply_queued(POOL).await;

    let recompute = read(&app, "/v1/pools/main/recompute").await;
    assert_eq!(
        (&recompute["state"], &recompute["correction"]),
        (&json!("applied"), &json!("beta"))
    );
    assert_eq!(recompute["done"], recompute["lines"]);
    assert_eq!(
        read(&app, "/v1/pools/main/rounds/r2").await["status"],
        "voided"
    );
    let r4 = read(&app, "/v1/pools/main/rounds/r4").await;
    let players: Vec<&str> = r4["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|r| r["player"].as_str().expect("a player"))
        .collect();
    assert!(
        !players.contains(&"p3") && !players.is_empty(),
        "{players:?}"
    );
    for gone in ["p5", "p7"] {
        app.get(&format!("/v1/pools/main/players/{gone}"))
            .await
            .assert_error(StatusCode::NOT_FOUND, "player_not_found", None, gone);
    }
    assert_eq!(num(&app.pool_info(POOL).await["params"]["beta"]), 150.0);
    // Voiding again (a retry) is recognized; the voided round's id stays taken.
    assert_eq!(
        void().await.assert_status(StatusCode::OK, "void r2 again"),
        &json!({"id": "void/r2", "status": "applied"})
    );
    app.post_round(POOL, round("r2", &["p0", "p1"]))
        .await
        .assert_error(
            StatusCode::CONFLICT,
            "round_conflict",
            Some("id"),
            "a voided id",
        );
    // A platform's retry of what it posted is recognized after a correction, not taken for
    // other content: the round's status now, and nothing changes.
    for (posted, status) in [(posted_r2, "voided"), (posted_r4, "applied")] {
        let id = posted["id"].clone();
        assert_eq!(
            app.post_round(POOL, posted)
                .await
                .assert_status(StatusCode::OK, "a retry of a corrected round"),
            &json!({"id": id, "status": status})
        );
    }

    let (status, _, exported) = app
        .get_text("/v1/pools/main/rounds", "application/x-ndjson")
        .await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        !exported.contains(r#""id":"r2""#),
        "a voided round is not exported"
    );
    assert!(
        !exported.contains("correction"),
        "corrections live in the rounds"
    );
    let csv = replayed_csv(&exported, &display, &["--beta", "150"]);
    let replayed: Vec<(String, f64, f64, Value)> = csv
        .lines()
        .skip(1)
        .map(|line| {
            let fields: Vec<&str> = line.split(',').collect();
            let league = if fields[7].is_empty() {
                Value::Null
            } else {
                json!(fields[7])
            };
            (
                fields[0].to_owned(),
                fields[1].parse().expect("μ"),
                fields[2].parse().expect("σ"),
                league,
            )
        })
        .collect();
    assert!(replayed.iter().any(|(p, ..)| p == "five"));
    let restarted = app.restarted().await;
    for app in [&app, &restarted] {
        assert_eq!(everyone(app).await, replayed);
        // Each player's history is the exported rounds they played, newest first: the
        // rewritten rows chain as the corrected rounds ran.
        for (player, ..) in &replayed {
            let played: Vec<String> = exported
                .lines()
                .rev()
                .filter_map(|line| serde_json::from_str::<Value>(line).ok())
                .filter(|line| {
                    line["standings"]
                        .as_array()
                        .is_some_and(|s| s.iter().any(|e| e["player"] == player.as_str()))
                })
                .map(|line| line["id"].as_str().expect("an id").to_owned())
                .collect();
            assert_eq!(history_ids(app, POOL, player).await, played, "{player}");
        }
    }
}

#[tokio::test]
async fn a_round_whose_id_leaves_no_room_for_void_is_voided_under_its_ids_hash() {
    let app = TestApp::new().await;
    app.create_pool(POOL).await;
    let long = "z".repeat(256);
    app.play([round(&long, &["a", "b"]), round("r2", &["a", "c"])])
        .await;
    let uri = format!("/v1/pools/main/rounds/{long}");
    let void = || app.send(Method::DELETE, &uri, Some(ADMIN_KEY), Payload::Empty);
    let id = format!("void/sha256:{}", hash_key(&long));
    assert_eq!(
        void().await.assert_status(StatusCode::ACCEPTED, "void"),
        &json!({"id": id, "status": "queued", "position": 1})
    );
    app.apply_queued(POOL).await;
    assert_eq!(read(&app, &uri).await["status"], "voided");
    let correction = read(
        &app,
        &format!("/v1/pools/main/rounds/{}", id.replace('/', "%2F")),
    )
    .await;
    assert_eq!(correction["status"], "applied", "{correction}");
    assert_eq!(
        void()
            .await
            .assert_status(StatusCode::OK, "the same void again"),
        &json!({"id": id, "status": "applied"})
    );
}

async fn a_correction_the_worker_cannot_apply_fails_and_changes_nothing(app: TestApp) {
    app.create_pool(POOL).await;
    app.play([round("r1", &["a", "b"]), round("r2", &["b", "c", "a"])])
        .await;
    let before = everyone(&app).await;
    // Taking one of the two entrants out leaves no round: refused when the worker gets there.
    correct(
        &app,
        json!({"id": "dq", "action": "disqualify", "round": "r1", "player": "a"}),
    )
    .await;
    app.apply_queued(POOL).await;
    let stored = read(&app, "/v1/pools/main/rounds/dq").await;
    assert_eq!(stored["status"], "failed");
    assert!(
        stored["error"].as_str().expect("a reason").contains("r1"),
        "{stored}"
    );
    assert_eq!(
        read(&app, "/v1/pools/main/recompute").await["state"],
        "failed"
    );
    for app in [&app, &app.restarted().await] {
        assert_eq!(everyone(app).await, before);
        assert_eq!(
            read(app, "/v1/pools/main/rounds/r1").await["results"]
                .as_array()
                .map(Vec::len),
            Some(2)
        );
    }
}

/// Five voids in a row, one of them of a round voided just before it: the worker rates the pool
/// again once for the voids that apply together, and each ends as it would alone (the repeat
/// fails, having nothing to void), leaving what voiding them one by one leaves.
async fn voids_queued_one_after_another_are_applied_in_one_recomputation_as_one_by_one(
    app: TestApp,
) {
    app.create_pool(POOL).await;
    let players = ["a", "b", "c", "d", "e"];
    app.play((0..12).map(|i| {
        let mut order = players;
        order.rotate_left(i % 5);
        round(&format!("r{i}"), &order)
    }))
    .await;
    let void = |id: &str, round: &str| json!({"id": id, "action": "void", "round": round});
    for (id, target) in [("v1", "r1"), ("v2", "r3"), ("v3", "r5")] {
        correct(&app, void(id, target)).await;
    }
    correct(&app, void("again", "r3")).await;
    correct(&app, void("v4", "r7")).await;
    let pool = app.state.pools.get(POOL).expect("the pool");
    let first = worker::process_next(app.state.storage.as_ref(), &pool)
        .await
        .expect("a step");
    assert_eq!(
        first,
        Processed::Settled(vec![
            Settled::Applied("v1".into()),
            Settled::Applied("v2".into()),
            Settled::Applied("v3".into())
        ]),
        "the three voids before the repeat in one step"
    );
    assert_eq!(
        app.apply_queued(POOL).await,
        [
            Settled::Failed("again".into()),
            Settled::Applied("v4".into())
        ]
    );
    let together = everyone(&app).await;
    // The same rounds without the voided ones, played into another pool.
    let alone = TestApp::new().await;
    alone.create_pool(POOL).await;
    alone
        .play((0..12).filter(|i| ![1, 3, 5, 7].contains(i)).map(|i| {
            let mut order = players;
            order.rotate_left(i % 5);
            round(&format!("r{i}"), &order)
        }))
        .await;
    assert_eq!(
        together,
        everyone(&alone).await,
        "as if they were never played"
    );
}
