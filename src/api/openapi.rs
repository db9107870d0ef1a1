//! The OpenAPI document: its header (title, tags, the bearer scheme), the responses that the
//! shared layers can give on any route (documented here once, so that no route's list can
//! forget one), every request body's example (here together, as one story a test posts in
//! order), and `GET /openapi.json`, which serves the document.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use axum::Json;
use utoipa::openapi::example::ExampleBuilder;
use utoipa::openapi::header::HeaderBuilder;
use utoipa::openapi::path::{Operation, ParameterBuilder, ParameterIn};
use utoipa::openapi::schema::{ObjectBuilder, OneOfBuilder, Type};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{
    Content, ContentBuilder, OpenApi as OpenApiDoc, Ref, RefOr, Required, Response,
    ResponseBuilder, Schema,
};
use utoipa::{Modify, OpenApi};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use utoipa_swagger_ui::{Config, SwaggerUi};

use crate::state::AppState;

/// The media type of every body the API sends or takes.
const JSON: &str = "application/json";

/// The name of the error body's schema.
const ERROR_SCHEMA: &str = "ErrorResponse";

#[derive(OpenApi)]
#[openapi(
    info(title = "mmr-service", description = "Exact, parallel Elo-MMR ratings over HTTP."),
    modifiers(&BearerAuth),
    tags(
        (name = "pools", description = "Rating pools and their parameters"),
        (name = "rounds", description = "Posting results and following them"),
        (name = "players", description = "Ratings, histories and leaderboards"),
        (name = "predictions", description = "Win probabilities and match quality"),
        (name = "health", description = "Liveness, readiness and this document"),
        (name = "keys", description = "Keys kept in the database, and the audit log of what keys did"),
    )
)]
pub(super) struct ApiDoc;

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut OpenApiDoc) {
        openapi
            .components
            .get_or_insert_with(Default::default)
            .add_security_scheme(
                "bearer",
                SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
            );
    }
}

/// The route of this module.
pub(super) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(get_openapi))
}

/// The API docs page at `/docs`: Swagger UI, served from the binary, reading `/openapi.json`.
/// Its validator badge is off: by default the page would send the document to
/// validator.swagger.io, and nothing the page does may leave the machine.
pub(super) fn docs_page() -> axum::Router<AppState> {
    SwaggerUi::new("/docs")
        .config(Config::new(["/openapi.json"]).validator_url("none"))
        .into()
}

/// Built on first use: the routes do not change while the process runs.
static DOCUMENT: LazyLock<OpenApiDoc> = LazyLock::new(super::openapi);

/// This document: every route, with every response it can give.
#[utoipa::path(get, path = "/openapi.json", tag = "health",
    responses((status = 200, body = Object, description = "The OpenAPI 3.1 document")))]
async fn get_openapi() -> Json<&'static OpenApiDoc> {
    Json(&DOCUMENT)
}

/// An error response with the shared body, and `Retry-After` when `retry` is set.
fn error_response(description: &str, retry: bool) -> Response {
    let mut response = ResponseBuilder::new().description(description).content(
        JSON,
        ContentBuilder::new()
            .schema(Some(Ref::from_schema_name(ERROR_SCHEMA)))
            .build(),
    );
    if retry {
        response = response.header(
            "Retry-After",
            HeaderBuilder::new()
                .schema(
                    ObjectBuilder::new()
                        .schema_type(Type::Integer)
                        .minimum(Some(1)),
                )
                .description(Some("Seconds to wait before trying again"))
                .build(),
        );
    }
    response.build()
}

/// Adds to every operation of `doc` the error responses the shared layers and extractors can
/// give it, in place of a route's own entry for the same status (whose description, if any,
/// is appended to the shared one):
/// 500 and 503 anywhere; 400 wherever a path, a query or a body is parsed; 413 and 415
/// wherever a body is read; 401, 403 and 429 wherever a key can be asked for. A route whose
/// 503 has a body of its own (`/readyz`) keeps it, as one of two possible bodies.
pub(super) fn add_shared_errors(doc: &mut OpenApiDoc) {
    for (_, operation) in operations(doc) {
        add_to_operation(operation);
    }
}

/// Every operation of `doc`, with its path.
fn operations(doc: &mut OpenApiDoc) -> impl Iterator<Item = (&String, &mut Operation)> {
    doc.paths.paths.iter_mut().flat_map(|(path, item)| {
        [
            &mut item.get,
            &mut item.put,
            &mut item.post,
            &mut item.delete,
            &mut item.patch,
        ]
        .into_iter()
        .flatten()
        .map(move |operation| (path, operation))
    })
}

