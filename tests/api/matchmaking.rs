//! `POST /v1/pools/{pool}/matchmaking`: matches from a waiting list, on the pool's ratings,
//! with each player's quality floor falling as they wait. The search itself (optimality against
//! exhaustion, the floor schedule) is tested in `src/engine/matchmaking.rs`; here: the HTTP
//! shape, that qualities are the pool's match qualities, determinism, and the bounds.

use std::collections::BTreeSet;

use axum::http::StatusCode;
use serde_json::{json, Value};

use crate::support::{num, round, round_at, TestApp, POOL};

const MATCHMAKING: &str = "/v1/pools/main/matchmaking";

/// A pool whose players p0 … p7 finished in that order twice.
async fn rated() -> TestApp {
    let app = TestApp::new().await;
    app.create_pool(POOL).await;
    let players = ["p0", "p1", "p2", "p3", "p4", "p5", "p6", "p7"];
    app.play([round("r1", &players), round("r2", &players)])
        .await;
    app
}

fn waiting(players: &[&str], waited: f64) -> Value {
    players
        .iter()
        .map(|p| json!({"player": p, "waited": waited}))
        .collect()
}

/// Every player named by the answer's matches and waiting list, each once.
fn everyone(answer: &Value) -> Vec<String> {
    let mut named: Vec<String> = answer["waiting"]
        .as_array()
        .expect("waiting")
        .iter()
        .map(|p| p.as_str().expect("an id").to_owned())
        .collect();
    for m in answer["matches"].as_array().expect("matches") {
        for team in m["teams"].as_array().expect("teams") {
            for p in team.as_array().expect("a team") {
                named.push(p.as_str().expect("an id").to_owned());
            }
        }
    }
    named.sort();
    named
}

#[tokio::test]
async fn waiting_players_are_matched_with_the_pools_match_quality_and_the_same_way_twice() {
    let app = rated().await;
    let players = [
        "p0",
        "p1",
        "p2",
        "p3",
        "p4",
        "p5",
        "p6",
        "p7",
        "newcomer-a",
        "newcomer-b",
    ];
    let body = json!({"waiting": waiting(&players, 600.0)});
    let answer = app.post(MATCHMAKING, None, body.clone()).await;
    let answer = answer.assert_status(StatusCode::OK, "1v1").clone();
    let mut expected: Vec<String> = players.iter().map(|p| (*p).to_owned()).collect();
    expected.sort();
    assert_eq!(everyone(&answer), expected, "each player once");
    let matches = answer["matches"].as_array().expect("matches");
    assert_eq!(
        matches.len(),
        5,
        "after ten minutes everyone finds a partner: {answer:#}"
    );
    let mut total = 0.0;
    for m in matches {
        let sides: Vec<Value> = m["teams"].as_array().expect("teams").clone();
        assert_eq!(sides.len(), 2);
        let quality = app
            .post(
                "/v1/pools/main/match-quality",
                None,
                json!({"sides": sides}),
            )
            .await;
        let quality = num(&quality.assert_status(StatusCode::OK, "quality")["quality"]);
        assert!(
            (num(&m["quality"]) - quality).abs() < 1e-12,
            "{m}: {quality}"
        );
        total += quality;
    }
    assert!((num(&answer["total_quality"]) - total).abs() < 1e-9);
    let pairs: BTreeSet<Vec<String>> = matches
        .iter()
        .map(|m| {
            let mut pair: Vec<String> = everyone(&json!({"waiting": [], "matches": [m]}));
            pair.sort();
            pair
        })
        .collect();
    assert!(
        pairs.contains(&vec!["newcomer-a".to_owned(), "newcomer-b".to_owned()]),
        "the two newcomers, rated alike, play each other: {pairs:?}"
    );
    let again = app.post(MATCHMAKING, None, body).await;
    assert_eq!(again.assert_status(StatusCode::OK, "again"), &answer);
}

#[tokio::test]
async fn a_fresh_player_waits_for_an_even_match_and_teams_are_balanced() {
    let app = rated().await;
    let strict = json!({
        "waiting": waiting(&["p0", "p7"], 0.0),
        "relaxation": {"start": 0.9, "per_second": 0.0, "min": 0.9},
    });
    let answer = app.post(MATCHMAKING, None, strict).await;
    let answer = answer.assert_status(StatusCode::OK, "strict");
    assert_eq!(answer["matches"], json!([]));
    assert_eq!(answer["waiting"], json!(["p0", "p7"]));
    let total = num(&answer["total_quality"]);
    assert!(
        total == 0.0 && total.is_sign_positive(),
        "no match: a total quality of 0, not -0: {answer}"
    );

    let teams = json!({
        "waiting": waiting(&["p0", "p1", "p2", "p3"], 300.0),
        "team_size": 2,
        "teams": 2,
    });
    let answer = app.post(MATCHMAKING, None, teams).await;
    let answer = answer.assert_status(StatusCode::OK, "2v2");
    let sides = &answer["matches"][0]["teams"];
    let mut sorted: Vec<Vec<String>> = sides
        .as_array()
        .expect("teams")
        .iter()
        .map(|t| {
            let mut team: Vec<String> = serde_json::from_value(t.clone()).expect("ids");
            team.sort();
            team
        })
        .collect();
    sorted.sort();
    assert_eq!(
        sorted,
        [["p0", "p3"], ["p1", "p2"]],
        "the best and the worst against the two in the middle"
    );
}

