//! The HTTP API: [`app`] merges every resource module's `router()` under the shared layers
//! (request id, request span, body limit, timeout, CORS, panic capture, JSON errors) and serves the
//! OpenAPI document generated from the handlers at `/openapi.json`. Handlers are thin: they
//! extract, convert, make one call on the state, the storage or a pool, and answer.
//!
//! Layout, shared pieces first: [`error`] (the one error type), [`auth`] (keys, roles and rate
//! limits), [`json`], [`bodies`] and [`query`] (request parsing with errors that name the
//! field), [`request_id`] (the id every answer and log line of a request carries), `openapi`
//! (the document's header, the errors every route can give, `/openapi.json`, `/docs`),
//! `queueing` (what the routes that queue a line share), [`waiting`] (`?wait=applied`),
//! `round_path` (a round id in a path), [`round_results`] (a round and a page of its results),
//! [`boards`] (leaderboard pages, now and in the past), `shown` (how a rating change is
//! shown), `streams` (the long-lived streams), [`answer`] (compute routes' answers). Then one
//! module per resource, each owning its paths and importing none of the others: [`pools`],
//! [`display`], [`rounds`], [`round_batches`], [`seasons`], [`corrections`], [`export`],
//! [`events`], [`players`], [`leaderboard`], [`distribution`], [`predictions`],
//! [`matchmaking`], [`keys`], [`audit`], [`health`], [`dashboard`]. (`rounds` mounts `export`'s `GET` of
//! its path beside its `POST`: utoipa-axum takes one path's handlers together.)

pub mod answer;
pub mod audit;
pub mod auth;
pub mod boards;
pub mod bodies;
pub mod corrections;
pub mod dashboard;
pub mod display;
pub mod distribution;
pub mod error;
pub mod events;
pub mod export;
pub mod health;
pub mod json;
pub mod keys;
pub mod leaderboard;
pub mod matchmaking;
mod openapi;
pub mod players;
pub mod pools;
pub mod predictions;
pub mod query;
mod queueing;
pub mod request_id;
pub mod round_batches;
mod round_path;
pub mod round_results;
pub mod rounds;
pub mod seasons;
mod shown;
mod streams;
pub mod waiting;

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{DefaultBodyLimit, MatchedPath, Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use tower::util::{option_layer, MapRequestLayer};
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::cors::{AllowOrigin, CorsLayer};
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::request_id::{PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::timeout::TimeoutLayer;
use tower_http::trace::{DefaultOnFailure, TraceLayer};
use utoipa::openapi::OpenApi as OpenApiDoc;
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;

use crate::pools::Pool;
use crate::rate_limit::{Client, Turn};
use crate::state::AppState;
use crate::storage::Storage;
use error::{Error, Resource};
use request_id::{RequestIds, REQUEST_ID};

/// Every route with its OpenAPI description, before the layers.
fn routes() -> (Router<AppState>, OpenApiDoc) {
    let (router, mut doc) = OpenApiRouter::with_openapi(openapi::ApiDoc::openapi())
        .merge(pools::router())
        .merge(display::router())
        .merge(rounds::router())
        .merge(round_batches::router())
        .merge(seasons::router())
        .merge(corrections::router())
        .merge(events::router())
        .merge(players::router())
        .merge(leaderboard::router())
        .merge(distribution::router())
        .merge(predictions::router())
        .merge(matchmaking::router())
        .merge(keys::router())
        .merge(audit::router())
        .merge(health::router())
        .merge(openapi::router())
        .split_for_parts();
    // A round's id with `/` in it, as written (`round_path.rs`); the document's `{id}` says so.
    let router = router.route(
        round_path::SPLIT_ROUND,
        axum::routing::get(rounds::get_round).delete(corrections::void_round),
    );
    openapi::add_shared_errors(&mut doc);
    openapi::add_request_examples(&mut doc);
    openapi::describe_pool_parameter(&mut doc);
    openapi::add_parameter_examples(&mut doc);
    (router, doc)
}

/// The OpenAPI 3 document of every route.
#[must_use]
pub fn openapi() -> OpenApiDoc {
    routes().1
}

/// The whole API over `state`, ready to serve (tests call it in-process).
pub fn app(state: AppState) -> Router {
    let (router, _) = routes();
    let server = &state.settings.server;
    // No layer at all when CORS is off: an unconfigured CorsLayer still adds `Vary` headers
    // to every answer.
    let cors = (!server.cors_allowed_origins.is_empty()).then(|| {
        // Checked when the settings were read: "*" alone, or origins that are header values.
        let allowed = if server.cors_allowed_origins == ["*"] {
            AllowOrigin::any()
        } else {
            AllowOrigin::list(
                server
                    .cors_allowed_origins
                    .iter()
                    .filter_map(|origin| HeaderValue::from_str(origin).ok()),
            )
        };
        CorsLayer::new()
            .allow_origin(allowed)
            .allow_methods([
                Method::GET,
                Method::POST,
                Method::PUT,
                Method::PATCH,
                Method::DELETE,
            ])
            .allow_headers([header::AUTHORIZATION, header::CONTENT_TYPE])
    });
    router
        .merge(openapi::docs_page())
        .merge(dashboard::router())
        .fallback(|| async {
            Error::NotFound {
                what: Resource::Route,
                id: String::new(),
            }
        })
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            bodies::admit,
        ))
        .layer(DefaultBodyLimit::max(server.body_limit_bytes))
        .layer(RequestBodyLimitLayer::new(server.body_limit_bytes))
        .layer(TimeoutLayer::with_status_code(
            StatusCode::SERVICE_UNAVAILABLE,
            Duration::from_secs(server.request_timeout_secs),
        ))
        .layer(axum::middleware::map_response_with_state(
            server.body_limit_bytes,
            json_errors,
        ))
        .layer(axum::middleware::from_fn(count_request))
        .layer(option_layer(cors))
        .layer(CatchPanicLayer::custom(|_| {
            tracing::error!("a handler panicked");
            Error::Internal.into_response()
        }))
        .layer(
            TraceLayer::new_for_http()
                // A 5xx is logged where it arises, at ERROR when it is ours (a storage error, a
                // panic); here it is a WARN, so that a readiness probe answered 503 through an
                // outage does not fill the log with errors.
                .on_failure(DefaultOnFailure::new().level(tracing::Level::WARN))
                .make_span_with(|request: &Request| {
                    let route = request
                        .extensions()
                        .get::<MatchedPath>()
                        .map_or(request.uri().path(), MatchedPath::as_str);
                    let id = request
                        .headers()
                        .get(REQUEST_ID)
                        .and_then(|id| id.to_str().ok())
                        .unwrap_or_default();
                    tracing::info_span!(
                        "request",
                        http.method = %request.method(),
                        http.route = route,
                        request.id = id
                    )
                }),
        )
        // Outermost: every answer, an error of any layer below included, carries the id, and
        // the span above records it. A client's own well-formed `x-request-id` is kept.
        .layer(PropagateRequestIdLayer::new(REQUEST_ID))
        .layer(SetRequestIdLayer::new(REQUEST_ID, RequestIds::new()))
        .layer(MapRequestLayer::new(request_id::drop_malformed))
        .with_state(state)
}

