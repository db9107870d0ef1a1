//! `GET /v1/pools/{pool}/players/{player}`, `…/players/{player}/history`,
//! `GET /v1/pools/{pool}/players?prefix=` and `POST /v1/pools/{pool}/player-ratings`.

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};

use crate::support::{num, round, round_at, Payload, TestApp, ADMIN_KEY, POOL};

backend_tests!(
    a_players_last_change_and_peak_come_from_their_rounds_through_seasons_and_restarts,
    many_players_are_read_at_once_as_one_by_one_with_unknown_ones_apart,
);

const PLAYERS: &str = "/v1/pools/main/players";

/// A pool in which `a` played five rounds (`r1` … `r5`, a day apart) and `b`, `c` some of them.
async fn five_rounds() -> TestApp {
    let app = TestApp::new().await;
    app.create_pool(POOL).await;
    app.play([
        round_at("r1", "2024-01-01T00:00:00Z", &["a", "b"]),
        round_at("r2", "2024-01-02T00:00:00Z", &["b", "a", "c"]),
        round_at("r3", "2024-01-03T00:00:00Z", &["b", "c"]),
        round_at("r4", "2024-01-04T00:00:00Z", &["a", "c"]),
        round_at("r5", "2024-01-05T00:00:00Z", &["c", "a"]),
        round_at("r6", "2024-01-06T00:00:00Z", &["a", "b", "c"]),
    ])
    .await;
    app
}

#[tokio::test]
async fn getting_a_player_returns_their_rating_position_and_last_round() {
    let app = TestApp::new().await;
    app.create_plain_pool(POOL).await;
    app.play([
        round_at("r1", "2024-03-01T10:30:00Z", &["a", "b", "c"]),
        round("r2", &["a", "c"]),
    ])
    .await;
    let response = app.get(&format!("{PLAYERS}/a")).await;
    let a = response.assert_status(StatusCode::OK, "a").clone();
    assert_eq!(a["player"], "a");
    assert_eq!(a["position"], 1, "a won both rounds");
    assert_eq!(
        (&a["total"], num(&a["top_percent"])),
        (&json!(3), 100.0 / 3.0)
    );
    assert_eq!(a["rounds"], 2);
    assert_eq!(a["last_round"], json!({"id": "r2", "time": null}));
    assert_eq!(
        num(&a["conservative"]),
        num(&a["mu"]) - 3.0 * num(&a["sigma"])
    );
    let b = app.get(&format!("{PLAYERS}/b")).await;
    let b = b.assert_status(StatusCode::OK, "b");
    assert_eq!(
        b["last_round"],
        json!({"id": "r1", "time": "2024-03-01T10:30:00Z"})
    );
    let positions: Vec<(f64, u64)> = {
        let mut positions = Vec::new();
        for player in ["a", "b", "c"] {
            let response = app.get(&format!("{PLAYERS}/{player}")).await;
            let body = response.assert_status(StatusCode::OK, player);
            positions.push((
                num(&body["mu"]),
                body["position"].as_u64().expect("a position"),
            ));
        }
        positions
    };
    let mut by_mu = positions.clone();
    by_mu.sort_by(|x, y| y.0.total_cmp(&x.0));
    assert_eq!(
        by_mu.iter().map(|p| p.1).collect::<Vec<_>>(),
        [1, 2, 3],
        "positions follow mu: {positions:?}"
    );
}

#[tokio::test]
async fn a_players_position_is_their_place_on_the_pools_default_leaderboard() {
    let app = TestApp::new().await;
    app.create_pool(POOL).await;
    app.play([
        round("r1", &["a", "b", "c"]),
        round("r2", &["b", "a"]),
        round("r3", &["a", "b"]),
        round("r4", &["c", "a", "b"]),
    ])
    .await;
    let board = app.get("/v1/pools/main/leaderboard").await.body;
    assert_eq!(board["total"], 2, "c has two rounds: provisional");
    for entry in board["entries"].as_array().expect("entries") {
        let player = app
            .get(&format!(
                "{PLAYERS}/{}",
                entry["player"].as_str().expect("id")
            ))
            .await
            .body;
        assert_eq!(
            (&player["position"], &player["total"]),
            (&entry["position"], &json!(2))
        );
        let as_of = app
            .get(&format!(
                "{PLAYERS}/{}?as_of=r4",
                entry["player"].as_str().expect("id")
            ))
            .await
            .body;
        assert_eq!(as_of, player, "the newest round's board is today's");
    }
    let c = app.get(&format!("{PLAYERS}/c")).await.body;
    assert_eq!(
        (
            &c["position"],
            &c["total"],
            &c["top_percent"],
            &c["provisional"]
        ),
        (&Value::Null, &json!(2), &Value::Null, &json!(true)),
        "not on the board"
    );
}

