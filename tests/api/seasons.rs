//! Seasons on both backends: a start queued in the round stream between two rounds, the soft
//! reset it applies to every rating once the worker reaches it, leagues restarting with
//! placement, a finished season's standings kept readable, as-of reads across a start, all
//! surviving a restart; new leagues recomputed across a season start; and `replay` of the
//! pool's export (season line included) giving what the service gives.

use axum::http::{Method, StatusCode};
use mmr_service::pools::leaderboard::{Filter, Order};
use mmr_service::pools::AsOfBoard;
use serde_json::{json, Value};

use crate::leagues::{
    ladder, ladder_rounds, leagues_shown, put_display, put_leagues, read, replayed_csv,
};
use crate::support::{num, round, Payload, TestApp, ADMIN_KEY, POOL, WRITE_KEY};

backend_tests!(
    a_season_soft_resets_every_rating_and_restarts_the_leagues,
    new_leagues_are_recomputed_across_a_season_as_if_set_from_the_start,
    replay_of_the_export_gives_what_the_service_gives_across_a_season,
    every_system_keeps_its_reset_states_through_a_restart,
    an_open_seasons_standings_in_memory_are_those_its_history_rows_give,
);

const SEASONS: &str = "/v1/pools/main/seasons";

async fn start_season(app: &TestApp, pool: &str, body: Value) -> Value {
    app.post(&format!("/v1/pools/{pool}/seasons"), Some(ADMIN_KEY), body)
        .await
        .assert_status(StatusCode::ACCEPTED, "start a season")
        .clone()
}

/// Every player's `(mu, sigma, league)` as `GET …/players/{id}` shows it.
async fn ratings(app: &TestApp, players: &[&str]) -> Vec<(f64, f64, Value)> {
    let mut shown = Vec::new();
    for player in players {
        let p = read(app, &format!("/v1/pools/main/players/{player}")).await;
        shown.push((num(&p["mu"]), num(&p["sigma"]), p["league"].clone()));
    }
    shown
}

/// The players of a leaderboard page, best first, with their μ and league.
fn board(page: &Value) -> Vec<(String, f64, Value)> {
    page["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| {
            (
                e["player"].as_str().expect("a player").to_owned(),
                num(&e["mu"]),
                e["league"].clone(),
            )
        })
        .collect()
}