fn add_to_operation(operation: &mut Operation) {
    let has_body = operation.request_body.is_some();
    let has_parameters = operation.parameters.as_ref().is_some_and(|p| !p.is_empty());
    let keyed = operation.security.as_ref().is_some_and(|s| !s.is_empty());
    let mut shared: BTreeMap<&str, Response> = BTreeMap::new();
    shared.insert(
        "500",
        error_response(
            "Internal error (`internal`); the cause is in the service's log",
            false,
        ),
    );
    if has_parameters || has_body {
        shared.insert(
            "400",
            error_response(
                "A body that is not JSON (`malformed_json`), or a bad path or query parameter \
                 (`invalid_query`)",
                false,
            ),
        );
    }
    if has_body {
        shared.insert(
            "413",
            error_response(
                "The body is larger than `server.body_limit_bytes`, or than 4 MiB on the \
                 compute routes (`payload_too_large`)",
                false,
            ),
        );
        shared.insert(
            "415",
            error_response(
                "The body is not `Content-Type: application/json` (`unsupported_media_type`), \
                 or is sent with a `Content-Encoding` other than `identity` \
                 (`unsupported_encoding`)",
                false,
            ),
        );
    }
    if keyed {
        let mut unauthenticated = error_response(
            "No key, or a key the service does not know (`unauthenticated`)",
            false,
        );
        unauthenticated.headers.insert(
            "WWW-Authenticate".to_owned(),
            HeaderBuilder::new()
                .schema(ObjectBuilder::new().schema_type(Type::String))
                .description(Some("`Bearer`: the scheme a key is sent with"))
                .build(),
        );
        shared.insert("401", unauthenticated);
        shared.insert(
            "403",
            error_response("The key's role does not allow this (`forbidden`)", false),
        );
        shared.insert(
            "429",
            error_response(
                "This key, or this address, is over its `[rate_limit]` budget, holds its share \
                 (`server.client_share_percent`) of the computations or of the past \
                 leaderboards being built, or has 16 streams open (`rate_limited`)",
                true,
            ),
        );
    }
    let unavailable = error_response(
        "Not answered within `server.request_timeout_secs` (`timeout`), the database cannot \
         be reached (`database_unavailable`), the pool's queue is full (`queue_full`), or as \
         many computations (predictions, or the parsing of their bodies) as \
         `server.max_concurrent_computations` allows are running, as many past leaderboards \
         as `server.max_concurrent_past_boards` allows are being built, 1,024 streams \
         (change feeds and streamed exports) are open, or the request bodies being read \
         declare `server.body_bytes_in_flight` bytes and this one does not fit (`overloaded`)",
        true,
    );
    let responses = &mut operation.responses.responses;
    match responses.get_mut("503") {
        Some(RefOr::T(own)) if !is_error_body(own) => merge_bodies(own, &unavailable),
        _ => {
            shared.insert("503", unavailable);
        }
    }
    for (status, mut response) in shared {
        // A route's own description of a shared status says what else gives it there.
        if let Some(RefOr::T(own)) = responses.get(status) {
            if !own.description.is_empty() && own.description != response.description {
                response.description = format!("{}; {}", response.description, own.description);
            }
        }
        responses.insert(status.to_owned(), RefOr::T(response));
    }
}

fn is_error_body(response: &Response) -> bool {
    response.content.get(JSON).is_some_and(|content| {
        matches!(&content.schema, Some(RefOr::Ref(r)) if r.ref_location.ends_with(ERROR_SCHEMA))
    })
}

/// Makes `own`'s JSON body one of its schema or `other`'s (the timeout's error body), and
/// gives it `other`'s headers.
fn merge_bodies(own: &mut Response, other: &Response) {
    let Some(content) = own.content.get_mut(JSON) else {
        return;
    };
    let theirs: Option<RefOr<Schema>> = other
        .content
        .get(JSON)
        .and_then(|content| content.schema.clone());
    if let (Some(mine), Some(theirs)) = (content.schema.take(), theirs) {
        content.schema =
            Some(Schema::OneOf(OneOfBuilder::new().item(mine).item(theirs).build()).into());
    }
    own.description = format!(
        "{}; or the error body when not answered within `server.request_timeout_secs` \
         (`timeout`)",
        own.description
    );
    own.headers.extend(other.headers.clone());
}

