//! The dashboard at `/`: one page and its script and style sheet, compiled into the binary
//! (`ui/`), reading the API from the browser. Nothing it loads comes from elsewhere.

use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;

use crate::state::AppState;

const PAGE: &str = include_str!("../../ui/index.html");
const SCRIPT: &str = include_str!("../../ui/app.js");
const STYLE: &str = include_str!("../../ui/app.css");

/// `/`, `/ui/app.js` and `/ui/app.css`.
pub(super) fn router() -> Router<AppState> {
    // The page may load and call nothing but this service, and no file is sniffed into
    // another type.
    let asset = |content_type: &'static str, body: &'static str| {
        get(move || async move {
            let headers = [
                (header::CONTENT_TYPE, content_type),
                (header::CONTENT_SECURITY_POLICY, "default-src 'self'"),
                (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            ];
            (headers, body).into_response()
        })
    };
    Router::new()
        .route("/", asset("text/html; charset=utf-8", PAGE))
        .route(
            "/ui/app.js",
            asset("text/javascript; charset=utf-8", SCRIPT),
        )
        .route("/ui/app.css", asset("text/css; charset=utf-8", STYLE))
}
