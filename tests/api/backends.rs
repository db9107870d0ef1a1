//! The API's main path on both backends, SQLite and Postgres: create a pool, post rounds, apply
//! them, read them back, and read the same after a restart; for a pool of every other rating
//! system too.

use axum::http::StatusCode;
use serde_json::json;

use mmr_service::worker::{self, Processed, Settled};

use crate::leagues::{ladder, ladder_rounds, leagues_shown, put_leagues};
use crate::storage_ext::StorageExt;
use crate::support::{history_ids, round, round_at, TestApp, POOL};

backend_tests!(
    a_pool_is_created_listed_and_locked_once_it_has_rounds,
    a_posted_round_is_applied_and_read_back,
    a_restarted_service_reads_the_same_ratings,
    a_weng_lin_pool_rates_reads_predicts_and_survives_a_restart,
    a_trueskill_pool_rates_teams_with_partial_play_and_survives_a_restart,
    a_plackett_luce_pool_rates_as_computed_by_hand,
    a_glicko2_pool_reproduces_glickmans_example_and_survives_a_restart,
    a_codeforces_pool_rates_weighted_rounds_and_survives_a_restart,
    a_topcoder_pool_rates_as_computed_by_hand_and_survives_a_restart,
    an_elo_pool_shows_no_uncertainty_and_survives_a_restart,
    a_pool_another_process_created_is_served_and_fed_here,
    a_follower_rates_the_owners_lines_again_and_reloads_only_for_a_correction,
    a_pool_taken_over_is_reloaded_only_if_lines_were_followed_since_it_was_loaded,
    a_follower_keeps_what_the_owner_keeps_one_round_or_many_behind,
    a_follower_follows_beliefs_that_keep_no_factors,
    a_backlog_settles_in_one_step_of_pipelined_batches_exactly_as_one_by_one,
    a_worker_step_ends_after_one_batch_once_another_task_waits_for_the_turn,
    posts_arriving_together_are_each_answered_with_their_own_place,
    rounds_queued_in_the_shapes_earlier_versions_stored_apply_as_the_same_rounds_posted_now,
);

async fn a_pool_is_created_listed_and_locked_once_it_has_rounds(app: TestApp) {
    let created = app.put_pool(POOL, json!({"gamma": 20.0})).await;
    assert_eq!(
        created.assert_status(StatusCode::CREATED, "create")["outcome"],
        "created"
    );
    let again = app.put_pool(POOL, json!({"gamma": 20.0})).await;
    assert_eq!(
        again.assert_status(StatusCode::OK, "again")["outcome"],
        "unchanged"
    );
    let updated = app.put_pool(POOL, json!({"gamma": 25.0})).await;
    assert_eq!(
        updated.assert_status(StatusCode::OK, "update")["outcome"],
        "updated"
    );
    app.queue_round(round("r1", &["a", "b"])).await;
    app.put_pool(POOL, json!({"gamma": 30.0}))
        .await
        .assert_error(StatusCode::CONFLICT, "params_locked", None, "locked");
    let list = app.get("/v1/pools").await;
    let pools = &list.assert_status(StatusCode::OK, "list")["pools"];
    assert_eq!(pools.as_array().map(Vec::len), Some(1));
    assert_eq!(pools[0]["name"], POOL);
    assert_eq!(pools[0]["params"]["gamma"], 25.0);
    assert_eq!(pools[0]["rounds_queued"], 1);
}

async fn a_posted_round_is_applied_and_read_back(app: TestApp) {
    app.create_pool(POOL).await;
    let body = round_at("r1", "2024-02-01T00:00:00Z", &["a", "b", "c"]);
    let accepted = app.post_round(POOL, body.clone()).await;
    assert_eq!(
        accepted.assert_status(StatusCode::ACCEPTED, "post"),
        &json!({"id": "r1", "status": "queued", "position": 1})
    );
    app.post_round(POOL, body)
        .await
        .assert_status(StatusCode::OK, "the same again");
    app.post_round(POOL, round("r1", &["c", "b", "a"]))
        .await
        .assert_error(
            StatusCode::CONFLICT,
            "round_conflict",
            Some("id"),
            "other content",
        );
    app.post_round(POOL, round("r2", &["a", "a"]))
        .await
        .assert_error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_round",
            Some("standings[1].player"),
            "a duplicate player",
        );
    assert_eq!(app.pool_info(POOL).await["rounds_queued"], 1);
    app.apply_queued(POOL).await;
    let status = app.get("/v1/pools/main/rounds/r1").await;
    let status = status.assert_status(StatusCode::OK, "applied");
    assert_eq!(status["status"], "applied");
    assert_eq!(status["results"].as_array().map(Vec::len), Some(3));
    assert_eq!(
        (&status["time"], &status["entrants"]),
        (&json!("2024-02-01T00:00:00Z"), &json!(3))
    );
    let page = app.get("/v1/pools/main/rounds/r1?limit=1").await.body;
    assert_eq!(page["entrants"], 3, "the field's size on every page");
    let player = app.get("/v1/pools/main/players/a").await;
    let player = player.assert_status(StatusCode::OK, "player");
    assert_eq!(player["mu"], status["results"][0]["mu_after"]);
    assert_eq!(
        player["last_round"],
        json!({"id": "r1", "time": "2024-02-01T00:00:00Z"})
    );
    let history = app.get("/v1/pools/main/players/a/history").await;
    let history = history.assert_status(StatusCode::OK, "history");
    assert_eq!(history["entries"][0]["round_id"], "r1");
    assert_eq!(history["entries"][0]["mu"], player["mu"]);
    let board = app
        .get("/v1/pools/main/leaderboard?established=false")
        .await;
    let board = board.assert_status(StatusCode::OK, "leaderboard");
    assert_eq!(board["total"], 3);
    assert_eq!(board["entries"][0]["player"], "a");
    assert_eq!(
        (
            &board["entries"][0]["rounds"],
            &board["entries"][0]["last_round"]
        ),
        (&json!(1), &player["last_round"])
    );
    let info = app.pool_info(POOL).await;
    assert_eq!(
        (
            &info["players"],
            &info["rounds_applied"],
            &info["rounds_queued"]
        ),
        (&json!(3), &json!(1), &json!(0))
    );
}

