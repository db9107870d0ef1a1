//! `PUT /v1/pools/{pool}`, `GET /v1/pools`, `GET /v1/pools/{pool}`.

use axum::http::{Method, StatusCode};
use serde_json::json;

use crate::support::{round, Payload, TestApp, ADMIN_KEY, POOL, READ_KEY, UNKNOWN_KEYS, WRITE_KEY};

#[tokio::test]
async fn putting_a_new_pool_returns_201_with_its_parameters_defaults_filled_in() {
    let app = TestApp::new().await;
    let response = app
        .put_pool("ranked", json!({"beta": 150.0, "rho": "inf"}))
        .await;
    let body = response.assert_status(StatusCode::CREATED, "create");
    assert_eq!(body["name"], "ranked");
    assert_eq!(body["outcome"], "created");
    assert_eq!(
        body["system"], "elo_mmr",
        "Elo-MMR unless another system is asked for"
    );
    assert_eq!(
        body["params"],
        json!({"variant": "logistic", "beta": 150.0, "gamma": 35.0, "rho": "inf",
               "mu_init": 1500.0, "sigma_init": 350.0, "drift_per_day": 0.0,
               "history_limit": 500, "ties": "both"}),
        "given parameters win; the rest come from [engine]"
    );
    let info = app.pool_info("ranked").await;
    assert_eq!(info["params"], body["params"]);
    assert_eq!(info["system"], "elo_mmr");
    assert_eq!(
        (
            &info["players"],
            &info["rounds_applied"],
            &info["rounds_queued"],
            &info["rounds_failed"]
        ),
        (&json!(0), &json!(0), &json!(0), &json!(0))
    );
}

#[tokio::test]
async fn putting_the_same_parameters_again_returns_200_unchanged() {
    let app = TestApp::new().await;
    let params = json!({"system": "elo_mmr", "variant": "gaussian", "gamma": 20.0});
    app.put_pool("ranked", params.clone())
        .await
        .assert_status(StatusCode::CREATED, "create");
    let response = app.put_pool("ranked", params).await;
    let body = response.assert_status(StatusCode::OK, "again");
    assert_eq!(body["outcome"], "unchanged");
    assert_eq!(body["params"]["variant"], "gaussian");
}

#[tokio::test]
async fn putting_other_parameters_before_any_round_returns_200_updated() {
    let app = TestApp::new().await;
    app.put_pool("ranked", json!({}))
        .await
        .assert_status(StatusCode::CREATED, "create");
    let response = app
        .put_pool("ranked", json!({"ties": "split", "history_limit": 10}))
        .await;
    let body = response.assert_status(StatusCode::OK, "update");
    assert_eq!(body["outcome"], "updated");
    let info = app.pool_info("ranked").await;
    assert_eq!(
        (&info["params"]["ties"], &info["params"]["history_limit"]),
        (&json!("split"), &json!(10))
    );
}

#[tokio::test]
async fn changing_parameters_once_a_round_is_queued_returns_409_params_locked() {
    let app = TestApp::new().await;
    app.create_pool(POOL).await;
    app.queue_round(round("r1", &["a", "b"])).await;
    let before = app.pool_info(POOL).await;
    app.put_pool(POOL, json!({"beta": 100.0}))
        .await
        .assert_error(StatusCode::CONFLICT, "params_locked", None, "queued");
    app.apply_queued(POOL).await;
    app.put_pool(POOL, json!({"beta": 100.0}))
        .await
        .assert_error(StatusCode::CONFLICT, "params_locked", None, "applied");
    let after = app.pool_info(POOL).await;
    assert_eq!(after["params"], before["params"], "nothing changed");
    let same = app.put_pool(POOL, json!({})).await;
    assert_eq!(
        same.assert_status(StatusCode::OK, "the same parameters")["outcome"],
        "unchanged",
        "restating the parameters in force is no change"
    );
}

