//! `GET /v1/pools/{pool}/win-probability`, `POST /v1/pools/{pool}/predictions`,
//! `POST /v1/pools/{pool}/match-quality` and `POST /v1/pools/{pool}/match-qualities`.

use std::future::Future;

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};

use mmr_service::api::json::COMPUTE_BODY_LIMIT;
use mmr_service::api::matchmaking::MAX_WAITING;
use mmr_service::api::predictions::MAX_PLAYERS;
use mmr_service::compute::MAX_ENTRANTS;
use mmr_service::names::MAX_ID_BYTES;

use crate::support::{num, round, settings, Payload, TestApp, TestResponse, POOL};

const WIN_PROBABILITY: &str = "/v1/pools/main/win-probability";
const PREDICTIONS: &str = "/v1/pools/main/predictions";
const MATCH_QUALITY: &str = "/v1/pools/main/match-quality";

/// Tolerance for sums of probabilities computed by quadrature.
const EPSILON: f64 = 1e-9;

/// `count` entrants of one player each, all different.
fn solos(count: usize) -> Value {
    teams(count, 1)
}

/// `count` entrants of `size` players each, all different.
fn teams(count: usize, size: usize) -> Value {
    (0..count)
        .map(|i| json!({"players": (0..size).map(|j| format!("p{i}-{j}")).collect::<Vec<_>>()}))
        .collect()
}

/// A pool where `strong` beat `weak` three times, with `mid` in between.
async fn rated() -> TestApp {
    let app = TestApp::new().await;
    app.create_pool(POOL).await;
    app.play((1..=3).map(|i| round(&format!("r{i}"), &["strong", "mid", "weak"])))
        .await;
    app
}

#[tokio::test]
async fn the_win_probability_of_two_players_favours_the_stronger_and_sums_to_one() {
    let app = rated().await;
    let response = app.get(&format!("{WIN_PROBABILITY}?a=strong&b=weak")).await;
    let body = response.assert_status(StatusCode::OK, "strong vs weak");
    assert_eq!((&body["a"], &body["b"]), (&json!("strong"), &json!("weak")));
    assert_eq!(
        (&body["a_known"], &body["b_known"]),
        (&json!(true), &json!(true))
    );
    let (p_a, p_b) = (num(&body["p_a"]), num(&body["p_b"]));
    assert!(p_a > 0.5 && p_a < 1.0, "{p_a}");
    assert!((p_a + p_b - 1.0).abs() < EPSILON);
    let reverse = app.get(&format!("{WIN_PROBABILITY}?a=weak&b=strong")).await;
    let reverse = reverse.assert_status(StatusCode::OK, "weak vs strong");
    assert!((num(&reverse["p_a"]) - p_b).abs() < EPSILON, "symmetric");
}

#[tokio::test]
async fn the_win_probability_against_an_unknown_player_rates_them_as_a_newcomer() {
    let app = rated().await;
    let response = app
        .get(&format!("{WIN_PROBABILITY}?a=strong&b=stranger"))
        .await;
    let body = response.assert_status(StatusCode::OK, "strong vs stranger");
    assert_eq!(
        (&body["a_known"], &body["b_known"]),
        (&json!(true), &json!(false))
    );
    assert!(num(&body["p_a"]) > 0.5);
    let strangers = app.get(&format!("{WIN_PROBABILITY}?a=x&b=y")).await;
    let strangers = strangers.assert_status(StatusCode::OK, "two strangers");
    assert!(
        (num(&strangers["p_a"]) - 0.5).abs() < EPSILON,
        "newcomers are even"
    );
}

#[tokio::test]
async fn a_bad_win_probability_query_returns_400_naming_the_parameter() {
    let app = rated().await;
    let cases = [
        ("a=strong&b=strong", "b", "the same player twice"),
        ("a=strong", "b", "b missing"),
        ("b=strong", "a", "a missing"),
        ("a=&b=weak", "a", "an empty player id"),
        (&*format!("a=weak&b={}", "x".repeat(257)), "b", "257 bytes"),
        ("a=a%00b&b=weak", "a", "NUL"),
    ];
    for (query, field, case) in cases {
        app.get(&format!("{WIN_PROBABILITY}?{query}"))
            .await
            .assert_error(StatusCode::BAD_REQUEST, "invalid_query", Some(field), case);
    }
    app.get("/v1/pools/nowhere/win-probability?a=x&b=y")
        .await
        .assert_error(
            StatusCode::NOT_FOUND,
            "pool_not_found",
            None,
            "unknown pool",
        );
}