async fn a_restarted_service_reads_the_same_ratings(app: TestApp) {
    app.create_pool(POOL).await;
    app.play([
        round("r1", &["a", "b", "c"]),
        round("r2", &["c", "a"]),
        round("r3", &["b", "c", "d"]),
    ])
    .await;
    app.queue_round(round("r4", &["d", "a"])).await;
    let restarted = app.restarted().await;
    assert_same_reads(
        &app,
        &restarted,
        &[
            "/v1/pools",
            "/v1/pools/main/leaderboard",
            "/v1/pools/main/players/c",
            "/v1/pools/main/players/c/history",
            "/v1/pools/main/win-probability?a=a&b=d",
        ],
    )
    .await;
    restarted.apply_queued(POOL).await;
    let round = restarted.get("/v1/pools/main/rounds/r4").await;
    assert_eq!(
        round.assert_status(StatusCode::OK, "r4")["status"],
        "applied",
        "the restarted service applies what was queued"
    );
    // The round applied after the restart chains to the rows written before it.
    assert_eq!(history_ids(&restarted, POOL, "a").await, ["r4", "r2", "r1"]);
    assert_eq!(history_ids(&restarted, POOL, "d").await, ["r4", "r3"]);
}

async fn a_weng_lin_pool_rates_reads_predicts_and_survives_a_restart(app: TestApp) {
    let created = app
        .put_pool(POOL, json!({"system": "weng_lin", "tau": 0.0, "beta": 5.0}))
        .await;
    let created = created.assert_status(StatusCode::CREATED, "create");
    assert_eq!(created["system"], "weng_lin");
    assert_eq!(
        created["params"],
        json!({"beta": 5.0, "kappa": 1e-4, "tau": 0.0, "mu_init": 25.0,
               "sigma_init": 25.0 / 3.0, "model": "bradley_terry"})
    );
    app.put_pool(POOL, json!({"system": "weng_lin", "rho": 1.0}))
        .await
        .assert_error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_parameter",
            Some("rho"),
            "an Elo-MMR parameter",
        );
    let mut weighted = round("heavy", &["a", "b"]);
    weighted["weight"] = json!(2.0);
    app.post_round(POOL, weighted).await.assert_error(
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_round",
        Some("weight"),
        "Weng-Lin has no round weight",
    );
    let mut partial = round("partial", &["a", "b"]);
    partial["standings"][1]["partial_play"] = json!(0.5);
    app.post_round(POOL, partial).await.assert_error(
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_round",
        Some("standings[1].partial_play"),
        "only TrueSkill has partial play",
    );
    app.play([
        round("r1", &["a", "b", "c"]),
        round("r2", &["c", "a"]),
        round("r3", &["b", "c", "d"]),
    ])
    .await;
    assert_eq!(
        app.pool_info(POOL).await["rounds_applied"],
        3,
        "the refused round left no trace"
    );

    let r1 = app.get("/v1/pools/main/rounds/r1").await;
    let first = &r1.assert_status(StatusCode::OK, "r1")["results"][0];
    assert_eq!(
        (&first["player"], &first["mu_before"]),
        (&json!("a"), &json!(25.0))
    );
    assert!(
        first["mu_after"].as_f64() > Some(25.0),
        "the winner rose: {first}"
    );
    assert!(
        first["sigma_after"].as_f64() < Some(25.0 / 3.0),
        "and is surer: {first}"
    );
    let player = app.get("/v1/pools/main/players/d").await;
    let player = player.assert_status(StatusCode::OK, "d");
    assert_eq!(player["rounds"], 1);
    assert!(
        player["mu"].as_f64() < Some(25.0),
        "d lost its only round: {player}"
    );
    let history = app.get("/v1/pools/main/players/c/history").await;
    let entries = &history.assert_status(StatusCode::OK, "history")["entries"];
    assert_eq!(entries.as_array().map(Vec::len), Some(3));
    let board = app
        .get("/v1/pools/main/leaderboard?established=false")
        .await;
    assert_eq!(board.assert_status(StatusCode::OK, "board")["total"], 4);
    let duel = app.get("/v1/pools/main/win-probability?a=b&b=d").await;
    let p = duel.assert_status(StatusCode::OK, "duel")["p_a"].as_f64();
    assert!(p > Some(0.5) && p < Some(1.0), "b beat d: {p:?}");
    assert_predicts(&app, &["a", "b", "x"]).await;

    let restarted = app.restarted().await;
    assert_same_reads(
        &app,
        &restarted,
        &[
            "/v1/pools/main",
            "/v1/pools/main/leaderboard",
            "/v1/pools/main/players/c",
            "/v1/pools/main/win-probability?a=a&b=d",
        ],
    )
    .await;
}

