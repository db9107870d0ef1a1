//! A round with a page of its results, as the round route and the change feed read it.
//!
//! The database holds a round's results along the key `(pool, seq, player)`, and sorts them by
//! rank for each page: a page of a 1,000,000-entrant round sorts the whole round again (200-255
//! ms on Postgres, 234 ms on SQLite, the page's query timed in `psql` and Python's `sqlite3` on
//! a table of the round's rows), and a reader walking it would ask 1,000 times. So the database sorts only rounds of at most
//! [`SORTED_BY_DATABASE`] entrants; a larger round's order (each entrant's rank and id) is
//! read and sorted once, shared and kept as past boards are ([`crate::pools::past`]), and each
//! page is read by key, one lookup per result. An index sorted by rank would serve pages too,
//! but adds about half again to the time of writing every participation (measured with
//! 1,000,000 rows on Postgres), where this costs only the readers of large rounds.

use std::sync::Arc;

use super::error::Error;
use crate::pools::past::{BuildFailed, RoundOrder};
use crate::pools::Pool;
use crate::rate_limit::Client;
use crate::state::AppState;
use crate::storage::{EntryKind, ResultsPage, RoundRecord, RoundStatus, Storage};

/// The most entrants of a round whose results the database sorts for each page: a page of a
/// 2,000-entrant round took 2.4-5.5 ms on Postgres (`psql`), the 1,000 key lookups of a larger
/// round's page 5.7 ms (`EXPLAIN ANALYZE`).
pub const SORTED_BY_DATABASE: u64 = 2_000;

/// How many times a large round's page is read against its order before the database sorts
/// it: a correction that rewrites the round between the order's basis and the page's rows
/// makes them disagree, and a second read takes the order built after it.
const ATTEMPTS: usize = 2;

/// Round `id` of `pool` read through `storage`, with the results `after` a rank and player, at
/// most `limit` of them; a large round's order is built for `client` (none: the service's own
/// reader, counted in no share).
pub async fn read_round(
    state: &AppState,
    client: Option<&Client>,
    storage: &dyn Storage,
    pool: &Pool,
    id: &str,
    after: Option<(u64, String)>,
    limit: u32,
) -> Result<Option<RoundRecord>, Error> {
    let mut page = ResultsPage {
        after,
        limit,
        sorted_up_to: SORTED_BY_DATABASE,
    };
    for _ in 0..ATTEMPTS {
        let Some(mut record) = storage.round(pool.name(), id, &page).await? else {
            return Ok(None);
        };
        if record.results.is_some()
            || limit == 0
            || record.status != RoundStatus::Applied
            || record.kind != EntryKind::Round
        {
            return Ok(Some(record));
        }
        let order = round_order(state, client, storage, pool, record.seq).await?;
        let after = page
            .after
            .as_ref()
            .map(|(rank, player)| (*rank, player.as_str()));
        let (keys, more) = order.page(after, limit as usize);
        let players: Vec<&str> = keys.iter().map(|(_, player)| &**player).collect();
        let mut results = storage
            .results_of(pool.name(), record.seq, &players)
            .await?;
        results.sort_unstable_by(|a, b| (a.rank, &a.player).cmp(&(b.rank, &b.player)));
        let agree = results.len() == keys.len()
            && results
                .iter()
                .zip(keys)
                .all(|(result, (rank, player))| result.rank == *rank && *result.player == **player);
        if agree {
            record.results = Some(results);
            record.more_results = more;
            return Ok(Some(record));
        }
    }
    page.sorted_up_to = u64::MAX;
    Ok(storage.round(pool.name(), id, &page).await?)
}

/// The order of the results of the round at `seq` of `pool`: the one kept on the pool's current
/// count of corrections, or one read and sorted now.
async fn round_order(
    state: &AppState,
    client: Option<&Client>,
    storage: &dyn Storage,
    pool: &Pool,
    seq: i64,
) -> Result<Arc<RoundOrder>, Error> {
    // Counted before the rows are read: an order is never kept under a count older than its
    // rows' corrections, only built again once more.
    let corrections = storage.corrections_applied(pool.name(), i64::MAX).await?;
    let reads = Arc::clone(&state.reads);
    let name = pool.name().to_owned();
    let build = async move {
        let entrants = reads
            .round_entrants(&name, seq)
            .await
            .map_err(|error| BuildFailed::from(Error::from(error)))?;
        tokio::task::spawn_blocking(move || RoundOrder::new(entrants))
            .await
            .map_err(|error| {
                tracing::error!(error = %error, "sorting a round's results");
                BuildFailed::Internal
            })
    };
    Ok(state
        .round_orders
        .get(client, pool.name(), seq, corrections, build)
        .await?)
}
