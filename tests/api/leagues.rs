//! Leagues and divisions on both backends: placement after the placement rounds, divisions
//! filled in rank order, `league_before`/`league_after` in round results and histories,
//! `?league=` leaderboards and `/leagues` counts, all surviving a restart; and new leagues on a
//! pool with history recomputed to exactly what they would have been from the start.

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};

use crate::support::{num, round, round_at, Payload, TestApp, ADMIN_KEY, POOL};

backend_tests!(
    leagues_place_players_as_rounds_are_applied_and_survive_a_restart,
    new_leagues_are_recomputed_from_history_as_if_set_from_the_start,
    replay_with_the_pools_display_settings_gives_the_leagues_the_service_gives,
);

pub(crate) async fn put_leagues(app: &TestApp, pool: &str, leagues: Value) -> Value {
    app.send(
        Method::PATCH,
        &format!("/v1/pools/{pool}/display"),
        Some(ADMIN_KEY),
        Payload::Json(json!({ "leagues": leagues })),
    )
    .await
    .assert_status(StatusCode::OK, "patch the leagues")
    .clone()
}

/// `PUT /v1/pools/{pool}/display` with `display`, which must be taken.
pub(crate) async fn put_display(app: &TestApp, pool: &str, display: Value) -> Value {
    app.send(
        Method::PUT,
        &format!("/v1/pools/{pool}/display"),
        Some(ADMIN_KEY),
        Payload::Json(display),
    )
    .await
    .assert_status(StatusCode::OK, "put the display settings")
    .clone()
}

pub(crate) async fn read(app: &TestApp, uri: &str) -> Value {
    app.get(uri)
        .await
        .assert_status(StatusCode::OK, uri)
        .clone()
}

/// Bronze, silver from 1200 and gold from 1500, judged on μ alone, after two rounds, one
/// player per division.
fn by_mu() -> Value {
    json!({
        "k": 0,
        "placement_rounds": 2,
        "division_size": 1,
        "tiers": [
            {"name": "bronze"},
            {"name": "silver", "threshold": 1200},
            {"name": "gold", "threshold": 1500}
        ]
    })
}

/// The league μ reaches under [`by_mu`].
fn league_of(mu: f64) -> &'static str {
    if mu >= 1500.0 {
        "gold"
    } else if mu >= 1200.0 {
        "silver"
    } else {
        "bronze"
    }
}

async fn leagues_place_players_as_rounds_are_applied_and_survive_a_restart(app: TestApp) {
    app.create_pool(POOL).await;
    put_leagues(&app, POOL, by_mu()).await;
    app.play([
        round("r1", &["a", "b", "c", "d"]),
        round("r2", &["a", "b", "c"]),
    ])
    .await;

    // d played once: not placed yet. The others are placed by μ; one player per division, so
    // each league's divisions count its players in rank order.
    let results = read(&app, "/v1/pools/main/rounds/r2").await["results"].clone();
    let mut seated = std::collections::HashMap::new();
    let mut expected = Vec::new();
    for result in results.as_array().expect("results") {
        let player = result["player"].as_str().expect("a player");
        let league = league_of(num(&result["mu_after"]));
        let division = seated.entry(league).or_insert(0u64);
        *division += 1;
        let placement = json!({"league": league, "division": *division});
        assert_eq!(result["league_before"], Value::Null, "{player}");
        assert_eq!(result["league_after"], placement, "{player}");
        expected.push((player.to_owned(), placement));
    }
    let first = read(&app, "/v1/pools/main/rounds/r1").await["results"].clone();
    for result in first.as_array().expect("results") {
        assert_eq!(
            result["league_after"],
            Value::Null,
            "one round is not enough"
        );
    }

    for app in [&app, &app.restarted().await] {
        for (player, placement) in &expected {
            let shown = read(app, &format!("/v1/pools/main/players/{player}")).await;
            assert_eq!(shown["league"], *placement, "{player}");
            let history = read(app, &format!("/v1/pools/main/players/{player}/history")).await;
            let entries = history["entries"].as_array().expect("entries");
            assert_eq!(entries[0]["league_after"], *placement, "{player}: r2");
            assert_eq!(entries[1]["league_after"], Value::Null, "{player}: r1");
        }
        assert_eq!(
            read(app, "/v1/pools/main/players/d").await["league"],
            Value::Null
        );

        let leagues = read(app, "/v1/pools/main/leagues").await;
        assert_eq!(leagues["unplaced"], 1);
        for league in leagues["leagues"].as_array().expect("leagues") {
            let name = league["name"].as_str().expect("a name");
            let count = seated.get(name).copied().unwrap_or(0);
            assert_eq!(
                (league["players"].as_u64(), league["divisions"].as_u64()),
                (Some(count), Some(count)),
                "{name}"
            );
        }

        for (name, count) in &seated {
            let page = read(app, &format!("/v1/pools/main/leaderboard?league={name}")).await;
            assert_eq!(page["total"].as_u64(), Some(*count), "{name}");
            let entries = page["entries"].as_array().expect("entries");
            let positions: Vec<u64> = entries
                .iter()
                .map(|e| e["position"].as_u64().expect("a position"))
                .collect();
            assert_eq!(
                positions,
                (1..=*count).collect::<Vec<_>>(),
                "{name}: positions count the league only"
            );
            for entry in entries {
                assert_eq!(entry["league"]["league"], *name, "{entry}");
            }
            let mus: Vec<f64> = entries.iter().map(|e| num(&e["mu"])).collect();
            assert!(mus.windows(2).all(|w| w[0] >= w[1]), "{name}: best first");
        }

        app.get("/v1/pools/main/leaderboard?league=platinum")
            .await
            .assert_error(
                StatusCode::BAD_REQUEST,
                "invalid_query",
                Some("league"),
                "unknown league",
            );
        app.get("/v1/pools/main/leaderboard?league=gold&established=true")
            .await
            .assert_error(
                StatusCode::BAD_REQUEST,
                "invalid_query",
                Some("established"),
                "both filters",
            );
    }
}