async fn a_trueskill_pool_rates_teams_with_partial_play_and_survives_a_restart(app: TestApp) {
    let created = app
        .put_pool(
            POOL,
            json!({"system": "trueskill", "draw_probability": 0.2}),
        )
        .await;
    let created = created.assert_status(StatusCode::CREATED, "create");
    assert_eq!(created["system"], "trueskill");
    assert_eq!(
        created["params"],
        json!({"beta": 25.0 / 6.0, "tau": 25.0 / 300.0, "draw_probability": 0.2,
               "mu_init": 25.0, "sigma_init": 25.0 / 3.0})
    );
    for (body, field) in [
        (json!({"system": "trueskill", "kappa": 0.5}), "kappa"),
        (
            json!({"system": "trueskill", "draw_probability": 1.0}),
            "draw_probability",
        ),
    ] {
        app.put_pool(POOL, body).await.assert_error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_parameter",
            Some(field),
            field,
        );
    }
    let mut capped = round("capped", &["a", "b"]);
    capped["perf_ceiling"] = json!(30.0);
    app.post_round(POOL, capped).await.assert_error(
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_round",
        Some("perf_ceiling"),
        "TrueSkill has no performance ceiling",
    );
    let team = |id: &str| {
        json!({"id": id, "standings": [
            {"player": "a", "rank": 1, "team": "red"},
            {"player": "b", "rank": 1, "team": "red", "partial_play": 0.25},
            {"player": "c", "rank": 2, "team": "blue"},
            {"player": "d", "rank": 2, "team": "blue"}]})
    };
    app.play([
        team("r1"),
        round("r2", &["c", "a"]),
        round("r3", &["d", "b"]),
    ])
    .await;
    assert_eq!(app.pool_info(POOL).await["rounds_applied"], 3);

    let r1 = app.get("/v1/pools/main/rounds/r1").await;
    let results = &r1.assert_status(StatusCode::OK, "r1")["results"];
    let gain = |i: usize| {
        results[i]["mu_after"].as_f64().unwrap_or_default()
            - results[i]["mu_before"].as_f64().unwrap_or_default()
    };
    assert!(gain(0) > 0.0, "the winners rose: {results}");
    assert!(
        gain(1) > 0.0 && gain(1) < gain(0),
        "who played a quarter of the round rose less: {results}"
    );
    assert!(gain(2) < 0.0 && gain(3) < 0.0, "the losers fell: {results}");
    let quality = app
        .post(
            "/v1/pools/main/match-quality",
            Some(crate::support::READ_KEY),
            json!({"sides": [["a", "b"], ["c", "d"]]}),
        )
        .await;
    let quality = quality.assert_status(StatusCode::OK, "quality")["quality"].as_f64();
    assert!(quality > Some(0.0) && quality < Some(1.0), "{quality:?}");

    let restarted = app.restarted().await;
    assert_same_reads(
        &app,
        &restarted,
        &[
            "/v1/pools/main",
            "/v1/pools/main/leaderboard",
            "/v1/pools/main/players/b",
            "/v1/pools/main/players/b/history",
            "/v1/pools/main/win-probability?a=a&b=d",
        ],
    )
    .await;
}

async fn a_plackett_luce_pool_rates_as_computed_by_hand(app: TestApp) {
    let created = app
        .put_pool(
            POOL,
            json!({"system": "weng_lin", "model": "plackett_luce", "tau": 0.0}),
        )
        .await;
    let created = created.assert_status(StatusCode::CREATED, "create");
    assert_eq!(created["params"]["model"], "plackett_luce");
    app.play([round("r1", &["a", "b", "c"])]).await;
    let r1 = app.get("/v1/pools/main/rounds/r1").await;
    let results = &r1.assert_status(StatusCode::OK, "r1")["results"];
    // Weng & Lin's Algorithm 4 worked by hand for three newcomers (see src/engine/tests/weng_lin.rs).
    for (i, (mu, sigma)) in [
        (27.868_876_552_746_237, 8.204_837_030_780_652),
        (25.717_219_138_186_557, 8.057_829_747_583_876),
        (21.413_904_309_067_206, 8.057_829_747_583_876),
    ]
    .into_iter()
    .enumerate()
    {
        let got = (&results[i]["mu_after"], &results[i]["sigma_after"]);
        let near =
            |x: &serde_json::Value, want: f64| (x.as_f64().unwrap_or(0.0) - want).abs() < 1e-9;
        assert!(near(got.0, mu) && near(got.1, sigma), "{i}: {results}");
    }
    let restarted = app.restarted().await;
    assert_same_reads(
        &app,
        &restarted,
        &["/v1/pools/main", "/v1/pools/main/leaderboard"],
    )
    .await;
}

async fn a_glicko2_pool_reproduces_glickmans_example_and_survives_a_restart(app: TestApp) {
    let created = app
        .put_pool(POOL, json!({"system": "glicko2", "sigma_init": 200.0}))
        .await;
    let created = created.assert_status(StatusCode::CREATED, "create");
    assert_eq!(
        created["params"],
        json!({"tau": 0.5, "mu_init": 1500.0, "sigma_init": 200.0, "volatility_init": 0.06})
    );
    app.put_pool(POOL, json!({"system": "glicko2", "beta": 3.0}))
        .await
        .assert_error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_parameter",
            Some("beta"),
            "not Glicko-2's",
        );
    let team = json!({"id": "team", "standings": [
        {"player": "a", "rank": 1}, {"player": "b", "rank": 2, "team": "red"},
        {"player": "c", "rank": 2, "team": "red"}]});
    app.post_round(POOL, team).await.assert_error(
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_round",
        Some("standings[1].team"),
        "Glicko-2 has no teams",
    );
    // Glickman's example as two rounds: its opponents' deviations come from their first
    // round, so only the shape is his; the second round is checked against a restart.
    app.play([
        round("r1", &["top", "second", "last"]),
        round("r2", &["top", "second", "player", "last"]),
    ])
    .await;
    let player = app.get("/v1/pools/main/players/player").await;
    let player = player.assert_status(StatusCode::OK, "player");
    assert_eq!(player["rounds"], 1);
    assert!(
        player["mu"].as_f64() < Some(1500.0) && player["sigma"].as_f64() < Some(200.0),
        "beat one, lost to two stronger: {player}"
    );
    let restarted = app.restarted().await;
    assert_same_reads(
        &app,
        &restarted,
        &[
            "/v1/pools/main",
            "/v1/pools/main/leaderboard",
            "/v1/pools/main/players/player",
            "/v1/pools/main/players/top/history",
            "/v1/pools/main/win-probability?a=top&b=last",
        ],
    )
    .await;
    restarted.play([round("r3", &["last", "top"])]).await;
    let last = restarted.get("/v1/pools/main/players/last").await;
    assert_eq!(
        last.assert_status(StatusCode::OK, "last")["rounds"],
        3,
        "volatility reloaded"
    );
}