#[tokio::test]
async fn putting_an_invalid_parameter_returns_422_naming_it_and_creates_nothing() {
    let app = TestApp::new().await;
    let cases = [
        (
            json!({"beta": 0.0}),
            "invalid_parameter",
            "beta",
            "beta must be > 0",
        ),
        (
            json!({"gamma": -1.0}),
            "invalid_parameter",
            "gamma",
            "gamma must be >= 0",
        ),
        (
            json!({"rho": -0.5}),
            "invalid_parameter",
            "rho",
            "rho must be >= 0",
        ),
        (
            json!({"sigma_init": -3.0}),
            "invalid_parameter",
            "sigma_init",
            "sigma_init must be > 0",
        ),
        (
            json!({"drift_per_day": -1.0}),
            "invalid_parameter",
            "drift_per_day",
            "drift must be >= 0",
        ),
        (
            json!({"history_limit": 0}),
            "invalid_parameter",
            "history_limit",
            "at least one factor",
        ),
        (
            json!({"rho": "lots"}),
            "invalid_request",
            "rho",
            "rho is a number or \"inf\"",
        ),
        (
            json!({"variant": "elo"}),
            "invalid_request",
            "variant",
            "an unknown variant",
        ),
        (
            json!({"ties": "none"}),
            "invalid_request",
            "ties",
            "an unknown tie rule",
        ),
        (
            json!({"beta": "big"}),
            "invalid_request",
            "beta",
            "beta of the wrong type",
        ),
        (
            json!({"history_limit": -1}),
            "invalid_request",
            "history_limit",
            "a negative count",
        ),
        (
            json!({"colour": 1}),
            "invalid_request",
            "colour",
            "an unknown parameter",
        ),
        (
            json!({"variant": 1}),
            "invalid_request",
            "variant",
            "a variant given as a number",
        ),
        (
            json!({"system": "glicko"}),
            "invalid_request",
            "system",
            "a rating system the service does not have",
        ),
    ];
    for (body, code, field, case) in cases {
        let response = app.put_pool("ranked", body).await;
        response.assert_error(StatusCode::UNPROCESSABLE_ENTITY, code, Some(field), case);
    }
    app.put_pool("ranked", json!("logistic"))
        .await
        .assert_error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_request",
            None,
            "a body that is not an object names no field",
        );
    app.get("/v1/pools/ranked").await.assert_error(
        StatusCode::NOT_FOUND,
        "pool_not_found",
        None,
        "nothing created",
    );
}

#[tokio::test]
async fn putting_a_pool_with_an_invalid_name_returns_422_invalid_pool_name() {
    let app = TestApp::new().await;
    let too_long = "x".repeat(65);
    let cases = [
        ("Ranked", "upper case"),
        ("a.b", "a dot"),
        ("a%20b", "a space"),
        ("%C3%A9", "a non-ASCII letter"),
        (too_long.as_str(), "65 characters"),
    ];
    for (name, case) in cases {
        let response = app.put_pool(name, json!({})).await;
        response.assert_error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_pool_name",
            Some("pool"),
            case,
        );
    }
    let pools = app.get("/v1/pools").await;
    assert_eq!(
        pools.assert_status(StatusCode::OK, "list")["pools"],
        json!([]),
        "nothing was created"
    );
    app.put_pool(&"x".repeat(64), json!({}))
        .await
        .assert_status(StatusCode::CREATED, "64 characters is the longest name");
}

#[tokio::test]
async fn putting_a_pool_without_an_admin_key_is_refused_with_401_or_403() {
    let app = TestApp::new().await;
    let put = |key| {
        app.send(
            Method::PUT,
            "/v1/pools/ranked",
            key,
            Payload::Json(json!({})),
        )
    };
    for (key, case) in UNKNOWN_KEYS {
        put(key)
            .await
            .assert_error(StatusCode::UNAUTHORIZED, "unauthenticated", None, case);
    }
    for (key, case) in [(READ_KEY, "a read key"), (WRITE_KEY, "a write key")] {
        put(Some(key))
            .await
            .assert_error(StatusCode::FORBIDDEN, "forbidden", None, case);
    }
    app.get("/v1/pools/ranked").await.assert_error(
        StatusCode::NOT_FOUND,
        "pool_not_found",
        None,
        "nothing created",
    );
}

#[tokio::test]
async fn putting_a_pool_with_a_body_that_is_not_json_returns_415_or_400() {
    let app = TestApp::new().await;
    let uri = "/v1/pools/ranked";
    app.assert_refuses_bodies_that_are_not_json(&Method::PUT, uri, Some(ADMIN_KEY), &json!({}))
        .await;
    app.get(uri).await.assert_error(
        StatusCode::NOT_FOUND,
        "pool_not_found",
        None,
        "nothing created",
    );
    app.send(
        Method::PUT,
        uri,
        Some(ADMIN_KEY),
        Payload::Raw(Some("application/json; charset=utf-8"), b"{}".to_vec()),
    )
    .await
    .assert_status(StatusCode::CREATED, "a charset parameter is fine");
}

#[tokio::test]
async fn listing_pools_shows_every_pool_by_name_with_its_counts() {
    let app = TestApp::new().await;
    app.create_pool("zeta").await;
    app.create_pool(POOL).await;
    app.play([round("r1", &["a", "b", "c"])]).await;
    app.queue_round(round("r2", &["a", "b"])).await;
    let response = app.get("/v1/pools").await;
    let pools = response.assert_status(StatusCode::OK, "list")["pools"]
        .as_array()
        .expect("a list of pools")
        .clone();
    let names: Vec<_> = pools.iter().map(|p| p["name"].as_str()).collect();
    assert_eq!(names, [Some(POOL), Some("zeta")], "by name");
    let main = &pools[0];
    assert_eq!(
        (
            &main["players"],
            &main["rounds_applied"],
            &main["rounds_queued"],
            &main["rounds_failed"]
        ),
        (&json!(3), &json!(1), &json!(1), &json!(0))
    );
    assert_eq!(main["params"]["beta"], 200.0);
    assert_eq!(pools[1]["players"], 0);
}

