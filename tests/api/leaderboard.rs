//! `GET /v1/pools/{pool}/leaderboard`: the default a pool's display settings choose, orders,
//! cursors both ways, `around`, the activity filter, and bad queries.

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};

use crate::support::{num, round, round_at, Payload, TestApp, ADMIN_KEY, POOL};

backend_tests!(active_days_lists_the_players_of_the_newest_rounds_with_positions_among_them);

const LEADERBOARD: &str = "/v1/pools/main/leaderboard";

/// Eight players: seven veterans of many rounds, and a rookie who won the only round they
/// played, so that the rookie ranks high by μ but low by μ − 3σ. The pool lists everyone by
/// μ unless asked otherwise.
async fn eight_players() -> TestApp {
    eight_players_in(true).await
}

/// [`eight_players`] in a pool shown as `plain` says: by μ with everyone listed, or with a new
/// pool's defaults.
async fn eight_players_in(plain: bool) -> TestApp {
    let app = TestApp::new().await;
    if plain {
        app.create_plain_pool(POOL).await;
    } else {
        app.create_pool(POOL).await;
    }
    let veterans = ["v1", "v2", "v3", "v4", "v5", "v6", "v7"];
    let mut rounds: Vec<Value> = (0..6)
        .map(|i| {
            let mut order = veterans;
            order.rotate_left(i % 3);
            round(&format!("r{i}"), &order)
        })
        .collect();
    rounds.push(round("debut", &["rookie", "v1", "v7"]));
    app.play(rounds).await;
    app
}

/// `GET` a leaderboard page, checked to be a 200.
async fn page(app: &TestApp, query: &str) -> Value {
    let response = app.get(&format!("{LEADERBOARD}?{query}")).await;
    response.assert_status(StatusCode::OK, query).clone()
}