async fn a_codeforces_pool_rates_weighted_rounds_and_survives_a_restart(app: TestApp) {
    let created = app
        .put_pool(
            POOL,
            json!({"system": "codeforces", "weight_multiplier": 0.5}),
        )
        .await;
    let created = created.assert_status(StatusCode::CREATED, "create");
    assert_eq!(created["system"], "codeforces");
    assert_eq!(created["params"]["weight_multiplier"], 0.5);
    let mut capped = round("capped", &["a", "b"]);
    capped["perf_ceiling"] = json!(3000.0);
    app.post_round(POOL, capped).await.assert_error(
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_round",
        Some("perf_ceiling"),
        "Codeforces has no ceiling",
    );
    let mut heavy = round("r2", &["c", "a", "b"]);
    heavy["weight"] = json!(2.0);
    app.play([round("r1", &["a", "b", "c"]), heavy]).await;
    let r1 = app.get("/v1/pools/main/rounds/r1").await;
    let results = &r1.assert_status(StatusCode::OK, "r1")["results"];
    assert!(results[0]["mu_after"].as_f64() > Some(1500.0), "{results}");
    assert_eq!(results[0]["sigma_after"], 350.0, "no uncertainty is kept");
    assert_predicts(&app, &["a", "b", "c"]).await;
    let restarted = app.restarted().await;
    assert_same_reads(&app, &restarted, &SOLO_READS).await;
}

async fn a_topcoder_pool_rates_as_computed_by_hand_and_survives_a_restart(app: TestApp) {
    let created = app
        .put_pool(
            POOL,
            json!({"system": "topcoder", "weight_multiplier": 0.5}),
        )
        .await;
    let created = created.assert_status(StatusCode::CREATED, "create");
    assert_eq!(created["system"], "topcoder");
    assert_eq!(created["params"]["weight_multiplier"], 0.5);
    let mut team = round("team", &["a", "b"]);
    team["standings"][0]["team"] = json!("duo");
    app.post_round(POOL, team).await.assert_error(
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_round",
        Some("standings[0].team"),
        "Topcoder rates players, not teams",
    );
    app.play([round("r1", &["a", "b", "c"]), round("r2", &["c", "a", "b"])])
        .await;

    // Three newcomers (1500, 350): the field's spread is 350, every expected rank 3/2, the
    // winner's rank 1/2, so it performs at 1500 + 350 (Φ⁻¹(1/2) − Φ⁻¹(1/6)); a first round
    // weighs 1.5 times the multiplier 0.5 (docs/topcoder.md).
    let performance = 1500.0 + 350.0 * 0.967_421_566_101_701;
    let weight = 0.75;
    let mu = (1500.0 + weight * performance) / (1.0 + weight);
    let sigma = ((mu - 1500.0_f64).powi(2) / weight + 350.0 * 350.0 / (1.0 + weight)).sqrt();
    let r1 = app.get("/v1/pools/main/rounds/r1").await;
    let winner = &r1.assert_status(StatusCode::OK, "r1")["results"][0];
    let close = |field: &str, want: f64| {
        let got = winner[field].as_f64().unwrap_or(f64::NAN);
        assert!((got - want).abs() < 1e-6, "{field}: {got} against {want}");
    };
    close("performance", performance);
    close("mu_after", mu);
    close("sigma_after", sigma);
    assert_predicts(&app, &["a", "b", "c"]).await;

    let restarted = app.restarted().await;
    assert_same_reads(&app, &restarted, &SOLO_READS).await;
}

async fn an_elo_pool_shows_no_uncertainty_and_survives_a_restart(app: TestApp) {
    let created = app
        .put_pool(POOL, json!({"system": "elo", "k": 16.0}))
        .await;
    let created = created.assert_status(StatusCode::CREATED, "create");
    assert_eq!(created["system"], "elo");
    assert_eq!(created["params"]["k"], 16.0);
    app.play([round("r1", &["a", "b", "c"]), round("r2", &["c", "a", "b"])])
        .await;

    // Three newcomers: the winner scores 2 of 2 against an expectation of 1, so it gains
    // k · (2 − 1) / 2 = 8 (docs/elo.md).
    let r1 = app.get("/v1/pools/main/rounds/r1").await;
    let winner = &r1.assert_status(StatusCode::OK, "r1")["results"][0];
    assert_eq!(winner["mu_after"], 1508.0);
    assert_eq!(winner["sigma_after"], serde_json::Value::Null);
    let player = app.get("/v1/pools/main/players/a").await;
    let player = player.assert_status(StatusCode::OK, "a");
    assert_eq!(player["sigma"], serde_json::Value::Null);
    assert_eq!(player["conservative"], player["mu"], "no σ to subtract");
    let board = app
        .get("/v1/pools/main/leaderboard?order=conservative")
        .await;
    let board = board.assert_status(StatusCode::OK, "leaderboard");
    assert_eq!(board["entries"][0]["sigma"], serde_json::Value::Null);
    let history = app.get("/v1/pools/main/players/c/history").await;
    let history = history.assert_status(StatusCode::OK, "history");
    assert_eq!(
        history["entries"][0]["sigma"],
        serde_json::Value::Null,
        "{history}"
    );
    assert_predicts(&app, &["a", "b", "c"]).await;

    let restarted = app.restarted().await;
    assert_same_reads(&app, &restarted, &SOLO_READS).await;
    assert_same_reads(&app, &restarted, &["/v1/pools/main/players/a"]).await;
}

/// The reads a pool of players `a`, `b`, `c` must answer alike before and after a restart.
const SOLO_READS: [&str; 4] = [
    "/v1/pools/main",
    "/v1/pools/main/leaderboard",
    "/v1/pools/main/players/c/history",
    "/v1/pools/main/win-probability?a=a&b=c",
];

