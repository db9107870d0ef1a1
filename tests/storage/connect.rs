//! Opening storage from a URL: the scheme picks the backend; SQLite creates what is missing.

use mmr_service::storage::{self, Error};

#[tokio::test]
async fn connecting_to_sqlite_creates_the_file_and_its_directory() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let file = dir.path().join("nested").join("data").join("mmr.sqlite3");
    let storage = storage::connect(&format!("sqlite://{}", file.display()))
        .await
        .expect("open");
    storage.ping().await.expect("ping");
    assert!(file.exists());
    assert!(
        storage.pools().await.expect("list").is_empty(),
        "migrated and empty"
    );
    storage.close().await;
}

#[tokio::test]
async fn an_unknown_url_scheme_is_refused_without_echoing_the_url() {
    let outcome = storage::connect("mysql://user:secret@localhost/db").await;
    match outcome {
        Err(error @ Error::UnsupportedScheme(_)) => {
            assert!(!error.to_string().contains("secret"), "{error}");
        }
        Err(other) => panic!("expected UnsupportedScheme, got {other}"),
        Ok(_) => panic!("a mysql URL was accepted"),
    }
}