#[tokio::test]
async fn a_prediction_gives_each_entrant_p_first_summing_to_one_and_a_complementary_matrix() {
    let app = rated().await;
    let entrants = json!([
        {"players": ["weak"]},
        {"players": ["strong"]},
        {"players": ["mid", "stranger"]},
    ]);
    let lean = app
        .post(PREDICTIONS, None, json!({"entrants": entrants}))
        .await;
    let lean = lean.assert_status(StatusCode::OK, "predict without the matrix");
    assert!(
        lean.get("pairwise").is_none(),
        "the matrix only when asked for: {lean}"
    );
    let request = json!({"entrants": entrants, "pairwise": true});
    let response = app.post(PREDICTIONS, None, request).await;
    let body = response.assert_status(StatusCode::OK, "predict");
    let entrants = body["entrants"].as_array().expect("entrants");
    assert_eq!(entrants.len(), 3);
    assert_eq!(
        entrants[2]["players"],
        json!([{"player": "mid", "known": true}, {"player": "stranger", "known": false}]),
        "in the order given, unknown players marked"
    );
    let p_first: Vec<f64> = entrants.iter().map(|e| num(&e["p_first"])).collect();
    assert!(
        (p_first.iter().sum::<f64>() - 1.0).abs() < 1e-6,
        "{p_first:?}"
    );
    assert!(p_first[1] > p_first[0], "strong beats weak: {p_first:?}");
    let ranks: Vec<f64> = entrants.iter().map(|e| num(&e["expected_rank"])).collect();
    assert!(ranks[1] < ranks[0], "{ranks:?}");
    assert!(
        (ranks.iter().sum::<f64>() - 6.0).abs() < 1e-6,
        "expected ranks of 3 entrants sum to 1 + 2 + 3: {ranks:?}"
    );
    let pairwise: Vec<Vec<f64>> = body["pairwise"]
        .as_array()
        .expect("a matrix")
        .iter()
        .map(|row| row.as_array().expect("a row").iter().map(num).collect())
        .collect();
    assert_eq!(pairwise.len(), 3);
    for i in 0..3 {
        assert_eq!(pairwise[i].len(), 3);
        assert!(
            (pairwise[i][i] - 0.5).abs() < EPSILON,
            "the diagonal is 1/2"
        );
        for j in 0..3 {
            assert!(
                (pairwise[i][j] + pairwise[j][i] - 1.0).abs() < EPSILON,
                "P({i} ahead of {j}) + P({j} ahead of {i}) = 1: {pairwise:?}"
            );
        }
    }
    let quality = num(&body["quality"]);
    assert!(quality > 0.0 && quality <= 1.0, "{quality}");
}

#[tokio::test]
async fn an_invalid_prediction_returns_422_naming_the_field() {
    let app = rated().await;
    let cases = [
        (
            json!({"entrants": [{"players": ["strong"]}]}),
            "invalid_prediction",
            "entrants",
            "one entrant",
        ),
        (
            json!({"entrants": [{"players": ["strong", "mid"]}, {"players": ["weak", "strong"]}]}),
            "invalid_prediction",
            "entrants[1].players",
            "a player in two entrants",
        ),
        (
            json!({"entrants": [{"players": ["strong"]}, {"players": []}]}),
            "invalid_prediction",
            "entrants[1].players",
            "an entrant without players",
        ),
        (
            json!({"entrants": [{"players": ["strong"]}, {"players": ["weak", ""]}]}),
            "invalid_prediction",
            "entrants[1].players[1]",
            "an empty player id",
        ),
        (
            json!({"entrants": [{"players": ["strong"]}, {"players": ["weak", "x".repeat(257)]}]}),
            "invalid_prediction",
            "entrants[1].players[1]",
            "a player id no round can hold: 257 bytes",
        ),
        (
            json!({"entrants": [{"players": ["a\u{0}b"]}, {"players": ["weak"]}]}),
            "invalid_prediction",
            "entrants[0].players[0]",
            "a player id no round can hold: NUL",
        ),
        (
            json!({"entrants": [{"players": ["strong"]}, {"players": [3]}]}),
            "invalid_request",
            "entrants[1].players[0]",
            "a player id that is not a string",
        ),
        (
            json!({"entrants": [{"players": ["strong"], "team": "x"}, {"players": ["weak"]}]}),
            "invalid_request",
            "entrants[0].team",
            "an unknown field",
        ),
        (json!({}), "invalid_request", "entrants", "no entrants"),
        (
            json!({"entrants": solos(MAX_ENTRANTS + 1)}),
            "invalid_prediction",
            "entrants",
            "one entrant more than allowed",
        ),
        (
            json!({"entrants": teams(MAX_PLAYERS / 100 + 1, 100)}),
            "invalid_prediction",
            &*format!("entrants[{}].players", MAX_PLAYERS / 100),
            "one player more than allowed, in the entrant that crosses the bound",
        ),
        (
            json!({"entrants": solos(3), "pairwise": "yes"}),
            "invalid_request",
            "pairwise",
            "a pairwise flag that is not a boolean",
        ),
    ];
    for (body, code, field, case) in cases {
        app.post(PREDICTIONS, None, body).await.assert_error(
            StatusCode::UNPROCESSABLE_ENTITY,
            code,
            Some(field),
            case,
        );
    }
}