/// Asserts that predictions and match quality answer in the pool's own model: P(first) over
/// `players` sums to 1, and the first two as sides are a match of quality in (0, 1].
async fn assert_predicts(app: &TestApp, players: &[&str]) {
    let entrants: Vec<serde_json::Value> =
        players.iter().map(|p| json!({"players": [p]})).collect();
    let forecast = app
        .post(
            "/v1/pools/main/predictions",
            Some(crate::support::READ_KEY),
            json!({ "entrants": entrants }),
        )
        .await;
    let forecast = forecast.assert_status(StatusCode::OK, "forecast");
    let total: f64 = forecast["entrants"]
        .as_array()
        .map(|e| e.iter().filter_map(|e| e["p_first"].as_f64()).sum())
        .unwrap_or_default();
    assert!((total - 1.0).abs() < 1e-9, "{forecast}");
    let quality = app
        .post(
            "/v1/pools/main/match-quality",
            Some(crate::support::READ_KEY),
            json!({"sides": [[players[0]], [players[1]]]}),
        )
        .await;
    let quality = quality.assert_status(StatusCode::OK, "quality")["quality"].as_f64();
    assert!(quality > Some(0.0) && quality <= Some(1.0), "{quality:?}");
}

/// Asserts that `restarted` answers every GET of `uris` as `app` does.
async fn assert_same_reads(app: &TestApp, restarted: &TestApp, uris: &[&str]) {
    for uri in uris {
        let before = app.get(uri).await;
        let after = restarted.get(uri).await;
        assert_eq!(
            after.assert_status(StatusCode::OK, uri),
            before.assert_status(StatusCode::OK, uri),
            "{uri}"
        );
    }
}

/// Two processes on one database, the second started before the pool existed: it loads the
/// pool the first created (by its refresh, or on first use; not 404 until a restart), serves
/// it, applies a round posted to it, and a PUT of the same parameters does not empty it.
async fn a_pool_another_process_created_is_served_and_fed_here(app: TestApp) {
    let other = app.restarted().await;
    let lazy = app.restarted().await;
    app.create_pool(POOL).await;
    // The once-a-second refresh finds it without any request naming it.
    assert!(other.state.pools.get(POOL).is_none());
    other.state.load_new_pools().await.expect("look for pools");
    assert!(
        other.state.pools.get(POOL).is_some(),
        "loaded by the refresh"
    );
    app.play([round("r1", &["a", "b", "c"])]).await;
    // Its worker's next step (within a poll interval in the service) sees r1 and rates it
    // again, reading that round only.
    let loaded = other.state.pools.get(POOL).expect("loaded");
    let step = worker::process_next(other.state.storage.as_ref(), &loaded).await;
    assert_eq!(
        step.expect("a worker step"),
        Processed::Followed { lines: 1 }
    );
    let board = "/v1/pools/main/leaderboard?established=false";
    let there = app
        .get(board)
        .await
        .assert_status(StatusCode::OK, "first")
        .clone();
    let here = other
        .get(board)
        .await
        .assert_status(StatusCode::OK, "second")
        .clone();
    assert_eq!(here, there);
    // A process that has not refreshed loads it when a request names it.
    assert!(lazy.state.pools.get(POOL).is_none());
    let named = lazy
        .get(board)
        .await
        .assert_status(StatusCode::OK, "third")
        .clone();
    assert_eq!(named, there);

    other.queue_round(round("r2", &["c", "d"])).await;
    other.apply_queued(POOL).await;
    let here = other
        .get(board)
        .await
        .assert_status(StatusCode::OK, "second")
        .clone();
    // The first process notices the round it did not apply, follows, and serves the same.
    let pool = app.state.pools.get(POOL).expect("loaded");
    let step = worker::process_next(app.state.storage.as_ref(), &pool).await;
    assert_eq!(
        step.expect("a worker step"),
        Processed::Followed { lines: 1 }
    );
    let there = app
        .get(board)
        .await
        .assert_status(StatusCode::OK, "first")
        .clone();
    assert_eq!(here, there);
    assert_eq!(here["total"], 4);

    let unchanged = other.put_pool(POOL, json!({})).await;
    unchanged.assert_status(StatusCode::OK, "the same parameters");
    let after = other
        .get(board)
        .await
        .assert_status(StatusCode::OK, "second")
        .clone();
    assert_eq!(
        after, here,
        "a PUT of the same parameters keeps the players"
    );
}

/// Every belief of `app`'s pool, bit for bit, with the leaderboard as served.
async fn pool_as_held(app: &TestApp) -> (Vec<(String, String)>, serde_json::Value) {
    pool_as_held_in(app, POOL).await
}

/// Every belief of `app`'s pool `pool`, bit for bit, with the leaderboard as served.
async fn pool_as_held_in(app: &TestApp, pool: &str) -> (Vec<(String, String)>, serde_json::Value) {
    let state = app.state.pools.get(pool).expect("loaded").read();
    let beliefs = state
        .beliefs()
        .map(|(id, belief)| (id.to_owned(), format!("{belief:?}")))
        .collect();
    let board = app
        .get(&format!("/v1/pools/{pool}/leaderboard?limit=1000"))
        .await
        .assert_status(StatusCode::OK, "leaderboard")
        .clone();
    (beliefs, board)
}

/// Taking a pool over reloads it first when memory holds lines rated while following; memory
/// that is a load of the database, not followed since (a process just started), is kept.
async fn a_pool_taken_over_is_reloaded_only_if_lines_were_followed_since_it_was_loaded(
    app: TestApp,
) {
    app.create_pool(POOL).await;
    app.play([round("r1", &["a", "b"])]).await;
    let other = app.restarted().await;
    let storage = other.state.storage.as_ref();
    let pool = other.state.pools.get(POOL).expect("loaded");
    pool.take_over();
    let step = worker::process_next(storage, &pool).await;
    assert_eq!(
        step.expect("a step"),
        Processed::Idle,
        "a load is the database"
    );
    assert!(!pool.reload_pending());

    pool.hand_over();
    app.play([round("r2", &["b", "a"])]).await;
    let step = worker::follow(storage, &pool).await;
    assert_eq!(step.expect("a step"), Processed::Followed { lines: 1 });
    pool.take_over();
    let step = worker::process_next(storage, &pool).await;
    assert_eq!(step.expect("a step"), Processed::Reloaded, "followed since");
    let step = worker::process_next(storage, &pool).await;
    assert_eq!(step.expect("a step"), Processed::Idle);
    assert_eq!(pool_as_held(&other).await, pool_as_held(&app).await);
}

