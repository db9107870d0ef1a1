//! `/v1/pools/{pool}/display` on both backends: the conservative rating's k, the fixed-range
//! rating and provisional players change what every read shows, at any time, and survive a
//! restart; rounds applied afterwards keep the established leaderboard current; a `PATCH`
//! changes the settings it names and keeps the others.

use axum::body::Body;
use axum::http::{header, Method, Request, StatusCode};
use serde_json::{json, Value};

use crate::support::{num, round, Payload, TestApp, TestResponse, ADMIN_KEY, POOL};

backend_tests!(
    display_settings_change_every_read_and_survive_a_restart,
    a_player_becomes_established_when_a_round_takes_them_past_the_rule,
    a_change_made_by_another_process_is_shown_after_the_next_worker_step_without_a_reload,
    each_result_says_where_the_player_was_expected_and_what_it_showed,
    a_patch_changes_the_settings_it_names_and_keeps_the_others,
);

const DISPLAY: &str = "/v1/pools/main/display";

async fn put_display(app: &TestApp, body: Value) -> Value {
    app.send(Method::PUT, DISPLAY, Some(ADMIN_KEY), Payload::Json(body))
        .await
        .assert_status(StatusCode::OK, "put the display settings")
        .clone()
}

async fn player(app: &TestApp, id: &str) -> Value {
    app.get(&format!("/v1/pools/main/players/{id}"))
        .await
        .assert_status(StatusCode::OK, id)
        .clone()
}

/// The players of a leaderboard page, in order, with their positions.
async fn board(app: &TestApp, query: &str) -> (Vec<(u64, String)>, u64) {
    let page = app
        .get(&format!("/v1/pools/main/leaderboard?{query}"))
        .await
        .assert_status(StatusCode::OK, query)
        .clone();
    let entries = page["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| {
            (
                e["position"].as_u64().expect("a position"),
                e["player"].as_str().expect("a player").to_owned(),
            )
        })
        .collect();
    (entries, page["total"].as_u64().expect("a total"))
}

/// μ and σ of every player, from the API.
async fn ratings(app: &TestApp, ids: &[&str]) -> Vec<(f64, f64)> {
    let mut found = Vec::new();
    for id in ids {
        let p = player(app, id).await;
        found.push((num(&p["mu"]), num(&p["sigma"])));
    }
    found
}