#[tokio::test]
async fn match_quality_rates_sides_and_gives_each_a_win_probability() {
    let app = rated().await;
    let request = json!({"sides": [["strong", "weak"], ["mid", "stranger"]]});
    let response = app.post(MATCH_QUALITY, None, request).await;
    let body = response.assert_status(StatusCode::OK, "match quality");
    let quality = num(&body["quality"]);
    assert!(quality > 0.0 && quality <= 1.0, "{quality}");
    let sides = body["sides"].as_array().expect("sides");
    assert_eq!(
        sides[1]["players"],
        json!([{"player": "mid", "known": true}, {"player": "stranger", "known": false}])
    );
    let p_win: Vec<f64> = sides.iter().map(|s| num(&s["p_win"])).collect();
    assert!((p_win.iter().sum::<f64>() - 1.0).abs() < 1e-6, "{p_win:?}");
    let lopsided = app
        .post(
            MATCH_QUALITY,
            None,
            json!({"sides": [["strong"], ["weak"]]}),
        )
        .await;
    let even = app
        .post(MATCH_QUALITY, None, json!({"sides": [["x"], ["y"]]}))
        .await;
    let lopsided = num(&lopsided.assert_status(StatusCode::OK, "lopsided")["quality"]);
    let even = num(&even.assert_status(StatusCode::OK, "even")["quality"]);
    assert!(
        even > lopsided,
        "two newcomers are a closer match: {even} vs {lopsided}"
    );
}

#[tokio::test]
async fn an_invalid_match_quality_request_returns_422_naming_the_side() {
    let app = rated().await;
    let cases = [
        (
            json!({"sides": [["strong"]]}),
            "invalid_prediction",
            "sides",
            "one side",
        ),
        (
            json!({"sides": [["strong", "mid"], ["weak", "mid"]]}),
            "invalid_prediction",
            "sides[1]",
            "a player on two sides",
        ),
        (
            json!({"sides": [["strong"], []]}),
            "invalid_prediction",
            "sides[1]",
            "an empty side",
        ),
        (
            json!({"sides": [["strong"], "weak"]}),
            "invalid_request",
            "sides[1]",
            "a side that is not a list",
        ),
        (
            json!({"sides": [["strong"], ["weak", "x".repeat(257)]]}),
            "invalid_prediction",
            "sides[1][1]",
            "a player id no round can hold",
        ),
    ];
    for (body, code, field, case) in cases {
        app.post(MATCH_QUALITY, None, body).await.assert_error(
            StatusCode::UNPROCESSABLE_ENTITY,
            code,
            Some(field),
            case,
        );
    }
}

#[tokio::test]
async fn prediction_bodies_that_are_not_json_or_name_an_unknown_pool_are_refused() {
    let app = rated().await;
    let valid: [(&str, Value); 2] = [
        (
            "predictions",
            json!({"entrants": [{"players": ["a"]}, {"players": ["b"]}]}),
        ),
        ("match-quality", json!({"sides": [["a"], ["b"]]})),
    ];
    for (route, body) in valid {
        let uri = format!("/v1/pools/main/{route}");
        app.assert_refuses_bodies_that_are_not_json(&Method::POST, &uri, None, &body)
            .await;
        app.post(&format!("/v1/pools/nowhere/{route}"), None, body)
            .await
            .assert_error(StatusCode::NOT_FOUND, "pool_not_found", None, route);
    }
}