#[tokio::test]
async fn bad_waiting_lists_and_formats_are_refused_naming_the_field() {
    let app = rated().await;
    let many: Vec<String> = (0..10_001).map(|i| format!("x{i}")).collect();
    let many: Vec<&str> = many.iter().map(String::as_str).collect();
    for (body, field) in [
        (json!({"waiting": []}), "waiting"),
        (json!({"waiting": waiting(&many, 0.0)}), "waiting"),
        (
            json!({"waiting": waiting(&["a", "b", "a", "c"], 0.0)}),
            "waiting[2].player",
        ),
        (
            json!({"waiting": waiting(&["a", ""], 0.0)}),
            "waiting[1].player",
        ),
        (
            json!({"waiting": waiting(&["a", &"x".repeat(257)], 0.0)}),
            "waiting[1].player",
        ),
        (
            json!({"waiting": waiting(&["a", "b"], -1.0)}),
            "waiting[0].waited",
        ),
        (
            json!({"waiting": waiting(&["a", "b"], 0.0), "team_size": 0}),
            "team_size",
        ),
        (
            json!({"waiting": waiting(&["a", "b"], 0.0), "teams": 1}),
            "teams",
        ),
        (
            json!({"waiting": waiting(&["a", "b", "c"], 0.0), "team_size": 2}),
            "team_size",
        ),
        (
            json!({"waiting": waiting(&["a", "b"], 0.0), "team_size": 2, "teams": 6}),
            "teams",
        ),
        (
            json!({"waiting": waiting(&["a", "b"], 0.0), "relaxation": {"start": 1.5}}),
            "relaxation.start",
        ),
        (
            json!({"waiting": waiting(&["a", "b"], 0.0), "relaxation": {"per_second": -1}}),
            "relaxation.per_second",
        ),
    ] {
        app.post(MATCHMAKING, None, body.clone())
            .await
            .assert_error(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_matchmaking",
                Some(field),
                &body.to_string()[..body.to_string().len().min(120)],
            );
    }
    app.post(
        MATCHMAKING,
        None,
        json!({"waiting": waiting(&["a", "b"], 0.0), "mode": "ranked"}),
    )
    .await
    .assert_error(
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_request",
        Some("mode"),
        "unknown field",
    );
    app.post(
        "/v1/pools/nowhere/matchmaking",
        None,
        json!({"waiting": waiting(&["a", "b"], 0.0)}),
    )
    .await
    .assert_error(StatusCode::NOT_FOUND, "pool_not_found", None, "no pool");
}

#[tokio::test]
async fn a_players_best_opponents_are_the_active_ones_of_highest_quality() {
    let app = TestApp::new().await;
    app.create_pool(POOL).await;
    app.play([
        round_at("r1", "2026-01-01T00:00:00Z", &["a", "b", "c", "d"]),
        round_at("r2", "2026-03-01T00:00:00Z", &["e", "a", "b"]),
    ])
    .await;
    let recent = app.get("/v1/pools/main/players/a/opponents").await;
    let recent = recent
        .assert_status(StatusCode::OK, "the last 30 days")
        .clone();
    assert_eq!(
        recent["active"], 2,
        "c and d last played 59 days before the newest round"
    );
    let wide = app
        .get("/v1/pools/main/players/a/opponents?active_days=100&limit=3")
        .await;
    let wide = wide.assert_status(StatusCode::OK, "100 days").clone();
    assert_eq!(wide["active"], 4);
    let listed = wide["opponents"].as_array().expect("opponents");
    assert_eq!(listed.len(), 3);
    let mut previous = f64::INFINITY;
    for opponent in listed {
        let id = opponent["player"].as_str().expect("an id");
        let sides = json!({"sides": [["a"], [id]]});
        let quality = app.post("/v1/pools/main/match-quality", None, sides).await;
        let quality = num(&quality.assert_status(StatusCode::OK, id)["quality"]);
        assert!(
            (num(&opponent["quality"]) - quality).abs() < 1e-12,
            "{opponent}"
        );
        assert!(quality <= previous, "best first");
        previous = quality;
        let p = app
            .get(&format!("/v1/pools/main/win-probability?a=a&b={id}"))
            .await;
        assert_eq!(
            opponent["p_win"],
            p.assert_status(StatusCode::OK, id)["p_a"]
        );
    }
    for (uri, status, code, field) in [
        (
            "/v1/pools/main/players/nobody/opponents",
            StatusCode::NOT_FOUND,
            "player_not_found",
            None,
        ),
        (
            "/v1/pools/main/players/a/opponents?limit=0",
            StatusCode::BAD_REQUEST,
            "invalid_query",
            Some("limit"),
        ),
        (
            "/v1/pools/main/players/a/opponents?limit=101",
            StatusCode::BAD_REQUEST,
            "invalid_query",
            Some("limit"),
        ),
        (
            "/v1/pools/main/players/a/opponents?active_days=0",
            StatusCode::BAD_REQUEST,
            "invalid_query",
            Some("active_days"),
        ),
        (
            "/v1/pools/main/players/a/opponents?active_days=soon",
            StatusCode::BAD_REQUEST,
            "invalid_query",
            Some("active_days"),
        ),
    ] {
        app.get(uri).await.assert_error(status, code, field, uri);
    }
}
