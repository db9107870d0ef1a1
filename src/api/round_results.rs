//! A round with a page of its results, as the round route and the change feed read and show
//! it.
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

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde::Serialize;
use utoipa::openapi::schema::Schema;
use utoipa::ToSchema;

use super::error::Error;
use super::queueing::{one_of_strings, status_schema};
use super::shown::{rfc3339, ShownChange};
use crate::display::Placement;
use crate::pools::past::{BuildFailed, RoundOrder};
use crate::pools::Pool;
use crate::pools::PoolState;
use crate::rate_limit::Client;
use crate::state::AppState;
use crate::storage::{EntryKind, ResultsPage, RoundRecord, RoundStatus, Storage};
use crate::wire::MAX_RANK;

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

/// A line's kind in the OpenAPI document: one of [`EntryKind::ALL`].
fn kind_schema() -> Schema {
    one_of_strings(EntryKind::ALL.map(EntryKind::as_str), "round")
}

/// Results per page of a round when `limit` is not given: the most a page holds.
pub(super) const DEFAULT_RESULTS: u32 = super::query::MAX_LIMIT;

/// A round's status and, once applied, a page of its results.
#[derive(Debug, Serialize, ToSchema)]
pub struct RoundResponse {
    /// The round's id.
    pub id: String,
    /// `round`; `season` for a season start (`POST …/seasons`) and `correction` for a
    /// correction (`POST …/corrections`), which have no results.
    #[schema(schema_with = kind_schema)]
    pub kind: &'static str,
    /// `queued`, `applied`, `failed`, or `voided` (by a correction).
    #[schema(schema_with = status_schema)]
    pub status: &'static str,
    /// Why the worker could not rate it, when failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// When it took place (RFC 3339), when applied and the round said.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time: Option<String>,
    /// Its entrants (standings), when applied: the field's size, whatever page is shown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entrants: Option<u64>,
    /// The page's entrants, best rank first (ties by player), when applied: every entrant
    /// when `next_cursor` is `null`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub results: Option<Vec<ResultResponse>>,
    /// Pass as `cursor` for the round's next page of results; `null` on the last page (and
    /// absent when the round has no results).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<Option<String>>,
}

/// One entrant's result in an applied round.
#[derive(Debug, Serialize, ToSchema)]
pub struct ResultResponse {
    /// The player.
    pub player: String,
    /// Their rank in the round.
    pub rank: u64,
    /// The performance the round credited them with.
    pub performance: f64,
    /// Rating before the round.
    pub mu_before: f64,
    /// Rating after the round.
    pub mu_after: f64,
    /// Uncertainty before the round; `null` in a system that keeps none (Elo).
    pub sigma_before: Option<f64>,
    /// Uncertainty after the round; `null` in a system that keeps none (Elo).
    pub sigma_after: Option<f64>,
    /// `mu_after − mu_before`.
    pub delta: f64,
    /// The player's league before the round; `null` when not placed (or no leagues).
    pub league_before: Option<Placement>,
    /// Their league after it: the round may have placed, promoted or demoted them.
    pub league_after: Option<Placement>,
    /// Why the rating moved: what the round's priors expected and what it showed before and
    /// after.
    #[serde(flatten)]
    pub shown: ShownChange,
}

/// `base64url("r{rank as 16 hex digits}{player}")`: the result a page ended on.
fn encode_cursor(rank: u64, player: &str) -> String {
    URL_SAFE_NO_PAD.encode(format!("r{rank:016x}{player}"))
}

/// The rank and player an [`encode_cursor`] cursor names; 400 naming `cursor` for anything
/// else, a rank no round can hold included.
pub(super) fn decode_cursor(cursor: &str) -> Result<(u64, String), Error> {
    let bad = || Error::query("cursor", "not a cursor of a round's results");
    let bytes = URL_SAFE_NO_PAD.decode(cursor).map_err(|_| bad())?;
    let text = String::from_utf8(bytes).map_err(|_| bad())?;
    let rest = text.strip_prefix('r').ok_or_else(bad)?;
    let rank = rest.get(..16).ok_or_else(bad)?;
    if !rank.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return Err(bad());
    }
    let rank = u64::from_str_radix(rank, 16).map_err(|_| bad())?;
    if rank > MAX_RANK {
        return Err(bad());
    }
    Ok((rank, rest[16..].to_owned()))
}

impl RoundResponse {
    /// What `GET …/rounds/{id}` shows of `record`, in `current`'s display settings.
    pub(super) fn of(record: RoundRecord, current: &PoolState) -> Self {
        let next_cursor = record.results.as_ref().map(|results| {
            results
                .last()
                .filter(|_| record.more_results)
                .map(|last| encode_cursor(last.rank, &last.player))
        });
        Self {
            next_cursor,
            id: record.id,
            kind: record.kind.as_str(),
            status: record.status.as_str(),
            error: record.error,
            time: rfc3339(record.time),
            entrants: record.entrants,
            results: record.results.map(|results| {
                results
                    .into_iter()
                    .map(|r| ResultResponse {
                        shown: ShownChange::of(current, &r.change, r.expected_rank),
                        delta: r.change.delta(),
                        player: r.player,
                        rank: r.rank,
                        performance: r.change.performance,
                        mu_before: r.change.before.mu,
                        mu_after: r.change.after.mu,
                        sigma_before: r.change.before.sigma,
                        sigma_after: r.change.after.sigma,
                        league_before: r.league.before,
                        league_after: r.league.after,
                    })
                    .collect()
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_decodes_to_the_result_it_was_made_from() {
        for (rank, player) in [(1, "ann"), (MAX_RANK, ""), (7, "r0000000000000001ü:x")] {
            let cursor = encode_cursor(rank, player);
            assert_eq!(
                decode_cursor(&cursor).expect("a cursor"),
                (rank, player.to_owned())
            );
        }
        for bad in [
            "!!".to_owned(),
            URL_SAFE_NO_PAD.encode("r12"),
            URL_SAFE_NO_PAD.encode("m0000000000000001ann"),
            URL_SAFE_NO_PAD.encode("r000000000000000gann"),
            URL_SAFE_NO_PAD.encode("r000000000000000Aann"),
            URL_SAFE_NO_PAD.encode("r+00000000000001ann"),
            encode_cursor(MAX_RANK + 1, "ann"),
            URL_SAFE_NO_PAD.encode([b'r', 0xff, 0xfe]),
        ] {
            assert!(decode_cursor(&bad).is_err(), "{bad}");
        }
    }
}