/// What `mmr-service replay --display` writes with `--output` (CSV) for the JSON Lines `input`
/// and the display settings `display`, with the further flags `extra`.
pub(crate) fn replayed_csv(input: &str, display: &Value, extra: &[&str]) -> String {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).expect("writable");
        path.to_str().expect("a UTF-8 path").to_owned()
    };
    let (input, settings) = (
        path("rounds.jsonl", input),
        path("display.json", &display.to_string()),
    );
    let output = path("ratings.csv", "");
    let ran = std::process::Command::new(env!("CARGO_BIN_EXE_mmr-service"))
        .args([
            "replay",
            "--input",
            &input,
            "--display",
            &settings,
            "--output",
            &output,
        ])
        .args(extra)
        .output()
        .expect("the binary runs");
    assert!(
        ran.status.success(),
        "{}",
        String::from_utf8_lossy(&ran.stderr)
    );
    std::fs::read_to_string(&output).expect("the ratings")
}

/// Everything the API shows about leagues in `pool`: each round's results and each player's.
pub(crate) async fn leagues_shown(
    app: &TestApp,
    pool: &str,
    rounds: &[Value],
    players: &[String],
) -> Value {
    let mut shown = serde_json::Map::new();
    for r in rounds {
        let id = r["id"].as_str().expect("an id");
        let results = read(app, &format!("/v1/pools/{pool}/rounds/{id}")).await["results"].clone();
        let moves: Vec<Value> = results
            .as_array()
            .expect("results")
            .iter()
            .map(|r| json!([r["player"], r["league_before"], r["league_after"]]))
            .collect();
        shown.insert(id.to_owned(), json!(moves));
    }
    for player in players {
        let p = read(app, &format!("/v1/pools/{pool}/players/{player}")).await;
        shown.insert(player.clone(), p["league"].clone());
    }
    let leagues = read(app, &format!("/v1/pools/{pool}/leagues")).await;
    shown.insert(
        "leagues".into(),
        json!([leagues["leagues"], leagues["unplaced"]]),
    );
    Value::Object(shown)
}

/// Five leagues a few players climb and fall through in [`ladder_rounds`].
pub(crate) fn ladder() -> Value {
    json!({
        "k": 1,
        "placement_rounds": 1,
        "division_size": 2,
        "tiers": [
            {"name": "iron"},
            {"name": "bronze", "threshold": 1200},
            {"name": "silver", "threshold": 1400},
            {"name": "gold", "threshold": 1550},
            {"name": "master", "threshold": 1700}
        ],
        "points": {"k": 24, "lowest_floor": 1000, "bonus_per_day": 10,
                   "bonus_since": "2026-01-01T00:00:00Z"}
    })
}

