//! `GET /docs` (the API docs page) and `GET /` (the dashboard): served from the binary, with
//! nothing fetched from elsewhere; every request body example the document offers is taken by
//! the service, and every read with its parameters' examples answered.

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};

use crate::support::{Payload, TestApp, ADMIN_KEY, POOL};

/// The page's `src="…"` and `href="…"` values.
fn references(html: &str) -> Vec<&str> {
    ["src=\"", "href=\""]
        .iter()
        .flat_map(|attribute| html.split(attribute).skip(1))
        .filter_map(|rest| rest.split('"').next())
        .collect()
}

#[tokio::test]
async fn docs_serves_swagger_ui_for_our_document_from_the_binary_alone() {
    let app = TestApp::new().await;
    let (status, _, _) = app.get_text("/docs", "text/html").await;
    assert_eq!(status, StatusCode::SEE_OTHER, "/docs goes to /docs/");

    let (status, content_type, html) = app.get_text("/docs/", "text/html").await;
    assert_eq!(status, StatusCode::OK);
    assert!(content_type.starts_with("text/html"), "{content_type}");
    let assets = references(&html);
    assert!(assets.len() >= 5, "the page's assets: {assets:?}");
    for asset in assets {
        assert!(
            !asset.contains("//") && !asset.starts_with('/'),
            "{asset}: every asset is the binary's own, beside the page"
        );
        let (status, content_type, body) = app
            .get_bytes(&format!("/docs/{}", asset.trim_start_matches("./")), "*/*")
            .await;
        assert_eq!(status, StatusCode::OK, "{asset}");
        let kind = if asset.ends_with(".js") {
            "text/javascript"
        } else if asset.ends_with(".css") {
            "text/css"
        } else {
            "image/png"
        };
        assert!(content_type.starts_with(kind), "{asset}: {content_type}");
        assert!(!body.is_empty(), "{asset}");
    }

    let (_, _, initializer) = app.get_text("/docs/swagger-initializer.js", "*/*").await;
    assert!(
        initializer.contains(r#""url": "/openapi.json""#),
        "the page reads our document: {initializer}"
    );
    // Otherwise Swagger UI posts the document to validator.swagger.io for a badge.
    assert!(
        initializer.contains(r#""validatorUrl": "none""#),
        "{initializer}"
    );
}

#[tokio::test]
async fn the_dashboard_is_one_page_with_its_own_script_and_style() {
    let app = TestApp::new().await;
    let (status, content_type, html) = app.get_text("/", "text/html").await;
    assert_eq!(status, StatusCode::OK);
    let page = app.get_stream("/", &[]).await;
    assert_eq!(
        page.headers()["content-security-policy"],
        "default-src 'self'"
    );
    assert_eq!(page.headers()["x-content-type-options"], "nosniff");
    assert!(content_type.starts_with("text/html"), "{content_type}");
    let assets = references(&html);
    assert!(
        assets.contains(&"/ui/app.js") && assets.contains(&"/ui/app.css"),
        "{assets:?}"
    );
    for asset in assets {
        assert!(!asset.contains("//"), "{asset}: nothing from elsewhere");
        if asset.starts_with("/ui/") {
            let (status, _, body) = app.get_text(asset, "*/*").await;
            assert_eq!(status, StatusCode::OK, "{asset}");
            // The SVG namespace is a name, not an address the page loads.
            let body = body.replace("http://www.w3.org/2000/svg", "");
            assert!(
                !body.contains("http://") && !body.contains("https://"),
                "{asset} fetches nothing from elsewhere"
            );
        }
    }
}

/// Every request body the API takes, in the order its examples tell one story on a fresh
/// service: the pool `main`, its display, rounds, reads that predict, a correction, a season, a
/// key. A route with a body missing here fails the first assertion below.
const STORY: [(&str, &str); 13] = [
    ("put", "/v1/pools/{pool}"),
    ("put", "/v1/pools/{pool}/display"),
    ("patch", "/v1/pools/{pool}/display"),
    ("post", "/v1/pools/{pool}/rounds"),
    ("post", "/v1/pools/{pool}/round-batches"),
    ("post", "/v1/pools/{pool}/predictions"),
    ("post", "/v1/pools/{pool}/match-quality"),
    ("post", "/v1/pools/{pool}/match-qualities"),
    ("post", "/v1/pools/{pool}/player-ratings"),
    ("post", "/v1/pools/{pool}/matchmaking"),
    ("post", "/v1/pools/{pool}/corrections"),
    ("post", "/v1/pools/{pool}/seasons"),
    ("post", "/v1/keys"),
];

/// The examples the document gives operation `method` `path`'s body, by name (`example` for a
/// single one), and the body's media type.
fn examples_of(document: &Value, method: &str, path: &str) -> (String, Vec<(String, Value)>) {
    let content = document["paths"][path][method]["requestBody"]["content"]
        .as_object()
        .unwrap_or_else(|| panic!("{method} {path}: a request body"));
    let (media, body) = content.iter().next().expect("one media type");
    let mut examples: Vec<(String, Value)> = body["examples"]
        .as_object()
        .map(|named| {
            named
                .iter()
                .map(|(name, example)| (name.clone(), example["value"].clone()))
                .collect()
        })
        .unwrap_or_default();
    if let Some(example) = body.get("example") {
        examples.push(("example".to_owned(), example.clone()));
    }
    (media.clone(), examples)
}

#[tokio::test]
async fn every_request_body_example_of_the_document_is_taken_by_the_service() {
    let document = serde_json::to_value(mmr_service::api::openapi()).expect("a JSON document");
    let mut with_bodies = Vec::new();
    for (path, operations) in document["paths"].as_object().expect("paths") {
        for (method, operation) in operations.as_object().expect("operations") {
            if operation.get("requestBody").is_some() {
                with_bodies.push((method.clone(), path.clone()));
            }
        }
    }
    let mut story: Vec<(String, String)> = STORY
        .iter()
        .map(|&(m, p)| (m.to_owned(), p.to_owned()))
        .collect();
    story.sort();
    with_bodies.sort();
    assert_eq!(
        with_bodies, story,
        "every route with a body is in the story"
    );

    let app = TestApp::new().await;
    for (method, path) in STORY {
        let (media, examples) = examples_of(&document, method, path);
        assert!(!examples.is_empty(), "{method} {path}: an example");
        for (name, example) in examples {
            // Each system's pool apart, under its name; the story goes on in `main`.
            let pool = if path == "/v1/pools/{pool}" && name != "elo_mmr" {
                name.clone()
            } else {
                "main".to_owned()
            };
            let uri = path.replace("{pool}", &pool);
            let method = Method::from_bytes(method.to_uppercase().as_bytes()).expect("a method");
            let body = serde_json::to_vec(&example).expect("JSON");
            let media: &'static str = if media == "application/merge-patch+json" {
                "application/merge-patch+json"
            } else {
                "application/json"
            };
            let answer = app
                .send(
                    method.clone(),
                    &uri,
                    Some(ADMIN_KEY),
                    Payload::Raw(Some(media), body),
                )
                .await;
            assert!(
                answer.status.is_success(),
                "{method} {uri} with example `{name}` {example}: {} {:#}",
                answer.status,
                answer.body
            );
        }
        if path == "/v1/pools/{pool}/round-batches" {
            let settled = app.apply_queued(POOL).await;
            assert_eq!(settled.len(), 3, "the rounds of the examples are applied");
        }
    }
    app.apply_queued(POOL).await;
    every_read_with_its_examples_is_answered(&app, &document).await;
}

/// Every `GET` of `document`, its path's and query's parameters set to their examples (those
/// without one left out), is answered with success on the story's service; every parameter of
/// every route has an example but cursors (`Last-Event-ID` too), a league and a season's `as_of`
/// (`query_examples`).
async fn every_read_with_its_examples_is_answered(app: &TestApp, document: &Value) {
    let text = |value: &Value| match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let mut answered = Vec::new();
    for (path, operations) in document["paths"].as_object().expect("paths") {
        for (method, operation) in operations.as_object().expect("operations") {
            for parameter in operation["parameters"].as_array().into_iter().flatten() {
                let name = parameter["name"].as_str().expect("a name");
                assert!(
                    parameter.get("example").is_some()
                        || ["cursor", "before", "around", "league"].contains(&name)
                        || parameter["in"] == "header"
                        || (name == "as_of" && path.contains("/seasons/")),
                    "{method} {path}: parameter `{name}` has no example"
                );
            }
        }
        // `/readyz` counts the workers, which these tests drive themselves instead.
        let Some(get) = operations.get("get").filter(|_| path != "/readyz") else {
            continue;
        };
        let mut uri = path.clone();
        let mut query = Vec::new();
        for parameter in get["parameters"].as_array().into_iter().flatten() {
            let (Some(name), Some(example)) =
                (parameter["name"].as_str(), parameter.get("example"))
            else {
                continue;
            };
            if parameter["in"] == "path" {
                uri = uri.replace(&format!("{{{name}}}"), &text(example));
            } else {
                query.push(format!("{name}={}", text(example)));
            }
        }
        if !query.is_empty() {
            uri = format!("{uri}?{}", query.join("&"));
        }
        let request = axum::http::Request::builder()
            .uri(&uri)
            .header("authorization", format!("Bearer {ADMIN_KEY}"))
            .body(axum::body::Body::empty())
            .expect("a request");
        // Read the head only: the change feed never ends.
        let answer = app.send_unread(request).await;
        assert!(
            answer.status().is_success(),
            "GET {uri}: {}",
            answer.status()
        );
        answered.push(uri);
    }
    assert!(answered.len() >= 20, "{answered:#?}");
    assert!(
        answered.contains(&"/v1/pools/main/players/ann?as_of=cup-2&peak=true".to_owned()),
        "{answered:#?}"
    );
}

#[tokio::test]
async fn the_bounds_the_document_gives_each_systems_parameters_are_where_the_service_refuses() {
    let document = serde_json::to_value(mmr_service::api::openapi()).expect("a JSON document");
    let branches = document["components"]["schemas"]["ParamsOverrides"]["oneOf"]
        .as_array()
        .expect("one branch per system");
    let app = TestApp::new().await;
    let mut checked = 0;
    for branch in branches {
        let system = branch["title"].as_str().expect("a system");
        for (field, schema) in branch["properties"].as_object().expect("properties") {
            let (low, low_taken) = match (schema.get("minimum"), schema.get("exclusiveMinimum")) {
                (Some(low), _) => (low.as_f64().expect("a number"), true),
                (None, Some(low)) => (low.as_f64().expect("a number"), false),
                (None, None) => continue,
            };
            let (high, high_taken) = match (schema.get("maximum"), schema.get("exclusiveMaximum")) {
                (Some(high), _) => (high.as_f64().expect("a number"), true),
                (None, Some(high)) => (high.as_f64().expect("a number"), false),
                (None, None) => panic!("{system}.{field}: a maximum"),
            };
            let integer = schema["type"] == "integer"
                || schema["type"]
                    .as_array()
                    .is_some_and(|types| types.contains(&json!("integer")));
            let value = |x: f64| {
                if integer {
                    json!(x as i64)
                } else {
                    json!(x)
                }
            };
            // Just outside each bound: an integer's neighbour, a float's by a relative step.
            let (below, above) = if integer {
                (low - 1.0, high + 1.0)
            } else {
                (low - low.abs().max(1e-9) * 1e-3, high + high.abs() * 1e-3)
            };
            let cases = [
                (low, low_taken),
                (high, high_taken),
                (below, false),
                (above, false),
            ];
            for (i, (x, taken)) in cases.into_iter().enumerate() {
                let pool = format!("bounds-{system}-{field}-{i}").replace('_', "-");
                let answer = app
                    .put_pool(&pool, json!({"system": system, field: value(x)}))
                    .await;
                let case = format!("{system}: {field} = {x}");
                if taken {
                    answer.assert_status(StatusCode::CREATED, &case);
                } else {
                    answer.assert_error(
                        StatusCode::UNPROCESSABLE_ENTITY,
                        "invalid_parameter",
                        Some(field),
                        &case,
                    );
                }
            }
            checked += 1;
        }
    }
    assert!(checked >= 25, "{checked} bounded parameters");
}