async fn display_settings_change_every_read_and_survive_a_restart(app: TestApp) {
    app.create_plain_pool(POOL).await;
    app.play([
        round("r1", &["a", "b", "c", "d"]),
        round("r2", &["b", "a", "c"]),
        round("r3", &["a", "b"]),
    ])
    .await;
    let before = player(&app, "d").await;
    assert_eq!(before["display_rating"], Value::Null);
    assert_eq!(before["provisional"], false);
    assert_eq!(
        num(&before["conservative"]),
        num(&before["mu"]) - 3.0 * num(&before["sigma"])
    );

    let shown = put_display(
        &app,
        json!({"conservative_k": 2, "fixed_range": {"max": 1000}, "provisional": {"min_rounds": 2}}),
    )
    .await;
    assert_eq!(
        shown["settings"],
        json!({
            "conservative_k": 2.0,
            "fixed_range": {"max": 1000.0, "center": "auto", "scale": "auto"},
            "provisional": {"min_rounds": 2, "max_sigma": null},
            "default_order": "auto",
            "list_provisional": false,
            "leagues": null,
            "expected_ranks": false,
        })
    );
    assert_eq!(
        (shown["players"].as_u64(), shown["established"].as_u64()),
        (Some(4), Some(3))
    );

    let ids = ["a", "b", "c", "d"];
    let rated = ratings(&app, &ids).await;
    let n = rated.len() as f64;
    let mean = rated.iter().map(|r| r.0).sum::<f64>() / n;
    let width = (rated.iter().map(|r| (r.0 - mean).powi(2)).sum::<f64>() / n).sqrt();
    let range = &shown["fixed_range"];
    assert!((num(&range["center"]) - mean).abs() < 1e-4, "{range}");
    assert!((num(&range["scale"]) - width / 2.0).abs() < 1e-4, "{range}");
    for (id, (mu, sigma)) in ids.iter().zip(&rated) {
        let p = player(&app, id).await;
        assert_eq!(num(&p["conservative"]), mu - 2.0 * sigma, "{id}");
        let expected = 1000.0 / (1.0 + (-(mu - mean) / (width / 2.0)).exp());
        assert!(
            (num(&p["display_rating"]) - expected).abs() < 1e-3,
            "{id}: {p}"
        );
        assert_eq!(p["provisional"], *id == "d", "{id}");
    }

    let (all, total) = board(&app, "limit=10&established=false").await;
    assert_eq!(total, 4);
    let (established, total) = board(&app, "limit=10&established=true").await;
    assert_eq!(total, 3);
    assert_eq!(
        board(&app, "limit=10").await.1,
        3,
        "established players only by default"
    );
    let expected: Vec<(u64, String)> = all
        .iter()
        .filter(|(_, p)| p != "d")
        .enumerate()
        .map(|(i, (_, p))| (i as u64 + 1, p.clone()))
        .collect();
    assert_eq!(
        established, expected,
        "positions count established players only"
    );
    let (by_conservative, _) = board(&app, "order=conservative&established=true").await;
    let mut want: Vec<(f64, &str)> = ids[..3]
        .iter()
        .zip(&rated)
        .map(|(id, (mu, sigma))| (mu - 2.0 * sigma, *id))
        .collect();
    want.sort_by(|x, y| y.0.total_cmp(&x.0));
    let got: Vec<&str> = by_conservative.iter().map(|(_, p)| p.as_str()).collect();
    assert_eq!(got, want.iter().map(|w| w.1).collect::<Vec<_>>());
    let unlisted = app
        .get("/v1/pools/main/leaderboard?established=true&around=d")
        .await;
    unlisted.assert_error(
        StatusCode::NOT_FOUND,
        "player_not_found",
        None,
        "d is not listed",
    );
    let message = unlisted.body["error"]["message"]
        .as_str()
        .expect("a message");
    assert!(
        message.contains("rated but not on this board"),
        "the answer says why a rated player is not found: {message}"
    );
    let (paged, _) = board(&app, "limit=1&established=true").await;
    assert_eq!(paged, expected[..1]);

    let pool = app.pool_info(POOL).await;
    assert_eq!(pool["display"], shown["settings"]);

    let restarted = app.restarted().await;
    for id in ids {
        assert_eq!(player(&restarted, id).await, player(&app, id).await, "{id}");
    }
    assert_eq!(
        board(&restarted, "established=true&order=conservative").await,
        board(&app, "established=true&order=conservative").await
    );
    let again = restarted.get(DISPLAY).await;
    assert_eq!(again.assert_status(StatusCode::OK, "get"), &shown);

    // `{}` is a new pool's defaults: fewer than 3 rounds (c and d) is provisional.
    let reset = put_display(&restarted, json!({})).await;
    assert_eq!(reset["fixed_range"], Value::Null);
    assert_eq!(reset["established"], 2);
    assert_eq!(player(&restarted, "d").await["provisional"], true);
    let nobody = put_display(&restarted, json!({"provisional": null})).await;
    assert_eq!(nobody["established"], 4);
    let d = player(&restarted, "d").await;
    assert_eq!(
        (&d["display_rating"], &d["provisional"]),
        (&Value::Null, &json!(false))
    );
    assert_eq!(
        num(&d["conservative"]),
        num(&d["mu"]) - 3.0 * num(&d["sigma"])
    );
    assert_eq!(board(&restarted, "established=true").await.1, 4);
}