fn players(page: &Value) -> Vec<String> {
    page["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| e["player"].as_str().expect("a player").to_owned())
        .collect()
}

/// Checks that `entries` are sorted by `key` (highest first, ties by player id) and numbered
/// from `first`.
fn assert_ordered(entries: &[Value], key: &str, first: u64) {
    for (i, entry) in entries.iter().enumerate() {
        assert_eq!(entry["position"], first + i as u64, "{entry}");
        assert_eq!(
            num(&entry["conservative"]),
            num(&entry["mu"]) - 3.0 * num(&entry["sigma"])
        );
    }
    for pair in entries.windows(2) {
        let (x, y) = (num(&pair[0][key]), num(&pair[1][key]));
        assert!(
            x > y || (x == y && pair[0]["player"].as_str() < pair[1]["player"].as_str()),
            "{key}: {} before {}",
            pair[0],
            pair[1]
        );
    }
}

#[tokio::test]
async fn a_new_pools_leaderboard_lists_established_players_by_their_conservative_rating() {
    let app = eight_players_in(false).await;
    let body = page(&app, "").await;
    assert_eq!(
        body["total"], 7,
        "the rookie has one round of the three needed"
    );
    let entries = body["entries"].as_array().expect("entries");
    assert_ordered(entries, "conservative", 1);
    assert!(entries.iter().all(|e| e["provisional"] == false), "{body}");
    let v1 = entries.iter().find(|e| e["player"] == "v1").expect("v1");
    let v2 = entries.iter().find(|e| e["player"] == "v2").expect("v2");
    assert_eq!(
        (
            &v1["rounds"],
            &v1["last_round"],
            &v2["rounds"],
            &v2["last_round"]
        ),
        (
            &json!(7),
            &json!({"id": "debut", "time": null}),
            &json!(6),
            &json!({"id": "r5", "time": null})
        )
    );
    assert_eq!(
        body,
        page(&app, "order=conservative&established=true").await
    );
    let everyone = page(&app, "order=mu&established=false").await;
    assert_eq!(everyone["total"], 8);
    assert_ordered(everyone["entries"].as_array().expect("entries"), "mu", 1);
    let rookie = everyone["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .find(|e| e["player"] == "rookie")
        .expect("listed when asked for");
    assert_eq!(rookie["provisional"], true);
    app.get(&format!("{LEADERBOARD}?around=rookie"))
        .await
        .assert_error(
            StatusCode::NOT_FOUND,
            "player_not_found",
            None,
            "provisional",
        );
    app.get(&format!("{LEADERBOARD}?order=display_rating"))
        .await
        .assert_error(
            StatusCode::BAD_REQUEST,
            "invalid_query",
            Some("order"),
            "no fixed range",
        );

    // With a fixed range, the display rating's order is the default: μ's, as players see it.
    app.send(
        Method::PUT,
        "/v1/pools/main/display",
        Some(ADMIN_KEY),
        Payload::Json(json!({"fixed_range": {"max": 3000}})),
    )
    .await
    .assert_status(StatusCode::OK, "a fixed range");
    let shown = page(&app, "").await;
    assert_eq!(players(&shown), players(&page(&app, "order=mu").await));
    let ratings: Vec<f64> = shown["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| num(&e["display_rating"]))
        .collect();
    assert!(ratings.windows(2).all(|w| w[0] >= w[1]), "{ratings:?}");
    let cursor = page(&app, "limit=2").await["next_cursor"]
        .as_str()
        .expect("a cursor")
        .to_owned();
    assert_eq!(
        players(&page(&app, &format!("order=mu&limit=2&cursor={cursor}")).await),
        players(&page(&app, &format!("limit=2&cursor={cursor}")).await),
        "one order, one cursor"
    );
}

#[tokio::test]
async fn the_leaderboard_lists_players_by_mu_with_their_positions() {
    let app = eight_players().await;
    let body = page(&app, "").await;
    assert_eq!(body["total"], 8);
    assert!(body["next_cursor"].is_null(), "one page holds everyone");
    let entries = body["entries"].as_array().expect("entries");
    assert_eq!(entries.len(), 8);
    assert_ordered(entries, "mu", 1);
    for entry in entries {
        let player = app
            .get(&format!(
                "/v1/pools/main/players/{}",
                entry["player"].as_str().expect("id")
            ))
            .await;
        assert_eq!(
            player.assert_status(StatusCode::OK, "player")["position"],
            entry["position"],
            "the player's own position agrees"
        );
    }
    assert_eq!(
        page(&app, "order=mu").await,
        body,
        "mu is the default order"
    );
}

#[tokio::test]
async fn ordering_by_conservative_sorts_by_mu_minus_three_sigma() {
    let app = eight_players().await;
    let by_conservative = page(&app, "order=conservative").await;
    assert_eq!(by_conservative["total"], 8);
    assert_ordered(
        by_conservative["entries"].as_array().expect("entries"),
        "conservative",
        1,
    );
    let by_mu = players(&page(&app, "").await);
    let conservative = players(&by_conservative);
    assert_ne!(by_mu, conservative, "the rookie's uncertainty costs places");
    let place = |list: &[String]| list.iter().position(|p| p == "rookie");
    assert!(
        place(&conservative) > place(&by_mu),
        "{by_mu:?} vs {conservative:?}"
    );
}

#[tokio::test]
async fn following_prev_cursor_up_from_a_page_around_the_last_player_visits_everyone_once() {
    let app = eight_players().await;
    for order in ["mu", "conservative"] {
        let everyone = players(&page(&app, &format!("order={order}")).await);
        let last = everyone.last().expect("a last player");
        let mut body = page(&app, &format!("order={order}&limit=3&around={last}")).await;
        let mut seen = players(&body);
        while let Some(cursor) = body["prev_cursor"].as_str() {
            body = page(&app, &format!("order={order}&limit=3&before={cursor}")).await;
            let entries = body["entries"].as_array().expect("entries");
            assert!(!entries.is_empty() && entries.len() <= 3, "{order}: {body}");
            let above = players(&body);
            seen.splice(0..0, above);
            assert!(seen.len() <= 8, "{order}: the pages end");
        }
        assert_eq!(
            body["entries"][0]["position"], 1,
            "{order}: the walk ends at the top, where prev_cursor is null"
        );
        assert_eq!(
            seen, everyone,
            "{order}: pages of at most 3 above each other cover the board once, in order"
        );
    }
    assert!(page(&app, "limit=3").await["prev_cursor"].is_null());
    let cursor = page(&app, "limit=3").await["next_cursor"]
        .as_str()
        .expect("a cursor")
        .to_owned();
    app.get(&format!("{LEADERBOARD}?cursor={cursor}&before={cursor}"))
        .await
        .assert_error(
            StatusCode::BAD_REQUEST,
            "invalid_query",
            Some("before"),
            "cursor and before",
        );
}

#[tokio::test]
async fn following_next_cursor_visits_every_player_exactly_once() {
    let app = eight_players().await;
    for order in ["mu", "conservative"] {
        let everyone = players(&page(&app, &format!("order={order}")).await);
        let mut seen: Vec<String> = Vec::new();
        let mut query = format!("order={order}&limit=3");
        let mut first_position = 1;
        loop {
            let body = page(&app, &query).await;
            assert_eq!(body["total"], 8, "{order}");
            let entries = body["entries"].as_array().expect("entries");
            assert_ordered(
                entries,
                if order == "mu" { "mu" } else { "conservative" },
                first_position,
            );
            first_position += entries.len() as u64;
            seen.extend(players(&body));
            match body["next_cursor"].as_str() {
                Some(cursor) => query = format!("order={order}&limit=3&cursor={cursor}"),
                None => break,
            }
            assert!(seen.len() <= 8, "{order}: the pages end");
        }
        assert_eq!(
            seen, everyone,
            "{order}: pages of 3 cover the board once, in order"
        );
    }
}

#[tokio::test]
async fn around_a_player_centers_the_page_on_them_as_far_as_the_board_allows() {
    let app = eight_players().await;
    let everyone = players(&page(&app, "").await);
    let cases = [
        (3, 3, 2, "a player in the middle"),
        (0, 3, 0, "the leader starts the page"),
        (7, 2, 6, "the last player with an even limit"),
        (
            7,
            3,
            5,
            "the last player: the page still holds `limit` places",
        ),
        (6, 5, 3, "next to last: the page ends at the board's end"),
        (1, 5, 0, "second: the page starts at the top"),
    ];
    for (index, limit, start, case) in cases {
        let player = &everyone[index];
        let body = page(&app, &format!("around={player}&limit={limit}")).await;
        let expected_end = (start + limit).min(everyone.len());
        assert_eq!(players(&body), everyone[start..expected_end], "{case}");
        assert_eq!(body["entries"][0]["position"], start as u64 + 1, "{case}");
        assert_eq!(body["total"], 8, "{case}");
    }
    let rookie = page(&app, "around=rookie&limit=3&order=conservative").await;
    let entries = players(&rookie);
    assert_eq!(entries.len(), 3);
    assert!(entries.contains(&"rookie".to_owned()), "{entries:?}");
}

#[tokio::test]
async fn an_empty_pool_has_an_empty_leaderboard() {
    let app = TestApp::new().await;
    app.create_pool(POOL).await;
    assert_eq!(
        page(&app, "").await,
        json!({"entries": [], "total": 0, "next_cursor": null, "prev_cursor": null})
    );
}

#[tokio::test]
async fn a_bad_leaderboard_query_returns_400_naming_the_parameter() {
    let app = eight_players().await;
    let conservative_cursor = page(&app, "order=conservative&limit=2").await["next_cursor"]
        .as_str()
        .expect("a cursor")
        .to_owned();
    let mu_cursor = page(&app, "limit=2").await["next_cursor"]
        .as_str()
        .expect("a cursor")
        .to_owned();
    let cases = [
        ("limit=0".to_owned(), "limit", "a limit of 0"),
        ("limit=1001".to_owned(), "limit", "a limit over 1000"),
        (
            "limit=many".to_owned(),
            "limit",
            "a limit that is not a number",
        ),
        (
            "cursor=!!".to_owned(),
            "cursor",
            "a cursor that is not base64",
        ),
        ("cursor=bTEyMw".to_owned(), "cursor", "a cursor too short"),
        (
            format!("cursor={conservative_cursor}"),
            "cursor",
            "a cursor of the other order",
        ),
        (
            format!("cursor={mu_cursor}&around=v1"),
            "around",
            "a cursor and around together",
        ),
        ("order=best".to_owned(), "order", "an unknown order"),
    ];
    for (query, field, case) in cases {
        app.get(&format!("{LEADERBOARD}?{query}"))
            .await
            .assert_error(StatusCode::BAD_REQUEST, "invalid_query", Some(field), case);
    }
    page(&app, "limit=1000").await;
}

#[tokio::test]
async fn a_leaderboard_around_an_unknown_player_or_of_an_unknown_pool_returns_404() {
    let app = eight_players().await;
    let cases = [
        (
            format!("{LEADERBOARD}?around=nobody"),
            "player_not_found",
            "unknown player",
        ),
        (
            "/v1/pools/nowhere/leaderboard".to_owned(),
            "pool_not_found",
            "unknown pool",
        ),
    ];
    for (uri, code, case) in cases {
        app.get(&uri)
            .await
            .assert_error(StatusCode::NOT_FOUND, code, None, case);
    }
}

/// Every player of a board read `limit` at a time along `next_cursor` from `query`'s first
/// page, each page's positions checked to follow on.
async fn walked(app: &TestApp, query: &str, limit: usize) -> Vec<String> {
    let mut seen = Vec::new();
    let mut next = format!("{query}&limit={limit}");
    loop {
        let page = page(app, &next).await;
        let entries = page["entries"].as_array().expect("entries");
        for (i, entry) in entries.iter().enumerate() {
            assert_eq!(entry["position"], seen.len() + i + 1, "{entry}");
        }
        seen.extend(players(&page));
        match page["next_cursor"].as_str() {
            Some(cursor) => next = format!("{query}&limit={limit}&cursor={cursor}"),
            None => return seen,
        }
    }
}

/// a last played on 1 June 2026, b in 2020, c and d in the newest round (17 November 2026),
/// and e and f in a round without a time, who count as active whatever the window.
async fn active_days_lists_the_players_of_the_newest_rounds_with_positions_among_them(
    app: TestApp,
) {
    app.create_plain_pool(POOL).await;
    app.play([
        round_at("old", "2020-01-01T00:00:00Z", &["a", "b"]),
        round_at("mid", "2026-06-01T00:00:00Z", &["c", "a"]),
        round_at("new", "2026-11-17T00:00:00Z", &["d", "c"]),
        round("untimed", &["e", "f"]),
    ])
    .await;
    let everyone = players(&page(&app, "limit=100").await);
    let only = |kept: &[&str]| -> Vec<String> {
        everyone
            .iter()
            .filter(|p| kept.contains(&p.as_str()))
            .cloned()
            .collect()
    };
    for (days, expected) in [
        ("30", only(&["c", "d", "e", "f"])),
        ("170", only(&["a", "c", "d", "e", "f"])),
        ("0.001", only(&["c", "d", "e", "f"])),
        ("100000", everyone.clone()),
    ] {
        let query = format!("active_days={days}");
        let first = page(&app, &query).await;
        assert_eq!(players(&first), expected, "{query}");
        assert_eq!(first["total"], expected.len(), "{query}");
        assert_eq!(
            walked(&app, &query, 2).await,
            expected,
            "{query}: pages walk it once"
        );
        let last = expected.last().expect("someone");
        let around = page(&app, &format!("{query}&around={last}&limit=3")).await;
        let shown = players(&around);
        assert_eq!(
            shown.last(),
            Some(last),
            "{query}: around the last is at the end"
        );
        let above = around["prev_cursor"]
            .as_str()
            .map(|cursor| cursor.to_owned());
        if let Some(cursor) = above {
            let up = page(&app, &format!("{query}&before={cursor}&limit=3")).await;
            let mut both = players(&up);
            both.extend(shown);
            assert!(
                expected.ends_with(&both),
                "{query}: the page above follows on"
            );
        }
    }
    app.get(&format!("{LEADERBOARD}?active_days=30&around=a"))
        .await
        .assert_error(StatusCode::NOT_FOUND, "player_not_found", None, "inactive");

    // As of a round: its newest round is the window's end.
    let then = page(&app, "as_of=mid&active_days=30").await;
    let mut expected = players(&page(&app, "as_of=mid").await);
    expected.retain(|p| p != "b");
    assert_eq!(players(&then), expected);
    assert_eq!(then["total"], 2);

    for bad in ["0", "-1", "NaN", "inf", "soon"] {
        let query = format!("active_days={bad}");
        app.get(&format!("{LEADERBOARD}?{query}"))
            .await
            .assert_error(
                StatusCode::BAD_REQUEST,
                "invalid_query",
                Some("active_days"),
                &query,
            );
    }
}
