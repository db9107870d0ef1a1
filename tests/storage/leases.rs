//! Pool leases on Postgres (SQLite has none: one process owns its file): one holder at a time,
//! and a full lock table told apart from a lost connection.

use std::time::{Duration, Instant};

use mmr_service::storage::{self, Lease};
use sqlx::Connection;

use crate::db::{with_database, Backend};

#[tokio::test]
async fn a_lease_has_one_holder_until_it_is_given_back() {
    with_database(Backend::Postgres, |url| async move {
        let (one, two) = (
            storage::connect(&url).await.expect("open"),
            storage::connect(&url).await.expect("open"),
        );
        let (one, two) = (
            one.replicas().expect("Postgres coordinates replicas"),
            two.replicas().expect("Postgres coordinates replicas"),
        );
        assert_eq!(one.try_lease("main").await.expect("lease"), Lease::Taken);
        assert_eq!(two.try_lease("main").await.expect("lease"), Lease::Held);
        assert_eq!(two.try_lease("other").await.expect("lease"), Lease::Taken);
        one.release("main").await.expect("release");
        assert_eq!(two.try_lease("main").await.expect("lease"), Lease::Taken);
        assert_eq!(one.try_lease("main").await.expect("lease"), Lease::Held);
        two.leave("two").await;
        // The server frees a closed session's locks as its backend exits, a moment later.
        let deadline = Instant::now() + Duration::from_secs(5);
        while one.try_lease("main").await.expect("lease") != Lease::Taken {
            assert!(
                Instant::now() < deadline,
                "the lease outlived its connection"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        one.leave("one").await;
    })
    .await;
}

/// Filling the server's lock table would make every test running beside this one fail, so the
/// error is raised as Postgres raises it when the table is full.
#[tokio::test]
async fn only_postgres_out_of_shared_memory_reads_as_a_full_lock_table() {
    with_database(Backend::Postgres, |url| async move {
        let mut db = sqlx::PgConnection::connect(&url).await.expect("connect");
        let full = sqlx::query(
            "DO $$ BEGIN RAISE EXCEPTION 'out of shared memory' USING ERRCODE = '53200'; END $$",
        )
        .execute(&mut db)
        .await
        .expect_err("raised");
        assert!(storage::lock_table_full(&full), "{full}");
        let other = sqlx::query("SELECT 1 / 0")
            .execute(&mut db)
            .await
            .expect_err("division by zero");
        assert!(!storage::lock_table_full(&other), "{other}");
        db.close().await.expect("close");
    })
    .await;
}