async fn a_season_soft_resets_every_rating_and_restarts_the_leagues(app: TestApp) {
    let players = ["a", "b", "c", "d"];
    app.create_plain_pool(POOL).await;
    put_leagues(
        &app,
        POOL,
        json!({"k": 0, "placement_rounds": 1, "tiers": [
            {"name": "low"}, {"name": "high", "threshold": 1500}]}),
    )
    .await;
    app.play([round("r1", &players), round("r2", &["a", "b", "c"])])
        .await;
    let before = ratings(&app, &players).await;
    assert!(before.iter().all(|(_, _, league)| !league.is_null()));
    let season_one = board(&read(&app, "/v1/pools/main/leaderboard").await);

    // Queued behind a round posted before it: nothing moves until the worker reaches it.
    app.queue_round(round("r3", &["d", "c"])).await;
    let started = start_season(
        &app,
        POOL,
        json!({"id": "s2", "mu_reset": 0.5, "sigma_reset": 0.25}),
    )
    .await;
    assert_eq!(
        started,
        json!({"number": 2, "id": "s2", "status": "queued", "mu_reset": 0.5,
               "sigma_reset": 0.25, "position": 2})
    );
    let listed = read(&app, SEASONS).await;
    assert_eq!(listed["current"], 1);
    assert_eq!(listed["seasons"][1]["status"], "queued");
    for (number, why) in [
        (2, "not started yet"),
        (3, "no such season"),
        (0, "seasons count from 1"),
    ] {
        app.get(&format!("/v1/pools/main/seasons/{number}/leaderboard"))
            .await
            .assert_error(StatusCode::NOT_FOUND, "season_not_found", None, why);
    }

    // The same start posted again is recognized; another body under its id, or a round's
    // id, is a conflict.
    let again = app
        .post(
            SEASONS,
            Some(ADMIN_KEY),
            json!({"id": "s2", "mu_reset": 0.5, "sigma_reset": 0.25}),
        )
        .await;
    assert_eq!(
        again.assert_status(StatusCode::OK, "a re-post")["number"],
        2
    );
    for body in [json!({"id": "s2", "mu_reset": 0.4}), json!({"id": "r1"})] {
        app.post(SEASONS, Some(ADMIN_KEY), body.clone())
            .await
            .assert_error(
                StatusCode::CONFLICT,
                "round_conflict",
                Some("id"),
                &body.to_string(),
            );
    }
    app.post(SEASONS, Some(WRITE_KEY), json!({"id": "s9"}))
        .await
        .assert_error(
            StatusCode::FORBIDDEN,
            "forbidden",
            None,
            "seasons need an admin key",
        );

    app.apply_queued(POOL).await;
    let params = app.pool_info(POOL).await["params"].clone();
    let (mu0, sigma0) = (num(&params["mu_init"]), num(&params["sigma_init"]));
    let after_r3 = read(&app, "/v1/pools/main/rounds/r3").await;
    let r3: std::collections::HashMap<String, (f64, f64)> = after_r3["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|r| {
            let player = r["player"].as_str().expect("a player").to_owned();
            (player, (num(&r["mu_after"]), num(&r["sigma_after"])))
        })
        .collect();
    let season = read(&app, "/v1/pools/main/rounds/s2").await;
    assert_eq!(
        (&season["kind"], &season["status"]),
        (&json!("season"), &json!("applied"))
    );

    let reset = |(mu, sigma): (f64, f64)| (mu + 0.5 * (mu0 - mu), sigma + 0.25 * (sigma0 - sigma));
    let expected: Vec<(f64, f64, Value)> = players
        .iter()
        .zip(&before)
        .map(|(player, (mu, sigma, _))| {
            let last = r3.get(*player).copied().unwrap_or((*mu, *sigma));
            let (mu, sigma) = reset(last);
            (mu, sigma, Value::Null)
        })
        .collect();
    for app in [&app, &app.restarted().await] {
        assert_eq!(
            ratings(app, &players).await,
            expected,
            "every rating reset, no league"
        );
        let leagues = read(app, "/v1/pools/main/leagues").await;
        assert_eq!(leagues["unplaced"], 4);
        assert_eq!(read(app, SEASONS).await["current"], 2);
        // Season 1's final standings: before the reset, r3 included.
        let final_one = board(&read(app, "/v1/pools/main/seasons/1/leaderboard").await);
        assert_eq!(final_one.len(), 4);
        for (player, mu, league) in &final_one {
            let want = r3.get(player.as_str()).map_or_else(
                || {
                    season_one
                        .iter()
                        .find(|(p, _, _)| p == player)
                        .expect("listed")
                        .1
                },
                |(mu, _)| *mu,
            );
            assert_eq!(*mu, want, "{player}");
            assert!(!league.is_null(), "{player} ended season 1 placed");
        }
        assert_eq!(
            read(app, "/v1/pools/main/seasons/2/leaderboard").await["total"],
            0,
            "nobody has played season 2 yet"
        );
        // As of the start, every rating is reset; as of the round before, none is.
        let as_of_start = board(&read(app, "/v1/pools/main/leaderboard?as_of=s2").await);
        let now = board(&read(app, "/v1/pools/main/leaderboard").await);
        assert_eq!(as_of_start, now);
        let as_of_r3 = board(&read(app, "/v1/pools/main/leaderboard?as_of=r3").await);
        assert_eq!(as_of_r3, final_one);
    }

    // Placement starts again: one round of season 2 places its players; the others wait.
    app.play([round("r4", &["b", "a"])]).await;
    let r4 = read(&app, "/v1/pools/main/rounds/r4").await;
    for result in r4["results"].as_array().expect("results") {
        assert_eq!(result["league_before"], Value::Null);
        assert!(!result["league_after"].is_null(), "{result}");
    }
    for app in [&app, &app.restarted().await] {
        let shown = ratings(app, &players).await;
        assert!(!shown[0].2.is_null() && !shown[1].2.is_null());
        assert!(shown[2].2.is_null() && shown[3].2.is_null());
        let two = board(&read(app, "/v1/pools/main/seasons/2/leaderboard").await);
        let names: Vec<&str> = two.iter().map(|(p, _, _)| p.as_str()).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, ["a", "b"]);
        // A player's history shows the jump between seasons as the next round's `before`.
        let history = read(app, "/v1/pools/main/players/a/history").await;
        let entries = history["entries"].as_array().expect("entries");
        let (mu, sigma, _) = &expected[0];
        assert!((num(&entries[0]["mu_before"]) - mu).abs() < 1e-9);
        assert!(
            num(&entries[0]["sigma_before"]) >= *sigma,
            "drift only adds to σ"
        );
    }
}