/// A process that does not own the pool follows the one that does: it rates again the lines
/// applied since its last one (rounds and a season start, read from the rounds alone) and then
/// holds exactly what a fresh load of the database holds; a correction, which rated the whole
/// pool again, is followed by a reload; a backlog longer than one read is followed read by read.
async fn a_follower_rates_the_owners_lines_again_and_reloads_only_for_a_correction(app: TestApp) {
    app.create_pool(POOL).await;
    let follower = app.restarted().await;
    let pool = follower.state.pools.get(POOL).expect("loaded");
    app.play([
        round("r1", &["a", "b", "c"]),
        round("r2", &["c", "a"]),
        round("r3", &["b", "d", "a"]),
    ])
    .await;
    app.post(
        "/v1/pools/main/seasons",
        Some(crate::support::ADMIN_KEY),
        json!({"id": "s2", "mu_reset": 0.3, "sigma_reset": 0.5}),
    )
    .await
    .assert_status(StatusCode::ACCEPTED, "a season starts");
    app.play([round("r4", &["d", "b"]), round("r5", &["a", "e"])])
        .await;
    let step = worker::follow(follower.state.storage.as_ref(), &pool).await;
    assert_eq!(step.expect("a step"), Processed::Followed { lines: 6 });
    let followed = pool_as_held(&app).await;
    assert_eq!(pool_as_held(&follower).await, followed, "followed");
    assert_eq!(
        pool_as_held(&app.restarted().await).await,
        followed,
        "as loaded"
    );
    let step = worker::follow(follower.state.storage.as_ref(), &pool).await;
    assert_eq!(step.expect("a step"), Processed::Idle, "nothing new");

    app.send(
        axum::http::Method::DELETE,
        "/v1/pools/main/rounds/r2",
        Some(crate::support::ADMIN_KEY),
        crate::support::Payload::Empty,
    )
    .await
    .assert_status(StatusCode::ACCEPTED, "void r2");
    app.apply_queued(POOL).await;
    let step = worker::follow(follower.state.storage.as_ref(), &pool).await;
    assert_eq!(step.expect("a step"), Processed::Reloaded);
    let corrected = pool_as_held(&app).await;
    assert_ne!(corrected.0, followed.0, "voiding r2 changed the ratings");
    assert_eq!(pool_as_held(&follower).await, corrected, "reloaded");

    // More lines than one read takes (64): read and rated in turn.
    let backlog: Vec<serde_json::Value> = (0..70)
        .map(|i| round(&format!("m{i}"), &["a", "b", "f"]))
        .collect();
    app.play(backlog).await;
    let step = worker::follow(follower.state.storage.as_ref(), &pool).await;
    assert_eq!(step.expect("a step"), Processed::Followed { lines: 70 });
    assert_eq!(pool_as_held(&follower).await, pool_as_held(&app).await);
}

/// What a follower rates again is what the owner stored: with a short memory (each player
/// keeps two factors) its beliefs are exactly the owner's and a fresh load's, whether it follows
/// round by round or seven lines at once across a season start; leagues, divisions, ladder
/// points and bonus points follow too.
async fn a_follower_keeps_what_the_owner_keeps_one_round_or_many_behind(app: TestApp) {
    app.put_pool(POOL, json!({"history_limit": 2}))
        .await
        .assert_status(StatusCode::CREATED, "a pool with a short memory");
    put_leagues(&app, POOL, ladder()).await;
    let follower = app.restarted().await;
    let pool = follower.state.pools.get(POOL).expect("loaded");
    let (players, rounds) = ladder_rounds();
    let same = |what: &str, a: &TestApp, b: &TestApp| {
        let (a, b) = (
            a.state.pools.get(POOL).expect("loaded").read(),
            b.state.pools.get(POOL).expect("loaded").read(),
        );
        assert_eq!(a.leagues(), b.leagues(), "{what}: leagues");
    };
    for r in &rounds[..4] {
        app.play([r.clone()]).await;
        let step = worker::follow(follower.state.storage.as_ref(), &pool).await;
        assert_eq!(step.expect("a step"), Processed::Followed { lines: 1 });
        assert_eq!(pool_as_held(&follower).await, pool_as_held(&app).await);
        same("round by round", &follower, &app);
    }
    app.play(rounds[4..7].to_vec()).await;
    app.post(
        "/v1/pools/main/seasons",
        Some(crate::support::ADMIN_KEY),
        json!({"id": "s2", "mu_reset": 0.5, "sigma_reset": 0.5}),
    )
    .await
    .assert_status(StatusCode::ACCEPTED, "a season starts");
    app.play(rounds[7..].to_vec()).await;
    let step = worker::follow(follower.state.storage.as_ref(), &pool).await;
    assert_eq!(step.expect("a step"), Processed::Followed { lines: 7 });
    let loaded = app.restarted().await;
    let held = pool_as_held(&follower).await;
    assert_eq!(held, pool_as_held(&app).await, "as the owner holds it");
    assert_eq!(held, pool_as_held(&loaded).await, "as loaded");
    same("seven at once", &follower, &loaded);
    let shown = leagues_shown(&follower, POOL, &rounds, &players).await;
    assert_eq!(shown, leagues_shown(&app, POOL, &rounds, &players).await);
    let factors = |app: &TestApp| {
        app.state
            .pools
            .get(POOL)
            .expect("loaded")
            .read()
            .beliefs()
            .map(|(_, state)| match state {
                mmr_service::engine::SystemState::EloMmr(s) => s.factors.len(),
                other => panic!("an Elo-MMR state: {other:?}"),
            })
            .max()
    };
    assert_eq!(factors(&follower), Some(2), "memory is short");
}