/// Records every answer's route, method, status and latency (docs/monitoring.md, "Metrics"). Above the
/// body limit, the timeout and the JSON errors, so their answers are counted with the status
/// the client got; routes are counted by pattern, unmatched ones as `unmatched`.
async fn count_request(request: Request, next: axum::middleware::Next) -> Response {
    let started = std::time::Instant::now();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or("unmatched", MatchedPath::as_str)
        .to_owned();
    let method = method_label(request.method());
    let response = next.run(request).await;
    crate::instruments::request(
        &route,
        method,
        response.status().as_u16(),
        started.elapsed(),
    );
    response
}

/// The `method` label of a request: one of HTTP's own methods, or `other`. A client may send
/// any token as a method, and each label value is a series kept for the process's life.
fn method_label(method: &Method) -> &'static str {
    const KNOWN: [(Method, &str); 9] = [
        (Method::GET, "GET"),
        (Method::HEAD, "HEAD"),
        (Method::POST, "POST"),
        (Method::PUT, "PUT"),
        (Method::DELETE, "DELETE"),
        (Method::PATCH, "PATCH"),
        (Method::OPTIONS, "OPTIONS"),
        (Method::TRACE, "TRACE"),
        (Method::CONNECT, "CONNECT"),
    ];
    KNOWN
        .iter()
        .find(|(known, _)| known == method)
        .map_or("other", |(_, label)| label)
}

/// Gives a JSON error body to error responses made below the handlers (the router's 405,
/// the body limit's 413, the timeout's 503), which come with none.
async fn json_errors(State(body_limit): State<usize>, response: Response) -> Response {
    let status = response.status();
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if (status.is_client_error() || status.is_server_error()) && !is_json {
        let mut replaced = Error::from_status(status, body_limit).into_response();
        if let Some(allow) = response.headers().get(header::ALLOW) {
            replaced.headers_mut().insert(header::ALLOW, allow.clone());
        }
        return replaced;
    }
    response
}

/// The database for one request's reads, once `client` has a turn at them (held until
/// dropped): one client's reads wait behind each other rather than ahead of everyone else's.
pub(crate) async fn reads(state: &AppState, client: Option<&Client>) -> Reads {
    let turn = match client {
        Some(client) => Some(state.limits.read_turns.take(client).await),
        // A router called in process (tests) has no peer address: nothing to count it by.
        None => None,
    };
    Reads {
        storage: Arc::clone(&state.reads),
        _turn: turn,
    }
}

/// [`reads`]: the database, and the client's turn while the reads run.
pub(crate) struct Reads {
    storage: Arc<dyn Storage>,
    _turn: Option<Turn>,
}

impl std::ops::Deref for Reads {
    type Target = dyn Storage;

    fn deref(&self) -> &Self::Target {
        self.storage.as_ref()
    }
}

/// The pool named in the path, or a 404. One this process does not hold is looked for in the
/// database as one of `client`'s [`reads`].
pub(crate) async fn pool_of(
    state: &AppState,
    client: Option<&Client>,
    name: &str,
) -> Result<Arc<Pool>, Error> {
    let pool = match state.pools.get(name) {
        Some(pool) => Some(pool),
        None => {
            let reads = reads(state, client).await;
            state.pool_looked_up_in(name, Some(&*reads)).await?
        }
    };
    pool.ok_or_else(|| Error::NotFound {
        what: Resource::Pool,
        id: name.to_owned(),
    })
}