async fn new_leagues_are_recomputed_across_a_season_as_if_set_from_the_start(app: TestApp) {
    let leagues = ladder();
    let (players, mut rounds) = ladder_rounds();
    let later = rounds.split_off(6);
    app.create_plain_pool(POOL).await;
    app.create_pool("other").await;
    put_leagues(&app, "other", leagues.clone()).await;
    let season = json!({"id": "s2", "mu_reset": 0.3, "sigma_reset": 0.6});
    for pool in [POOL, "other"] {
        for r in &rounds {
            app.post_round(pool, r.clone())
                .await
                .assert_status(StatusCode::ACCEPTED, "queue");
        }
        start_season(&app, pool, season.clone()).await;
        for r in &later {
            app.post_round(pool, r.clone())
                .await
                .assert_status(StatusCode::ACCEPTED, "queue");
        }
        app.apply_queued(pool).await;
    }
    rounds.extend(later);
    let from_the_start = leagues_shown(&app, "other", &rounds, &players).await;
    assert!(from_the_start.to_string().contains("division"));
    put_leagues(&app, POOL, leagues).await;
    for app in [&app, &app.restarted().await] {
        assert_eq!(
            leagues_shown(app, POOL, &rounds, &players).await,
            from_the_start
        );
    }
}

async fn replay_of_the_export_gives_what_the_service_gives_across_a_season(app: TestApp) {
    let (players, mut rounds) = ladder_rounds();
    let last = rounds.pop().expect("rounds");
    // Placement after five rounds of a season (the ladder's players play three to five of
    // them): the count must survive a restart exactly.
    let mut leagues = ladder();
    leagues["placement_rounds"] = json!(5);
    let display = json!({ "leagues": leagues });
    app.create_plain_pool(POOL).await;
    put_display(&app, POOL, display.clone()).await;
    // Settled in one batch: the same players before and after the start.
    for (i, r) in rounds.iter().enumerate() {
        if i == 5 {
            start_season(
                &app,
                POOL,
                json!({"id": "mid", "mu_reset": 0.5, "sigma_reset": 1}),
            )
            .await;
        }
        app.queue_round(r.clone()).await;
    }
    app.apply_queued(POOL).await;
    let app = app.restarted().await;
    app.play([last]).await;

    let (status, _, exported) = app
        .get_text("/v1/pools/main/rounds", "application/x-ndjson")
        .await;
    assert_eq!(status, StatusCode::OK);
    assert!(exported.contains(r#"{"season":{"id":"mid","mu_reset":0.5,"sigma_reset":1.0}}"#));
    let csv = replayed_csv(&exported, &display, &[]);
    let mut replayed = 0;
    for line in csv.lines().skip(1) {
        let fields: Vec<&str> = line.split(',').collect();
        let shown = read(&app, &format!("/v1/pools/main/players/{}", fields[0])).await;
        assert_eq!(
            num(&shown["mu"]),
            fields[1].parse::<f64>().expect("μ"),
            "{line}"
        );
        assert_eq!(
            num(&shown["sigma"]),
            fields[2].parse::<f64>().expect("σ"),
            "{line}"
        );
        assert_eq!(
            shown["league"]["league"].as_str().unwrap_or(""),
            fields[7],
            "{line}"
        );
        // Ladder points, whose bonus pool runs on across the season and the restart.
        let points = shown["league"]["points"].as_f64().map(|p| p.to_string());
        assert_eq!(points.as_deref().unwrap_or(""), fields[9], "{line}");
        replayed += 1;
    }
    assert_eq!(replayed, players.len());
}

async fn every_system_keeps_its_reset_states_through_a_restart(app: TestApp) {
    let players = ["a", "b", "c", "d"];
    let rounds = [round("r1", &players), round("r2", &["c", "a", "d", "b"])];
    for (pool, params, reset) in [
        (
            "elommr",
            json!({}),
            json!({"mu_reset": 0.4, "sigma_reset": 0.3}),
        ),
        ("kept", json!({}), json!({})),
        (
            "glicko",
            json!({"system": "glicko2"}),
            json!({"mu_reset": 0.5, "sigma_reset": 0.5}),
        ),
        (
            "elo",
            json!({"system": "elo"}),
            json!({"mu_reset": 0.5, "sigma_reset": 0.5}),
        ),
    ] {
        app.put_pool(pool, params)
            .await
            .assert_status(StatusCode::CREATED, pool);
        for r in &rounds {
            app.post_round(pool, r.clone())
                .await
                .assert_status(StatusCode::ACCEPTED, pool);
        }
        let mut start = reset;
        start["id"] = json!("s2");
        start_season(&app, pool, start).await;
        app.post_round(pool, round("r3", &["b", "a"]))
            .await
            .assert_status(StatusCode::ACCEPTED, pool);
        app.apply_queued(pool).await;
    }
    // The states stored at the start are what the next round is rated from after a restart:
    // `replay` of the export, which starts each season from the states in memory, agrees.
    let restarted = app.restarted().await;
    for (pool, system) in [
        ("elommr", "elo-mmr"),
        ("kept", "elo-mmr"),
        ("glicko", "glicko2"),
        ("elo", "elo"),
    ] {
        restarted
            .post_round(pool, round("r4", &["d", "c", "a"]))
            .await
            .assert_status(StatusCode::ACCEPTED, pool);
        restarted.apply_queued(pool).await;
        let (status, _, exported) = restarted
            .get_text(&format!("/v1/pools/{pool}/rounds"), "application/x-ndjson")
            .await;
        assert_eq!(status, StatusCode::OK);
        let csv = replayed_csv(&exported, &json!({}), &["--system", system]);
        for line in csv.lines().skip(1) {
            let fields: Vec<&str> = line.split(',').collect();
            let shown = read(
                &restarted,
                &format!("/v1/pools/{pool}/players/{}", fields[0]),
            )
            .await;
            assert_eq!(
                num(&shown["mu"]),
                fields[1].parse::<f64>().expect("μ"),
                "{pool}: {line}"
            );
            let sigma = shown["sigma"].as_f64().map(|s| s.to_string());
            assert_eq!(sigma.as_deref().unwrap_or(""), fields[2], "{pool}: {line}");
        }
    }
}

/// The open season's board is built from the snapshot (`PoolState::season_board`), a closed
/// one's from the history rows: both must say the same of the same lines, leagues, divisions,
/// ladder points and a correction included.
async fn an_open_seasons_standings_in_memory_are_those_its_history_rows_give(app: TestApp) {
    app.create_plain_pool(POOL).await;
    put_leagues(&app, POOL, ladder()).await;
    let (_, rounds) = ladder_rounds();
    app.play(rounds[..6].to_vec()).await;
    // z plays only in the first season: not one of the second's standings.
    app.play([round("before", &["z", "p0"])]).await;
    start_season(
        &app,
        POOL,
        json!({"id": "s2", "mu_reset": 0.5, "sigma_reset": 0.5}),
    )
    .await;
    app.play(rounds[6..].to_vec()).await;
    let start = app.state.storage.seasons(POOL).await.expect("seasons")[0].seq;
    let compare = |what: &'static str| {
        let app = &app;
        async move {
            let snapshot = app.state.pools.get(POOL).expect("loaded").read();
            let rows = app
                .state
                .storage
                .standings_between(POOL, start, None)
                .await
                .expect("read");
            assert!(rows.iter().all(|r| r.player != "z"), "{what}");
            assert!(rows.len() >= 6, "{what}: players played this season");
            let players: Vec<String> = rows.iter().map(|r| r.player.clone()).collect();
            let from_memory = snapshot.season_board(start);
            let from_rows = snapshot.as_of(rows, &[]);
            assert_eq!(from_memory.players(), from_rows.players(), "{what}");
            for player in &players {
                assert_eq!(
                    from_memory.listed(player),
                    from_rows.listed(player),
                    "{what}: {player}"
                );
            }
            let filters = [Filter::All, Filter::Established]
                .into_iter()
                .chain((0..5).map(Filter::League));
            for filter in filters {
                for order in [Order::Mu, Order::Conservative] {
                    let listed = |board: &AsOfBoard| -> Vec<(f64, String)> {
                        board
                            .leaderboard()
                            .page(order, filter, 0, usize::MAX)
                            .map(|place| (place.key, place.player.to_string()))
                            .collect()
                    };
                    assert_eq!(
                        listed(&from_memory),
                        listed(&from_rows),
                        "{what}: {order:?}, {filter:?}"
                    );
                }
            }
        }
    };
    compare("after the season's rounds").await;
    let voided = rounds[7]["id"].as_str().expect("an id").to_owned();
    app.send(
        Method::DELETE,
        &format!("/v1/pools/{POOL}/rounds/{voided}"),
        Some(ADMIN_KEY),
        Payload::Empty,
    )
    .await
    .assert_status(StatusCode::ACCEPTED, "void a round of the season");
    app.post(
        "/v1/pools/main/corrections",
        Some(ADMIN_KEY),
        json!({"id": "smurf", "action": "merge", "player": "p7", "into": "p6"}),
    )
    .await
    .assert_status(StatusCode::ACCEPTED, "merge two players of the season");
    app.apply_queued(POOL).await;
    compare("after corrections").await;

    // Through the route: the season under way lists those players.
    let page = read(&app, "/v1/pools/main/seasons/2/leaderboard?limit=1000").await;
    let mut listed: Vec<&str> = page["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| e["player"].as_str().expect("a player"))
        .collect();
    listed.sort_unstable();
    let rows = app.state.storage.standings_between(POOL, start, None).await;
    let rows = rows.expect("read");
    let mut expected: Vec<&str> = rows.iter().map(|r| r.player.as_str()).collect();
    expected.sort_unstable();
    assert_eq!(listed, expected);
}