/// The first answer to `small` that is not 200, of the small requests sent one after another
/// while `large` computes (answered 200), `large` sent again (up to 20 times) until there is
/// one. Which request the runtime starts first is not fixed: on a loaded machine the large one
/// may be done before a small one gets to ask, or be refused itself (with `refusal`, as a
/// small one would be) because a small one holds part of the room. (`compute`'s own tests hold a computation to see a refusal every time;
/// these see it reach the client.)
async fn refused_beside_large<L, S>(
    refusal: StatusCode,
    large: impl Fn() -> L,
    small: impl Fn() -> S,
) -> Option<TestResponse>
where
    L: Future<Output = TestResponse>,
    S: Future<Output = TestResponse>,
{
    for _ in 0..20 {
        let mut refused = None;
        let large = large();
        tokio::pin!(large);
        let first = loop {
            tokio::select! {
                biased;
                answer = &mut large => break answer,
                small = small() => {
                    if small.status == StatusCode::OK {
                        continue;
                    }
                    refused.get_or_insert(small);
                }
            }
        };
        assert!(
            [StatusCode::OK, refusal].contains(&first.status),
            "the largest one computes, or finds no room: {:?}",
            first.body
        );
        if first.status == StatusCode::OK && refused.is_some() {
            return refused;
        }
    }
    None
}

/// The largest prediction, matrix included.
fn largest() -> Value {
    json!({"entrants": solos(MAX_ENTRANTS), "pairwise": true})
}

#[tokio::test]
async fn a_prediction_beyond_the_concurrency_bound_returns_503_overloaded_with_retry_after() {
    let app = TestApp::with_settings(settings(&[
        ("MMR__SERVER__MAX_CONCURRENT_COMPUTATIONS", "1"),
        ("MMR__SERVER__COMPUTE_THREADS", "1"),
    ]))
    .await;
    app.create_pool(POOL).await;
    // The largest request fills the budget while it computes; small ones sent meanwhile find
    // no room.
    let refused = refused_beside_large(
        StatusCode::SERVICE_UNAVAILABLE,
        || app.post(PREDICTIONS, None, largest()),
        || app.post(PREDICTIONS, None, json!({"entrants": solos(2)})),
    )
    .await;
    let second = refused.expect("a small request arrived while the largest one computed");
    second.assert_error(
        StatusCode::SERVICE_UNAVAILABLE,
        "overloaded",
        None,
        "no room in the budget",
    );
    second.assert_retry_after(1, "no room in the budget");
    let again = app
        .post(PREDICTIONS, None, json!({"entrants": solos(2)}))
        .await;
    again.assert_status(StatusCode::OK, "the place is free again");
}

#[tokio::test]
async fn one_client_computes_at_most_half_the_budget_and_beyond_gets_429() {
    let app = TestApp::with_settings(settings(&[
        ("MMR__SERVER__MAX_CONCURRENT_COMPUTATIONS", "2"),
        ("MMR__SERVER__COMPUTE_THREADS", "1"),
    ]))
    .await;
    app.create_pool(POOL).await;
    let from = |peer: &'static str, body: Value| {
        app.send_from(peer, Method::POST, PREDICTIONS, Payload::Json(body))
    };
    // The largest request is half of a budget of two: all of its client's share. That
    // client's small requests find no room in its share, though the budget has room. (That
    // another client's do is `compute`'s to test: here its requests would wait for the one
    // compute thread.)
    let refused = refused_beside_large(
        StatusCode::TOO_MANY_REQUESTS,
        || from("192.0.2.1:5000", largest()),
        || from("192.0.2.1:5001", json!({"entrants": solos(2)})),
    )
    .await;
    let refused = refused.expect("a small request arrived while the largest one computed");
    refused.assert_error(
        StatusCode::TOO_MANY_REQUESTS,
        "rate_limited",
        None,
        "the client's share is used up",
    );
    refused.assert_retry_after(1, "the client's share is used up");
    from("192.0.2.1:5002", json!({"entrants": solos(2)}))
        .await
        .assert_status(StatusCode::OK, "the share is given back");
    from("192.0.2.2:5000", largest())
        .await
        .assert_status(StatusCode::OK, "another client");
}