/// Beliefs that keep no logistic factor (Elo-MMχ, the Gaussian variant; `rho` infinite, which
/// folds every factor into the Gaussian term) are followed exactly too, round by round and
/// several rounds at once.
async fn a_follower_follows_beliefs_that_keep_no_factors(app: TestApp) {
    let pools = [
        ("gaussian", json!({"variant": "gaussian"})),
        ("rho_inf", json!({"rho": "inf"})),
    ];
    for (pool, params) in &pools {
        app.put_pool(pool, params.clone())
            .await
            .assert_status(StatusCode::CREATED, pool);
    }
    let follower = app.restarted().await;
    let (_, rounds) = ladder_rounds();
    for (pool, _) in pools {
        let followed = follower.state.pools.get(pool).expect("loaded");
        let follow = |from: usize, to: usize| {
            let (app, follower, rounds, followed) = (&app, &follower, &rounds, &followed);
            async move {
                for r in &rounds[from..to] {
                    app.post_round(pool, r.clone())
                        .await
                        .assert_status(StatusCode::ACCEPTED, "queued");
                }
                app.apply_queued(pool).await;
                let step = worker::follow(follower.state.storage.as_ref(), followed).await;
                assert_eq!(
                    step.expect("a step"),
                    Processed::Followed { lines: to - from },
                    "{pool}"
                );
                assert_eq!(
                    pool_as_held_in(follower, pool).await,
                    pool_as_held_in(app, pool).await,
                    "{pool}"
                );
            }
        };
        follow(0, 1).await;
        follow(1, 2).await;
        follow(2, rounds.len()).await;
    }
}

/// A backlog of three batches is settled in one worker step, each batch rated
/// while the one before it commits: every round in order (a broken one failed in place), and
/// every rating, round and pool count bit for bit what applying the rounds one at a time gives.
async fn a_backlog_settles_in_one_step_of_pipelined_batches_exactly_as_one_by_one(app: TestApp) {
    const BROKEN: usize = 70;
    let players = ["a", "b", "c", "d", "e", "f", "g"];
    let rounds: Vec<(String, Option<serde_json::Value>)> = (0..150)
        .map(|i| {
            let id = format!("r{i:03}");
            let mut order = players;
            order.rotate_left(i % players.len());
            let time = format!("2026-01-01T{:02}:{:02}:00Z", i / 60, i % 60);
            (
                id.clone(),
                (i != BROKEN).then(|| round_at(&id, &time, &order[..4])),
            )
        })
        .collect();
    let queue = |pool: &'static str, id: &str, round: Option<&serde_json::Value>| {
        let app = &app;
        let id = id.to_owned();
        let round = round.cloned();
        async move {
            match round {
                Some(round) => {
                    app.post_round(pool, round)
                        .await
                        .assert_status(StatusCode::ACCEPTED, "queued");
                }
                // The API never stores such a body; a round stored by an older version might.
                None => {
                    app.state
                        .storage
                        .enqueue_round(pool, &id, "{}", 1000)
                        .await
                        .expect("enqueue directly");
                }
            }
        }
    };
    app.create_pool("alone").await;
    app.create_pool("together").await;
    for (id, round) in &rounds {
        queue("alone", id, round.as_ref()).await;
        assert_eq!(app.apply_queued("alone").await.len(), 1);
        queue("together", id, round.as_ref()).await;
    }
    let pool = app.state.pools.get("together").expect("the pool is loaded");
    let step = worker::process_next(app.state.storage.as_ref(), &pool)
        .await
        .expect("a worker step");
    let Processed::Settled(settled) = step else {
        panic!("rounds settled: {step:?}")
    };
    let expected: Vec<_> = rounds
        .iter()
        .map(|(id, round)| match round {
            Some(_) => Settled::Applied(id.clone()),
            None => Settled::Failed(id.clone()),
        })
        .collect();
    assert_eq!(settled, expected, "in order, in one step");
    for (id, _) in &rounds {
        let (alone, together) = (
            app.get(&format!("/v1/pools/alone/rounds/{id}")).await,
            app.get(&format!("/v1/pools/together/rounds/{id}")).await,
        );
        assert_eq!(together.body, alone.body, "round {id}");
    }
    // What was committed, read back by a fresh process, too.
    let restarted = app.restarted().await;
    for reader in [&app, &restarted] {
        for player in players {
            // Every round the player played, newest first, read in pages along the chain of
            // their history rows, which rounds settled together chain as rounds settled alone.
            let played: Vec<&str> = rounds
                .iter()
                .rev()
                .filter(|(_, round)| {
                    round.as_ref().is_some_and(|round| {
                        round["standings"]
                            .as_array()
                            .is_some_and(|s| s.iter().any(|e| e["player"] == player))
                    })
                })
                .map(|(id, _)| id.as_str())
                .collect();
            for pool in ["alone", "together"] {
                assert_eq!(
                    history_ids(reader, pool, player).await,
                    played,
                    "{pool}: {player}"
                );
            }
            let (alone, together) = (
                reader
                    .get(&format!("/v1/pools/alone/players/{player}"))
                    .await,
                reader
                    .get(&format!("/v1/pools/together/players/{player}"))
                    .await,
            );
            assert_eq!(together.status, StatusCode::OK);
            assert_eq!(together.body, alone.body, "{player}: bit for bit");
        }
        let (alone, together) = (
            reader.pool_info("alone").await,
            reader.pool_info("together").await,
        );
        for count in [
            "rounds_applied",
            "rounds_failed",
            "rounds_queued",
            "players",
        ] {
            assert_eq!(together[count], alone[count], "{count}");
        }
    }
}