#[tokio::test]
async fn getting_an_unknown_player_returns_404() {
    let app = TestApp::new().await;
    app.create_pool(POOL).await;
    app.play([round("r1", &["a", "b"])]).await;
    let cases = [
        (
            format!("{PLAYERS}/nobody"),
            "player_not_found",
            "an unknown player",
        ),
        (
            "/v1/pools/nowhere/players/a".to_owned(),
            "pool_not_found",
            "an unknown pool",
        ),
        (
            format!("{PLAYERS}/nobody/history"),
            "player_not_found",
            "the history of an unknown player",
        ),
        (
            "/v1/pools/nowhere/players/a/history".to_owned(),
            "pool_not_found",
            "a history in an unknown pool",
        ),
    ];
    for (uri, code, case) in cases {
        app.get(&uri)
            .await
            .assert_error(StatusCode::NOT_FOUND, code, None, case);
    }
}

#[tokio::test]
async fn a_players_history_lists_the_rounds_they_played_newest_first() {
    let app = five_rounds().await;
    let response = app.get(&format!("{PLAYERS}/a/history")).await;
    let body = response.assert_status(StatusCode::OK, "history");
    assert_eq!(body["player"], "a");
    assert!(body["next_before"].is_null(), "one page holds it all");
    let entries = body["entries"].as_array().expect("entries");
    let ids: Vec<_> = entries.iter().map(|e| e["round_id"].clone()).collect();
    assert_eq!(
        ids,
        ["r6", "r5", "r4", "r2", "r1"].map(|id| json!(id)),
        "r3 without a"
    );
    let newest = &entries[0];
    assert_eq!(
        (&newest["time"], &newest["rank"], &newest["entrants"]),
        (&json!("2024-01-06T00:00:00Z"), &json!(1), &json!(3))
    );
    assert_eq!(
        (&entries[1]["rank"], &entries[1]["entrants"]),
        (&json!(2), &json!(2))
    );
    let current = app.get(&format!("{PLAYERS}/a")).await;
    let current = current.assert_status(StatusCode::OK, "a");
    assert_eq!(
        (&newest["mu"], &newest["sigma"]),
        (&current["mu"], &current["sigma"]),
        "the newest entry is the rating now"
    );
    for pair in entries.windows(2) {
        let (newer, older) = (&pair[0], &pair[1]);
        assert_eq!(
            (&newer["mu_before"], &newer["sigma_before"]),
            (&older["mu"], &older["sigma"]),
            "each round starts where the one before ended"
        );
    }
    for entry in entries {
        assert_eq!(
            num(&entry["delta"]),
            num(&entry["mu"]) - num(&entry["mu_before"])
        );
        assert!(entry["performance"].is_f64());
    }
    let oldest = &entries[4];
    assert_eq!(
        (num(&oldest["mu_before"]), num(&oldest["sigma_before"])),
        (1500.0, 350.0)
    );
}

#[tokio::test]
async fn a_players_history_pages_with_next_before_and_shows_every_round_once() {
    let app = five_rounds().await;
    let mut pages: Vec<Vec<Value>> = Vec::new();
    let mut uri = format!("{PLAYERS}/a/history?limit=2");
    loop {
        let response = app.get(&uri).await;
        let body = response.assert_status(StatusCode::OK, &uri);
        pages.push(
            body["entries"]
                .as_array()
                .expect("entries")
                .iter()
                .map(|e| e["round_id"].clone())
                .collect(),
        );
        match body["next_before"].as_i64() {
            Some(before) => uri = format!("{PLAYERS}/a/history?limit=2&before={before}"),
            None => break,
        }
        assert!(pages.len() < 10, "the pages end");
    }
    assert_eq!(
        pages,
        [vec!["r6", "r5"], vec!["r4", "r2"], vec!["r1"]]
            .map(|page| page.into_iter().map(|id| json!(id)).collect::<Vec<_>>())
    );
}