/// Each request body's example, by method and path, in the order they make sense one after
/// another on a fresh service (pool `main`): what the API page offers to send, and what
/// `tests/api/docs.rs` sends. `PUT /v1/pools/{pool}` has one per rating system instead, with its
/// default parameters, from the engine.
pub(super) fn request_examples() -> Vec<(&'static str, &'static str, serde_json::Value)> {
    use serde_json::json;
    vec![
        (
            "put",
            "/v1/pools/{pool}/display",
            json!({
            "conservative_k": 3.0, "fixed_range": {"max": 3000.0},
            "provisional": {"min_rounds": 5},
            "leagues": {"k": 3.0, "placement_rounds": 5, "division_size": 100, "tiers": [
                {"name": "bronze"}, {"name": "silver", "threshold": 1400.0},
                {"name": "gold", "threshold": 1600.0}]}}),
        ),
        (
            "post",
            "/v1/pools/{pool}/rounds",
            json!({
            "id": "cup-1", "time": "2026-11-20T18:00:00Z", "standings": [
                {"player": "ann", "rank": 1}, {"player": "bob", "rank": 2},
                {"player": "cy", "rank": 2}]}),
        ),
        (
            "post",
            "/v1/pools/{pool}/round-batches",
            json!({"rounds": [
            {"id": "cup-2", "time": "2026-11-21T18:00:00Z", "standings": [
                {"player": "cy", "rank": 1}, {"player": "ann", "rank": 2}]},
            {"id": "cup-3", "time": "2026-11-22T18:00:00Z", "standings": [
                {"player": "ann", "rank": 1, "team": "red"}, {"player": "dee", "rank": 1, "team": "red"},
                {"player": "bob", "rank": 2, "team": "blue"}, {"player": "cy", "rank": 2, "team": "blue"}]}]}),
        ),
        (
            "post",
            "/v1/pools/{pool}/predictions",
            json!({
            "entrants": [{"players": ["ann"]}, {"players": ["bob"]}, {"players": ["newcomer"]}]}),
        ),
        (
            "post",
            "/v1/pools/{pool}/match-quality",
            json!({
            "sides": [["ann", "dee"], ["bob", "cy"]]}),
        ),
        (
            "post",
            "/v1/pools/{pool}/match-qualities",
            json!({"groups": [
                {"sides": [["ann", "dee"], ["bob", "cy"]]},
                {"sides": [["ann", "bob"], ["cy", "dee"]]}]}),
        ),
        (
            "post",
            "/v1/pools/{pool}/player-ratings",
            json!({"players": ["ann", "bob", "newcomer"]}),
        ),
        (
            "post",
            "/v1/pools/{pool}/matchmaking",
            json!({
            "waiting": [{"player": "ann", "waited": 30.0}, {"player": "bob", "waited": 5.0},
                {"player": "cy", "waited": 0.0}, {"player": "dee", "waited": 12.0}],
            "team_size": 1, "teams": 2}),
        ),
        (
            "post",
            "/v1/pools/{pool}/corrections",
            json!({
            "id": "fix-1", "action": "disqualify", "round": "cup-1", "player": "bob"}),
        ),
        (
            "post",
            "/v1/pools/{pool}/seasons",
            json!({
            "id": "2027-spring", "mu_reset": 0.2, "sigma_reset": 0.5}),
        ),
        (
            "post",
            "/v1/keys",
            json!({"name": "scoreboard", "role": "read"}),
        ),
    ]
}

/// `PUT /v1/pools/{pool}`'s examples: each system with its default parameters, named by it.
pub(super) fn pool_examples() -> Vec<(&'static str, serde_json::Value)> {
    crate::engine::SystemName::ALL
        .iter()
        .map(|&system| {
            let tagged = serde_json::to_value(system.defaults()).unwrap_or_default();
            let mut body = tagged["params"].clone();
            if let Some(object) = body.as_object_mut() {
                object.insert("system".to_owned(), system.as_str().into());
            }
            (system.as_str(), body)
        })
        .collect()
}

/// The JSON request body of operation `method` `path` of `doc`, if it has one.
fn json_body<'a>(doc: &'a mut OpenApiDoc, method: &str, path: &str) -> Option<&'a mut Content> {
    let item = doc.paths.paths.get_mut(path)?;
    let operation = match method {
        "put" => item.put.as_mut(),
        "post" => item.post.as_mut(),
        _ => None,
    }?;
    operation
        .request_body
        .as_mut()
        .and_then(|body| body.content.get_mut(JSON))
}

/// The example of a path parameter, by name, on every route: the story of
/// [`request_examples`] (its pool, a player, a round, the first season, a key).
fn path_example(name: &str) -> Option<serde_json::Value> {
    use serde_json::json;
    Some(match name {
        "pool" => json!("main"),
        "player" => json!("ann"),
        "id" => json!("cup-1"),
        "number" => json!(1),
        "name" => json!("scoreboard"),
        _ => return None,
    })
}