/// Players `p0` to `p7`, and rounds in which the same players keep winning, then lose:
/// promotions, then demotions.
pub(crate) fn ladder_rounds() -> (Vec<String>, Vec<Value>) {
    let players: Vec<String> = (0..8).map(|i| format!("p{i}")).collect();
    let rounds = (0..10)
        .map(|r| {
            let mut order: Vec<&str> = players.iter().map(String::as_str).collect();
            order.rotate_left(if r < 6 { r % 2 } else { 4 + r % 3 });
            order.truncate(8 - r % 3);
            let time = format!("2026-02-{:02}T12:00:00Z", r + 1);
            round_at(&format!("r{r}"), &time, &order)
        })
        .collect();
    (players, rounds)
}

async fn new_leagues_are_recomputed_from_history_as_if_set_from_the_start(app: TestApp) {
    let leagues = ladder();
    let (players, rounds) = ladder_rounds();

    app.create_pool(POOL).await;
    app.create_pool("other").await;
    put_leagues(&app, "other", leagues.clone()).await;
    for r in &rounds {
        app.queue_round(r.clone()).await;
        app.post_round("other", r.clone())
            .await
            .assert_status(StatusCode::ACCEPTED, "queue");
    }
    app.apply_queued(POOL).await;
    app.apply_queued("other").await;

    let from_the_start = leagues_shown(&app, "other", &rounds, &players).await;
    let moved = from_the_start.to_string();
    assert!(
        moved.contains("master") && moved.contains("iron"),
        "{moved}"
    );
    let points: Vec<f64> = players
        .iter()
        .filter_map(|p| from_the_start[p.as_str()]["points"].as_f64())
        .collect();
    assert_eq!(
        points.len(),
        players.len(),
        "every placed player has points: {moved}"
    );
    assert!(points.iter().any(|&p| p > 0.0), "{points:?}");

    put_leagues(&app, POOL, leagues).await;
    assert_eq!(
        leagues_shown(&app, POOL, &rounds, &players).await,
        from_the_start
    );
    let restarted = app.restarted().await;
    assert_eq!(
        leagues_shown(&restarted, POOL, &rounds, &players).await,
        from_the_start
    );

    // And a round after the change goes on from the recomputed leagues.
    let next = round_at("r10", "2026-03-01T12:00:00Z", &["p7", "p6", "p5"]);
    app.play([next.clone()]).await;
    app.post_round("other", next.clone())
        .await
        .assert_status(StatusCode::ACCEPTED, "queue");
    app.apply_queued("other").await;
    let all: Vec<Value> = rounds.iter().cloned().chain([next]).collect();
    assert_eq!(
        leagues_shown(&app, POOL, &all, &players).await,
        leagues_shown(&app, "other", &all, &players).await
    );

    // Taking the leagues away takes every player out of them, history included.
    app.send(
        Method::PUT,
        "/v1/pools/main/display",
        Some(ADMIN_KEY),
        Payload::Json(json!({})),
    )
    .await
    .assert_status(StatusCode::OK, "no leagues");
    for app in [&app, &app.restarted().await] {
        let shown = leagues_shown(app, POOL, &all, &players).await.to_string();
        assert!(!shown.contains("division"), "{shown}");
        assert_eq!(
            read(app, "/v1/pools/main/leagues").await["leagues"],
            json!([])
        );
    }
}

async fn replay_with_the_pools_display_settings_gives_the_leagues_the_service_gives(app: TestApp) {
    let (players, rounds) = ladder_rounds();
    let display = json!({"conservative_k": 2, "leagues": ladder()});
    app.create_pool(POOL).await;
    put_display(&app, POOL, display.clone()).await;
    app.play(rounds.clone()).await;

    let lines: Vec<String> = rounds.iter().map(Value::to_string).collect();
    let csv = replayed_csv(&lines.join("\n"), &display, &[]);
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some(
            "player,mu,sigma,rounds,conservative,display_rating,provisional,league,division,points"
        )
    );
    let mut replayed = Vec::new();
    for line in lines {
        let fields: Vec<&str> = line.split(',').collect();
        let placement = match (fields[7], fields[8]) {
            ("", "") => Value::Null,
            (league, division) => json!({
                "league": league,
                "division": division.parse::<u64>().expect("a division"),
                "points": fields[9].parse::<f64>().expect("points"),
            }),
        };
        replayed.push((
            fields[0].to_owned(),
            fields[4].parse::<f64>().expect("a number"),
            placement,
        ));
    }
    assert_eq!(replayed.len(), players.len());
    for (player, conservative, placement) in replayed {
        let shown = read(&app, &format!("/v1/pools/main/players/{player}")).await;
        assert_eq!(shown["league"], placement, "{player}");
        assert_eq!(num(&shown["conservative"]), conservative, "{player}");
    }
}