#[tokio::test]
async fn a_history_query_out_of_range_returns_400_naming_the_parameter() {
    let app = five_rounds().await;
    let cases = [
        ("limit=0", "limit", "a limit of 0"),
        ("limit=1001", "limit", "a limit over 1000"),
        ("limit=ten", "limit", "a limit that is not a number"),
        ("limit=-1", "limit", "a negative limit"),
        (
            "before=yesterday",
            "before",
            "a cursor that is not a number",
        ),
    ];
    for (query, field, case) in cases {
        app.get(&format!("{PLAYERS}/a/history?{query}"))
            .await
            .assert_error(StatusCode::BAD_REQUEST, "invalid_query", Some(field), case);
    }
    app.get(&format!("{PLAYERS}/a/history?limit=1000"))
        .await
        .assert_status(StatusCode::OK, "1000 is the largest limit");
}

#[tokio::test]
async fn searching_players_by_prefix_finds_them_by_id_case_ignored() {
    let app = TestApp::new().await;
    app.create_pool(POOL).await;
    app.play([round("r1", &["alina", "bob", "albert", "alice", "Alfred"])])
        .await;
    let cases = [
        ("?prefix=ali", vec!["alice", "alina"], "a prefix"),
        (
            "?prefix=AL&limit=3",
            vec!["albert", "Alfred", "alice"],
            "case ignored, by the id in lowercase",
        ),
        ("?prefix=al&limit=2", vec!["albert", "Alfred"], "a limit"),
        ("?prefix=bob", vec!["bob"], "a whole id"),
        ("?prefix=z", vec![], "no match"),
        (
            "",
            vec!["albert", "Alfred", "alice", "alina", "bob"],
            "no prefix: everyone",
        ),
    ];
    for (query, expected, case) in cases {
        let response = app.get(&format!("{PLAYERS}{query}")).await;
        let players = response.assert_status(StatusCode::OK, case)["players"]
            .as_array()
            .expect("players")
            .clone();
        let ids: Vec<_> = players.iter().map(|p| p["player"].clone()).collect();
        assert_eq!(
            ids,
            expected.iter().map(|id| json!(id)).collect::<Vec<_>>(),
            "{case}"
        );
        for player in &players {
            let single = app
                .get(&format!(
                    "{PLAYERS}/{}",
                    player["player"].as_str().expect("an id")
                ))
                .await;
            // Only a player's own page reads their peak.
            let mut single = single.assert_status(StatusCode::OK, case).clone();
            assert!(single["peak"].is_object(), "{case}");
            single["peak"] = Value::Null;
            assert_eq!(
                &single, player,
                "{case}: a match reads as the player itself"
            );
        }
    }
}

#[tokio::test]
async fn searching_players_with_a_bad_limit_or_in_an_unknown_pool_is_refused() {
    let app = TestApp::new().await;
    app.create_pool(POOL).await;
    for (query, case) in [
        ("limit=0", "a limit of 0"),
        ("limit=1001", "a limit over 1000"),
    ] {
        app.get(&format!("{PLAYERS}?prefix=a&{query}"))
            .await
            .assert_error(
                StatusCode::BAD_REQUEST,
                "invalid_query",
                Some("limit"),
                case,
            );
    }
    app.get("/v1/pools/nowhere/players?prefix=a")
        .await
        .assert_error(
            StatusCode::NOT_FOUND,
            "pool_not_found",
            None,
            "unknown pool",
        );
}