/// A task waiting for the pool's turn (a parameter change, new display settings) waits for
/// the batch being settled, not for the whole backlog: the step holding the turn rates no
/// further batch once another task waits, and the next steps settle the rest. Only Postgres
/// rates ahead at all (SQLite settles one batch per step anyway), so the Postgres run is the
/// one that tells.
async fn a_worker_step_ends_after_one_batch_once_another_task_waits_for_the_turn(app: TestApp) {
    const ROUNDS: usize = 200;
    const BATCH: usize = 64;
    app.create_pool(POOL).await;
    for i in 0..ROUNDS {
        app.queue_round(round(&format!("r{i}"), &["a", "b", "c"]))
            .await;
    }
    let pool = app.state.pools.get(POOL).expect("loaded");
    let step = tokio::spawn({
        let storage = std::sync::Arc::clone(&app.state.storage);
        let pool = std::sync::Arc::clone(&pool);
        async move { worker::process_next(storage.as_ref(), &pool).await }
    });
    while pool.try_turn().is_some() {
        tokio::task::yield_now().await;
    }
    let turn = pool.turn().await;
    let Processed::Settled(settled) = step.await.expect("the step").expect("a step") else {
        panic!("rounds settled")
    };
    assert_eq!(settled.len(), BATCH, "one batch, then the turn");
    drop(turn);
    let rest = app.apply_queued(POOL).await;
    assert_eq!(settled.len() + rest.len(), ROUNDS);
    assert!(rest.iter().all(|s| matches!(s, Settled::Applied(_))));
}

/// Posts that arrive together are stored in one transaction by their pool's writer (group
/// commit), here in two processes sharing the database: each is answered with its own place, a
/// round posted several times at once, through both, is stored once, and every accepted round
/// is applied once.
async fn posts_arriving_together_are_each_answered_with_their_own_place(app: TestApp) {
    app.create_pool(POOL).await;
    let other = std::sync::Arc::new(app.restarted().await);
    let app = std::sync::Arc::new(app);
    let mut posts = tokio::task::JoinSet::new();
    for n in 0..28 {
        let to = std::sync::Arc::clone(if n % 2 == 0 { &app } else { &other });
        posts.spawn(async move {
            // Four of them post the same round, twice through each process.
            let id = if n < 4 {
                "twice".to_owned()
            } else {
                format!("r{n}")
            };
            let players = [format!("p{n}"), format!("q{n}")];
            let players: Vec<&str> = if n < 4 {
                vec!["a", "b"]
            } else {
                players.iter().map(String::as_str).collect()
            };
            to.post_round(POOL, round(&id, &players)).await
        });
    }
    let mut positions = Vec::new();
    let mut reposts = 0;
    while let Some(response) = posts.join_next().await {
        let response = response.expect("a post");
        match response.status {
            StatusCode::ACCEPTED => {
                positions.push(response.body["position"].as_u64().expect("a position"))
            }
            StatusCode::OK => reposts += 1,
            status => panic!("{status}: {}", response.body),
        }
    }
    positions.sort_unstable();
    assert_eq!(positions, (1..=25).collect::<Vec<u64>>(), "one place each");
    assert_eq!(reposts, 3, "the round posted four times is stored once");
    let settled = app.apply_queued(POOL).await;
    assert_eq!(settled.len(), 25);
    assert!(settled.iter().all(|s| matches!(s, Settled::Applied(_))));
    assert_eq!(app.pool_info(POOL).await["rounds_applied"], 25);
}

/// The queue's rows hold each round in the form POST stored (`src/worker/line.rs`); rows an
/// earlier version queued, with its nulls, an explicit weight of 1, a time with an offset, a
/// team, apply as the same rounds posted now, and a row of a later form fails with its reason.
async fn rounds_queued_in_the_shapes_earlier_versions_stored_apply_as_the_same_rounds_posted_now(
    app: TestApp,
) {
    let old_rows = [
        (
            "r1",
            r#"{"id":"r1","time":"2024-02-01T02:00:00+02:00","weight":null,"perf_ceiling":null,"standings":[{"player":"a","rank":1,"team":null,"partial_play":null},{"player":"b","rank":2,"team":null,"partial_play":null},{"player":"c","rank":3,"team":null,"partial_play":null}]}"#,
        ),
        (
            "r2",
            r#"{"id":"r2","weight":1.0,"standings":[{"player":"c","rank":1,"team":"t"},{"player":"a","rank":1,"team":"t"},{"player":"b","rank":2}]}"#,
        ),
        (
            "r3",
            r#"{"v":2,"id":"r3","standings":[{"player":"a","rank":1},{"player":"b","rank":2}]}"#,
        ),
    ];
    let posted = [
        json!({"id": "r1", "time": "2024-02-01T00:00:00Z", "standings": [
            {"player": "a", "rank": 1}, {"player": "b", "rank": 2}, {"player": "c", "rank": 3}]}),
        json!({"id": "r2", "standings": [
            {"player": "a", "rank": 1, "team": "t"}, {"player": "c", "rank": 1, "team": "t"},
            {"player": "b", "rank": 2}]}),
    ];
    app.create_pool("old").await;
    for (id, body) in old_rows {
        app.state
            .storage
            .enqueue_round("old", id, body, 10)
            .await
            .expect("queued as an earlier version did");
    }
    assert_eq!(
        app.apply_queued("old").await,
        [
            Settled::Applied("r1".into()),
            Settled::Applied("r2".into()),
            Settled::Failed("r3".into())
        ]
    );
    let failed = app.get("/v1/pools/old/rounds/r3").await;
    assert_eq!(
        failed.body["error"],
        "stored in form 2, which this version cannot read (form 1)"
    );
    app.create_pool(POOL).await;
    app.play(posted).await;
    for player in ["a", "b", "c"] {
        let (old, now) = (
            app.get(&format!("/v1/pools/old/players/{player}")).await,
            app.get(&format!("/v1/pools/{POOL}/players/{player}")).await,
        );
        assert_eq!(old.body["mu"], now.body["mu"], "{player}");
        assert_eq!(old.body["sigma"], now.body["sigma"], "{player}");
        assert_eq!(old.body["last_round"], now.body["last_round"], "{player}");
    }
    let (old, now) = (
        app.get("/v1/pools/old/rounds/r1").await,
        app.get(&format!("/v1/pools/{POOL}/rounds/r1")).await,
    );
    assert_eq!(old.body["time"], "2024-02-01T00:00:00Z");
    assert_eq!(old.body["time"], now.body["time"]);
    assert_eq!(old.body["results"], now.body["results"]);
}