#[tokio::test]
async fn compute_bodies_over_their_limit_are_413_and_the_largest_valid_ones_fit() {
    let app = rated().await;
    // MAX_PLAYERS distinct ids of the longest length, in MAX_ENTRANTS teams: the largest
    // prediction a client may send, written plainly.
    let id = |i: usize| format!("{i:0>width$}", width = MAX_ID_BYTES);
    let per_team = MAX_PLAYERS / MAX_ENTRANTS;
    let entrants: Vec<Value> = (0..MAX_ENTRANTS)
        .map(
            |t| json!({"players": (0..per_team).map(|m| id(t * per_team + m)).collect::<Vec<_>>()}),
        )
        .collect();
    let largest = json!({"entrants": entrants});
    assert!(largest.to_string().len() < COMPUTE_BODY_LIMIT);
    let answer = app.post(PREDICTIONS, None, largest).await;
    let body = answer.assert_status(StatusCode::OK, "the largest valid prediction");
    assert_eq!(
        body["entrants"].as_array().map(Vec::len),
        Some(MAX_ENTRANTS)
    );
    let waiting: Vec<Value> = (0..MAX_WAITING)
        .map(|i| json!({"player": id(i), "waited": 1_000_000.5}))
        .collect();
    let largest = json!({"waiting": waiting, "team_size": 1, "teams": 2});
    assert!(
        largest.to_string().len() < COMPUTE_BODY_LIMIT,
        "the largest matchmaking fits"
    );

    // Small arrays cost the most to parse for their size.
    let sides = COMPUTE_BODY_LIMIT / r#"["a"],"#.len() + 1;
    let flood = format!(r#"{{"sides":[{}["a"]]}}"#, r#"["a"],"#.repeat(sides));
    for route in ["predictions", "match-quality", "matchmaking"] {
        let answer = app
            .send(
                Method::POST,
                &format!("/v1/pools/main/{route}"),
                None,
                Payload::Raw(Some("application/json"), flood.clone().into()),
            )
            .await;
        answer.assert_error(
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload_too_large",
            None,
            route,
        );
    }
}

/// `POST …/match-qualities`: each candidate match answered exactly as `POST …/match-quality`
/// answers it alone; a list that is empty or too long, or a candidate the single route refuses,
/// refused naming the candidate and its field.
#[tokio::test]
async fn many_candidate_matches_are_judged_at_once_as_one_by_one() {
    const MATCH_QUALITIES: &str = "/v1/pools/main/match-qualities";
    let app = rated().await;
    let groups = [
        json!([["strong"], ["weak"]]),
        json!([["strong", "weak"], ["mid", "newcomer"]]),
        json!([["mid"], ["weak"], ["strong"]]),
    ];
    let answer = app
        .post(MATCH_QUALITIES, None, json!({"groups": groups.iter().map(|sides| json!({"sides": sides})).collect::<Vec<_>>()}))
        .await
        .assert_status(StatusCode::OK, "candidates")
        .clone();
    let answered = answer["groups"].as_array().expect("groups");
    assert_eq!(answered.len(), groups.len());
    for (sides, got) in groups.iter().zip(answered) {
        let alone = app.post(MATCH_QUALITY, None, json!({"sides": sides})).await;
        assert_eq!(got, alone.assert_status(StatusCode::OK, "alone"), "{sides}");
    }

    let alone = app
        .post(MATCH_QUALITY, None, json!({"sides": [["mid"], ["mid"]]}))
        .await;
    let field = alone.body["error"]["field"]
        .as_str()
        .expect("a field")
        .to_owned();
    let too_many: Vec<Value> = (0..1001)
        .map(|_| json!({"sides": [["strong"], ["weak"]]}))
        .collect();
    for (body, want) in [
        (json!({"groups": []}), "groups".to_owned()),
        (json!({"groups": too_many}), "groups".to_owned()),
        (
            json!({"groups": [{"sides": [["strong"], ["weak"]]}, {"sides": [["mid"], ["mid"]]}]}),
            format!("groups[1].{field}"),
        ),
        (
            json!({"groups": [{"sides": [["strong"], [""]]}]}),
            "groups[0].sides[1][0]".to_owned(),
        ),
    ] {
        app.post(MATCH_QUALITIES, None, body).await.assert_error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_prediction",
            Some(&want),
            &want,
        );
    }
}