/// What `player`'s history up to round `as_of` (all of it when `None`) says their last change
/// and their peak (by μ − kσ) must be, as the API shows both.
async fn from_history(app: &TestApp, player: &str, as_of: Option<&str>, k: f64) -> (Value, Value) {
    let history = app
        .get(&format!("{PLAYERS}/{player}/history?limit=1000"))
        .await
        .assert_status(StatusCode::OK, "history")
        .clone();
    let newest_first: Vec<&Value> = history["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .skip_while(|e| as_of.is_some_and(|round| e["round_id"] != round))
        .collect();
    let last = newest_first[0];
    let difference = |field: &str| match (
        &last[format!("{field}_after")],
        &last[format!("{field}_before")],
    ) {
        (Value::Null, _) => Value::Null,
        (after, before) => json!(num(after) - num(before)),
    };
    let change = json!({
        "mu": num(&last["mu"]) - num(&last["mu_before"]),
        "conservative": difference("conservative"),
        "display_rating": difference("display_rating"),
    });
    let key = |e: &Value| num(&e["mu"]) - k * num(&e["sigma"]);
    let mut peak = newest_first[newest_first.len() - 1];
    for e in newest_first.iter().rev() {
        if key(e) > key(peak) {
            peak = e;
        }
    }
    let peak = json!({
        "round": {"id": peak["round_id"], "time": peak["time"]},
        "mu": peak["mu"],
        "sigma": peak["sigma"],
        "conservative": peak["conservative_after"],
        "display_rating": peak["display_rating_after"],
    });
    (change, peak)
}

/// Whether every player's last change and peak, on their page and their row, are what their
/// history says, now or `as_of`.
async fn agree(app: &TestApp, as_of: Option<&str>, k: f64) {
    for player in ["a", "b", "c"] {
        let (change, peak) = from_history(app, player, as_of, k).await;
        assert_eq!(
            shown(app, player, as_of).await,
            (change.clone(), change, peak),
            "{player} as of {as_of:?}"
        );
    }
}

/// `player`'s last change and peak on their page and their leaderboard row, now or `as_of`.
async fn shown(app: &TestApp, player: &str, as_of: Option<&str>) -> (Value, Value, Value) {
    let query = as_of.map_or_else(String::new, |round| format!("as_of={round}&"));
    let page = app
        .get(&format!("{PLAYERS}/{player}?{query}"))
        .await
        .assert_status(StatusCode::OK, "the player")
        .clone();
    let board = app
        .get(&format!(
            "/v1/pools/main/leaderboard?{query}order=mu&established=false&limit=1000"
        ))
        .await
        .assert_status(StatusCode::OK, "the leaderboard")
        .clone();
    let row = board["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .find(|e| e["player"] == player)
        .expect("listed")
        .clone();
    (
        page["last_change"].clone(),
        row["last_change"].clone(),
        page["peak"].clone(),
    )
}

async fn a_players_last_change_and_peak_come_from_their_rounds_through_seasons_and_restarts(
    app: TestApp,
) {
    app.create_pool(POOL).await;
    // `a` wins the first round and comes last in the others: μ is highest after r1.
    app.play([
        round_at("r1", "2024-01-01T00:00:00Z", &["a", "b", "c"]),
        round("r2", &["b", "c", "a"]),
        round("r3", &["c", "b", "a"]),
    ])
    .await;
    agree(&app, None, 3.0).await;
    agree(&app, Some("r2"), 3.0).await;
    let restarted = app.restarted().await;
    agree(&restarted, None, 3.0).await;

    app.post(
        "/v1/pools/main/seasons",
        Some(ADMIN_KEY),
        json!({"id": "s2", "mu_reset": 0.5, "sigma_reset": 0.5}),
    )
    .await
    .assert_status(StatusCode::ACCEPTED, "a season");
    app.apply_queued(POOL).await;
    app.play([round("r4", &["b", "c"])]).await;
    for app in [&app, &app.restarted().await] {
        let (a, a_row, _) = shown(app, "a", None).await;
        assert_eq!((a, a_row), (Value::Null, Value::Null), "reset since r3");
        let (b, _) = from_history(app, "b", None, 3.0).await;
        assert_eq!(shown(app, "b", None).await.0, b, "played since");
        agree(app, Some("r3"), 3.0).await;
    }

    // With a fixed range the peak is the highest μ, and changes show on its scale too. (A
    // fixed center and scale: history shows display ratings with today's automatic ones, an
    // as-of read with those of its board.)
    app.send(
        Method::PATCH,
        "/v1/pools/main/display",
        Some(ADMIN_KEY),
        Payload::Json(json!({"fixed_range": {"max": 3000, "center": 1500, "scale": 200}})),
    )
    .await
    .assert_status(StatusCode::OK, "a fixed range");
    agree(&app, Some("r3"), 0.0).await;
    let (_, _, peak) = shown(&app, "a", None).await;
    assert_eq!(
        peak["round"],
        json!({"id": "r1", "time": "2024-01-01T00:00:00Z"})
    );

    // Without the peak, the page is the same but for it.
    let page = |query: &'static str| {
        let app = &app;
        async move {
            let uri = format!("{PLAYERS}/a{query}");
            app.get(&uri)
                .await
                .assert_status(StatusCode::OK, &uri)
                .clone()
        }
    };
    let mut whole = page("").await;
    whole["peak"] = Value::Null;
    assert_eq!(page("?peak=false").await, whole);
    assert_eq!(page("?peak=true").await["peak"], peak);
    app.get(&format!("{PLAYERS}/a?peak=maybe"))
        .await
        .assert_error(
            StatusCode::BAD_REQUEST,
            "invalid_query",
            Some("peak"),
            "a bad peak",
        );
}

/// `POST …/player-ratings`: many players at once, each as `GET …/players/{player}?peak=false`
/// gives them, in the order asked (a repeated id again), the ids the pool has not rated listed
/// apart; positions in the order asked for; and a list that is empty, too long or holds a bad
/// id refused naming it.
async fn many_players_are_read_at_once_as_one_by_one_with_unknown_ones_apart(app: TestApp) {
    app.create_pool(POOL).await;
    app.play([
        round_at("r1", "2024-01-01T00:00:00Z", &["a", "b", "c"]),
        round("r2", &["c", "a"]),
    ])
    .await;
    let batch = |body: Value| {
        app.send(
            Method::POST,
            "/v1/pools/main/player-ratings",
            None,
            Payload::Json(body),
        )
    };
    let answer = batch(json!({"players": ["c", "nobody", "a", "b", "a"]}))
        .await
        .assert_status(StatusCode::OK, "a batch")
        .clone();
    assert_eq!(answer["unknown"], json!(["nobody"]));
    let players = answer["players"].as_array().expect("players");
    let ids: Vec<&str> = players
        .iter()
        .map(|p| p["player"].as_str().expect("an id"))
        .collect();
    assert_eq!(ids, ["c", "a", "b", "a"]);
    for player in players {
        let id = player["player"].as_str().expect("an id");
        let alone = app.get(&format!("{PLAYERS}/{id}?peak=false")).await;
        assert_eq!(player, alone.assert_status(StatusCode::OK, id), "{id}");
    }

    let by_mu = batch(json!({"players": ["a", "b", "c"], "order": "mu", "established": false}))
        .await
        .assert_status(StatusCode::OK, "by μ")
        .clone();
    let board = app
        .get("/v1/pools/main/leaderboard?order=mu&established=false")
        .await
        .assert_status(StatusCode::OK, "the board by μ")
        .clone();
    for entry in board["entries"].as_array().expect("entries") {
        let listed = by_mu["players"]
            .as_array()
            .expect("players")
            .iter()
            .find(|p| p["player"] == entry["player"])
            .expect("each player of the board");
        assert_eq!(listed["position"], entry["position"], "{}", entry["player"]);
        assert_eq!(listed["total"], board["total"]);
    }

    let too_many: Vec<String> = (0..1001).map(|i| format!("p{i}")).collect();
    for (body, field) in [
        (json!({"players": []}), "players"),
        (json!({"players": too_many}), "players"),
        (json!({"players": ["a", ""]}), "players[1]"),
        (
            json!({"players": ["a"], "order": "display_rating"}),
            "order",
        ),
        (json!({"players": ["a"], "limit": 3}), "limit"),
    ] {
        batch(body).await.assert_error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_request",
            Some(field),
            field,
        );
    }
}
