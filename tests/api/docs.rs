//! `GET /docs` (the API docs page) and `GET /` (the dashboard): served from the binary, with
//! nothing fetched from elsewhere.

use axum::http::StatusCode;

use crate::support::TestApp;

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