async fn a_player_becomes_established_when_a_round_takes_them_past_the_rule(app: TestApp) {
    app.create_plain_pool(POOL).await;
    app.play([round("r1", &["a", "b", "c"])]).await;
    let shown = put_display(
        &app,
        json!({"provisional": {"min_rounds": 2, "max_sigma": 1000}, "fixed_range": {"center": 1500, "scale": 100}}),
    )
    .await;
    assert_eq!(shown["established"], 0);
    assert_eq!(
        shown["fixed_range"],
        json!({"max": 10000.0, "center": 1500.0, "scale": 100.0})
    );
    app.play([round("r2", &["c", "a"])]).await;
    let (established, total) = board(&app, "established=true").await;
    assert_eq!(total, 2);
    let mut names: Vec<&str> = established.iter().map(|(_, p)| p.as_str()).collect();
    names.sort_unstable();
    assert_eq!(names, ["a", "c"]);
    let c = player(&app, "c").await;
    let expected = 10_000.0 / (1.0 + (-(num(&c["mu"]) - 1500.0) / 100.0).exp());
    assert_eq!(num(&c["display_rating"]), expected);
    assert_eq!(player(&app, "b").await["provisional"], true);
    put_display(
        &app,
        json!({"provisional": {"min_rounds": 2, "max_sigma": 1}}),
    )
    .await;
    assert_eq!(
        board(&app, "established=true").await.1,
        0,
        "every σ is above 1"
    );
}

async fn a_change_made_by_another_process_is_shown_after_the_next_worker_step_without_a_reload(
    app: TestApp,
) {
    app.create_plain_pool(POOL).await;
    app.play([round("r1", &["a", "b", "c"]), round("r2", &["a", "b"])])
        .await;
    let other = app.restarted().await;
    put_display(&other, json!({"provisional": {"min_rounds": 2}})).await;
    assert_eq!(
        player(&app, "c").await["provisional"],
        false,
        "not yet seen here"
    );
    // `apply_queued` panics if the step reloads the pool.
    app.apply_queued(POOL).await;
    assert_eq!(player(&app, "c").await["provisional"], true);
    assert_eq!(board(&app, "established=true").await.1, 2);
}

async fn each_result_says_where_the_player_was_expected_and_what_it_showed(app: TestApp) {
    app.create_plain_pool(POOL).await;
    app.play([round("r0", &["zed", "yan"])]).await;
    put_display(
        &app,
        json!({"conservative_k": 2, "fixed_range": {"max": 1000, "center": 1500, "scale": 100},
               "expected_ranks": true}),
    )
    .await;
    // Five newcomers are all expected in the middle; after ann won twice, she is expected
    // ahead of everyone in the third round, and the upset moves her down.
    app.play([
        round("r1", &["ann", "bob", "cy", "dee", "eve"]),
        round("r2", &["ann", "cy", "bob"]),
        round("r3", &["eve", "bob", "ann"]),
    ])
    .await;
    let results = |id: &str| {
        let app = &app;
        let id = id.to_owned();
        async move {
            app.get(&format!("/v1/pools/main/rounds/{id}"))
                .await
                .assert_status(StatusCode::OK, &id)["results"]
                .as_array()
                .expect("results")
                .clone()
        }
    };
    for result in results("r0").await {
        assert_eq!(
            result["expected_rank"],
            Value::Null,
            "applied before it was asked for"
        );
    }
    for result in results("r1").await {
        assert!(
            (num(&result["expected_rank"]) - 3.0).abs() < 1e-9,
            "{result}"
        );
    }
    let third = results("r3").await;
    let expected: Vec<(String, f64)> = third
        .iter()
        .map(|r| {
            (
                r["player"].as_str().expect("a player").to_owned(),
                num(&r["expected_rank"]),
            )
        })
        .collect();
    let of = |who: &str| expected.iter().find(|(p, _)| p == who).expect("played").1;
    assert!(
        of("ann") < of("bob") && of("bob") < of("eve"),
        "{expected:?}"
    );
    let sum: f64 = expected.iter().map(|(_, e)| e).sum();
    assert!(
        (sum - 6.0).abs() < 1e-9,
        "expected places of 3 entrants sum to 1 + 2 + 3"
    );
    for result in &third {
        let (mu_before, mu_after) = (num(&result["mu_before"]), num(&result["mu_after"]));
        let (sigma_before, sigma_after) =
            (num(&result["sigma_before"]), num(&result["sigma_after"]));
        assert_eq!(
            num(&result["conservative_before"]),
            mu_before - 2.0 * sigma_before
        );
        assert_eq!(
            num(&result["conservative_after"]),
            mu_after - 2.0 * sigma_after
        );
        let shown = |mu: f64| 1000.0 / (1.0 + (-(mu - 1500.0) / 100.0).exp());
        assert!((num(&result["display_rating_before"]) - shown(mu_before)).abs() < 1e-9);
        assert!((num(&result["display_rating_after"]) - shown(mu_after)).abs() < 1e-9);
        if result["player"] == "ann" {
            assert!(
                mu_after < mu_before,
                "the favourite finished last: {result}"
            );
        }
    }
    let history = app
        .get("/v1/pools/main/players/ann/history")
        .await
        .assert_status(StatusCode::OK, "history")
        .clone();
    let last = &history["entries"][0];
    assert_eq!(num(&last["expected_rank"]), of("ann"));
    assert_eq!(
        last["display_rating_after"],
        third.iter().find(|r| r["player"] == "ann").expect("ann")["display_rating_after"]
    );
}