#[tokio::test]
async fn getting_an_unknown_pool_returns_404_pool_not_found() {
    let app = TestApp::new().await;
    app.get("/v1/pools/nowhere").await.assert_error(
        StatusCode::NOT_FOUND,
        "pool_not_found",
        None,
        "unknown pool",
    );
}

/// Every rating system, as requests name them, in the order the document lists them.
const SYSTEMS: [&str; 7] = [
    "elo_mmr",
    "weng_lin",
    "trueskill",
    "glicko2",
    "codeforces",
    "topcoder",
    "elo",
];

#[tokio::test]
async fn the_openapi_document_describes_each_system_s_parameters_as_a_tagged_one_of() {
    // (The answer's `params` is a `oneOf` too: one closed object per system, so that a
    // system's parameters match its own branch only.)
    let app = TestApp::new().await;
    let doc = app.get("/openapi.json").await.body;
    let body = &doc["paths"]["/v1/pools/{pool}"]["put"]["requestBody"]["content"]
        ["application/json"]["schema"]["$ref"];
    let name = body
        .as_str()
        .and_then(|r| r.rsplit('/').next())
        .expect("a $ref");
    let branches = doc["components"]["schemas"][name]["oneOf"]
        .as_array()
        .expect("one branch per system");
    assert_eq!(branches.len(), SYSTEMS.len());
    for (branch, system) in branches.iter().zip(SYSTEMS) {
        assert_eq!(branch["title"], system);
        assert_eq!(branch["additionalProperties"], false, "{system}");
        assert_eq!(branch["properties"]["system"]["enum"][0], system);
        let required = branch["required"].as_array().map_or(0, Vec::len);
        assert_eq!(required, usize::from(system != "elo_mmr"), "{system}");
        // Each branch's own parameters are exactly those a PUT of that system accepts; every
        // other system's parameter is there as `null` only, which the server takes as left
        // out, and any other value of it is refused by name.
        let properties = branch["properties"].as_object().expect("properties");
        let mut own = 0;
        for (key, schema) in properties.iter().filter(|(k, _)| *k != "system") {
            let foreign = schema["type"] == "null";
            let value = match (foreign, key.as_str()) {
                (false, _) => json!(null),
                (true, "variant") => json!("logistic"),
                (true, "ties") => json!("both"),
                (true, "model") => json!("bradley_terry"),
                (true, _) => json!(1),
            };
            let response = app
                .put_pool(
                    &format!("{system}-{key}"),
                    json!({"system": system, key: value}),
                )
                .await;
            if foreign {
                response.assert_error(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "invalid_parameter",
                    Some(key),
                    "a parameter of another system",
                );
            } else {
                own += 1;
                assert_eq!(
                    response.status,
                    StatusCode::CREATED,
                    "{system}.{key}: {}",
                    response.body
                );
            }
        }
        assert!(own > 0, "{system}");
    }
}

#[tokio::test]
async fn each_system_s_answered_parameters_match_exactly_one_documented_branch() {
    let app = TestApp::new().await;
    let doc = app.get("/openapi.json").await.body;
    let schemas = &doc["components"]["schemas"];
    let branches = schemas["ParamsResponse"]["oneOf"]
        .as_array()
        .expect("one branch per system");
    let branch_of = |reference: &serde_json::Value| {
        let name = reference["$ref"]
            .as_str()
            .and_then(|r| r.rsplit('/').next());
        &schemas[name.unwrap_or_default()]
    };
    for system in SYSTEMS {
        let created = app.put_pool(system, json!({"system": system})).await;
        let params = created.assert_status(StatusCode::CREATED, system)["params"].clone();
        let keys: std::collections::BTreeSet<&String> =
            params.as_object().expect("an object").keys().collect();
        // A closed object matches when it has every required key and no other.
        let matching = branches
            .iter()
            .map(branch_of)
            .filter(|branch| {
                assert_eq!(branch["additionalProperties"], false, "{branch}");
                let allowed: std::collections::BTreeSet<&String> = branch["properties"]
                    .as_object()
                    .expect("properties")
                    .keys()
                    .collect();
                let required = branch["required"].as_array().expect("required");
                keys.is_subset(&allowed)
                    && required
                        .iter()
                        .all(|r| r.as_str().is_some_and(|r| params.get(r).is_some()))
            })
            .count();
        assert_eq!(matching, 1, "{system}: {params}");
    }
}