/// Each query parameter's example, by path (empty: any) and name, on that story: what the API
/// page offers,
/// and together one request that `tests/api/docs.rs` expects the service to answer. Cursors
/// have none (a page's answer gives them), nor do a league (it excludes `established`) and a
/// season's `as_of` (which it refuses).
pub(super) fn query_examples() -> Vec<(&'static str, &'static str, serde_json::Value)> {
    use serde_json::json;
    vec![
        ("/v1/pools/{pool}", "confirm", json!("main")),
        ("/v1/audit", "pool", json!("main")),
        ("/v1/audit", "action", json!("pool.create")),
        ("/v1/audit", "limit", json!(100)),
        // A write that can wait for its application, on every route that has one.
        ("", "wait", json!("applied")),
        ("", "timeout", json!(10)),
        ("/v1/pools/{pool}/rounds", "after", json!(0)),
        ("/v1/pools/{pool}/rounds", "limit", json!(100)),
        ("/v1/pools/{pool}/rounds/{id}", "limit", json!(100)),
        ("/v1/pools/{pool}/leaderboard", "limit", json!(10)),
        ("/v1/pools/{pool}/leaderboard", "order", json!("mu")),
        ("/v1/pools/{pool}/leaderboard", "established", json!(false)),
        ("/v1/pools/{pool}/leaderboard", "as_of", json!("cup-2")),
        ("/v1/pools/{pool}/leaderboard", "active_days", json!(30)),
        (
            "/v1/pools/{pool}/seasons/{number}/leaderboard",
            "limit",
            json!(10),
        ),
        (
            "/v1/pools/{pool}/seasons/{number}/leaderboard",
            "order",
            json!("mu"),
        ),
        (
            "/v1/pools/{pool}/seasons/{number}/leaderboard",
            "established",
            json!(false),
        ),
        (
            "/v1/pools/{pool}/seasons/{number}/leaderboard",
            "active_days",
            json!(30),
        ),
        ("/v1/pools/{pool}/players", "prefix", json!("An")),
        ("/v1/pools/{pool}/players", "limit", json!(10)),
        ("/v1/pools/{pool}/players/{player}", "as_of", json!("cup-2")),
        ("/v1/pools/{pool}/players/{player}", "peak", json!(true)),
        (
            "/v1/pools/{pool}/players/{player}/history",
            "limit",
            json!(20),
        ),
        (
            "/v1/pools/{pool}/players/{player}/opponents",
            "limit",
            json!(5),
        ),
        (
            "/v1/pools/{pool}/players/{player}/opponents",
            "active_days",
            json!(30),
        ),
        ("/v1/pools/{pool}/win-probability", "a", json!("ann")),
        ("/v1/pools/{pool}/win-probability", "b", json!("bob")),
        ("/v1/pools/{pool}/distribution", "bins", json!(10)),
        ("/v1/pools/{pool}/events", "after", json!(0)),
    ]
}

/// Describes the `{pool}` of every path in `doc` once: first among the operation's
/// parameters, required, with the names [`crate::names::is_pool_name`] accepts. Routes need
/// not list it (utoipa adds the bare parameter of a `Path` extractor, which this replaces).
pub(super) fn describe_pool_parameter(doc: &mut OpenApiDoc) {
    for (path, operation) in operations(doc) {
        if !path.contains("{pool}") {
            continue;
        }
        let pool = ParameterBuilder::new()
            .name("pool")
            .parameter_in(ParameterIn::Path)
            .required(Required::True)
            .description(Some("Pool name"))
            .schema(Some(
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .pattern(Some(crate::names::POOL_NAME_PATTERN)),
            ))
            .build();
        let parameters = operation.parameters.get_or_insert_with(Vec::new);
        parameters.retain(|p| !(p.name == "pool" && p.parameter_in == ParameterIn::Path));
        parameters.insert(0, pool);
    }
}

/// Sets every parameter's example in `doc` ([`path_example`], [`query_examples`]).
pub(super) fn add_parameter_examples(doc: &mut OpenApiDoc) {
    let queries = query_examples();
    for (path, operation) in operations(doc) {
        for parameter in operation.parameters.iter_mut().flatten() {
            let example = match parameter.parameter_in {
                ParameterIn::Path => path_example(&parameter.name),
                _ => queries
                    .iter()
                    .find(|(p, name, _)| (p.is_empty() || p == path) && *name == parameter.name)
                    .map(|(_, _, example)| example.clone()),
            };
            if let Some(example) = example {
                *parameter = ParameterBuilder::from(parameter.clone())
                    .example(Some(example))
                    .build();
            }
        }
    }
}

/// Sets every request body's example in `doc` ([`request_examples`], [`pool_examples`]).
pub(super) fn add_request_examples(doc: &mut OpenApiDoc) {
    for (method, path, example) in request_examples() {
        if let Some(content) = json_body(doc, method, path) {
            content.example = Some(example);
        }
    }
    if let Some(content) = json_body(doc, "put", "/v1/pools/{pool}") {
        for (name, value) in pool_examples() {
            let example = ExampleBuilder::new()
                .summary(format!("{name}, its default parameters"))
                .value(Some(value))
                .build();
            content.examples.insert(name.to_owned(), RefOr::T(example));
        }
    }
}