async fn patch_display(app: &TestApp, body: Value) -> TestResponse {
    let request = Request::builder()
        .method(Method::PATCH)
        .uri(DISPLAY)
        .header(header::AUTHORIZATION, format!("Bearer {ADMIN_KEY}"))
        .header(header::CONTENT_TYPE, "application/merge-patch+json")
        .body(Body::from(body.to_string()))
        .expect("a request");
    app.send_request(request).await
}

async fn a_patch_changes_the_settings_it_names_and_keeps_the_others(app: TestApp) {
    app.create_pool(POOL).await;
    app.play([
        round("r1", &["a", "b", "c"]),
        round("r2", &["b", "a"]),
        round("r3", &["a", "b"]),
    ])
    .await;
    let defaults = app.get(DISPLAY).await;
    assert_eq!(
        defaults.assert_status(StatusCode::OK, "defaults")["settings"],
        json!({"conservative_k": 3.0, "fixed_range": null,
               "provisional": {"min_rounds": 3, "max_sigma": null},
               "default_order": "auto", "list_provisional": false,
               "leagues": null, "expected_ranks": false})
    );
    let ranged = patch_display(&app, json!({"fixed_range": {"max": 3000}})).await;
    let ranged = ranged
        .assert_status(StatusCode::OK, "a fixed range")
        .clone();
    assert_eq!(ranged["settings"]["provisional"]["min_rounds"], 3, "kept");
    assert_eq!(ranged["settings"]["fixed_range"]["max"], 3000.0);
    let tiers = json!({"tiers": [{"name": "low"}, {"name": "high", "threshold": 1500}]});
    let both = patch_display(
        &app,
        json!({"leagues": tiers, "fixed_range": {"center": 1400}, "list_provisional": true}),
    )
    .await;
    let both = both.assert_status(StatusCode::OK, "leagues").clone();
    assert_eq!(
        both["settings"]["fixed_range"],
        json!({"max": 3000.0, "center": 1400.0, "scale": "auto"}),
        "an object is merged into the setting's object"
    );
    assert_eq!(both["settings"]["provisional"]["min_rounds"], 3);
    assert_eq!(both["settings"]["leagues"]["tiers"][1]["name"], "high");
    assert_eq!(board(&app, "").await.1, 3, "provisional c is listed now");
    assert_eq!(
        app.restarted().await.get(DISPLAY).await.body,
        both,
        "stored"
    );

    // `null` removes a setting, which takes its default again.
    let removed = patch_display(&app, json!({"fixed_range": null, "provisional": null})).await;
    let removed = removed.assert_status(StatusCode::OK, "removed");
    assert_eq!(removed["settings"]["fixed_range"], Value::Null);
    assert_eq!(removed["settings"]["provisional"]["min_rounds"], 3);

    // A bad patch names its field and changes nothing.
    let before = app.get(DISPLAY).await.body;
    for (patch, field) in [
        (json!({"fixed_range": {"max": -1}}), "fixed_range.max"),
        (json!({"colour": "red"}), "colour"),
        (json!({"default_order": "display_rating"}), "default_order"),
        (
            json!({"provisional": {"min_rounds": "three"}}),
            "provisional.min_rounds",
        ),
    ] {
        patch_display(&app, patch.clone()).await.assert_error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_display",
            Some(field),
            &patch.to_string(),
        );
    }
    patch_display(&app, json!([1])).await.assert_error(
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_request",
        None,
        "not an object",
    );
    assert_eq!(app.get(DISPLAY).await.body, before, "nothing changed");
}
