//! Storage behaviour tests: one suite, run against both backends. Each test is an `async fn`
//! taking a fresh database ([`support::Db`]); `backend_tests!` turns it into a `sqlite::` and a
//! `postgres::` test. SQLite databases live in a temporary directory; Postgres ones are created
//! on `MMR_TEST_DATABASE_URL` and dropped afterwards. These tests touch nothing but the
//! storage layer's public interface.

/// Runs each named test against SQLite and against Postgres.
macro_rules! backend_tests {
    ($($test:ident),+ $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test]
                async fn $test() {
                    crate::support::run(crate::support::Backend::Sqlite, super::$test).await;
                }
            )+
        }

        mod postgres {
            $(
                #[tokio::test]
                async fn $test() {
                    crate::support::run(crate::support::Backend::Postgres, super::$test).await;
                }
            )+
        }
    };
}

mod apply;
mod connect;
mod pools;
mod queue;
mod reads;
mod support;
