//! A leaderboard's pages, as the leaderboard, a season's standings and a player's page read
//! them: the query, the page from memory, and the boards of the past (the pool as of one of its
//! rounds, a season's standings) built once and shared.
//! A cursor names the last place shown (its rating and player), so the next page starts
//! right after it even when ratings have moved in between.

use std::future::Future;
use std::sync::Arc;

use axum::Json;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::error::{Error, Resource};
use super::query::limit;
use super::reads;
use super::shown::{LastChangeResponse, RoundRef};
use crate::compute::MAX_ENTRANTS;
use crate::display::{Placement, Ranking};
use crate::engine::SoftReset;
use crate::pools::leaderboard::{Filter, Leaderboard, Listing, Order, Place};
use crate::pools::past::{Basis, BuildFailed, PastKey};
use crate::pools::{AsOfBoard, Listed, Pool, PoolState};
use crate::rate_limit::Client;
use crate::state::AppState;
use crate::storage::{AsOf, RatedAsOf, RoundStatus, SeasonRecord, Storage};
use crate::wire::Entry;

/// Places per page when `limit` is not given.
const DEFAULT_LIMIT: u32 = 100;

/// `?limit=&cursor=&before=&around=&order=&established=&league=&as_of=`.
#[derive(Debug, Clone, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LeaderboardQuery {
    /// Places per page (1–1000, default 100).
    #[param(minimum = 1, maximum = 1000)]
    limit: Option<u32>,
    /// Start after the place this cursor names (a previous page's `next_cursor`).
    cursor: Option<String>,
    /// End right before the place this cursor names instead (a page's `prev_cursor`): the
    /// page above it.
    before: Option<String>,
    /// Center the page on this player instead.
    around: Option<String>,
    /// `conservative` (μ − kσ, k the pool's `conservative_k`), `display_rating` (the pool's
    /// fixed-range rating, which rises with μ) or `mu`; default the pool's `default_order`
    /// (`GET …/display`).
    #[param(inline)]
    order: Option<Ranking>,
    /// `true`: established players only, positions counting them only; `false`: provisional
    /// players too. Default: the pool's `list_provisional` (established only unless it is set).
    established: Option<bool>,
    /// A league's name: its players only; positions then count that league's players.
    league: Option<String>,
    /// The id of an applied round: the leaderboard as it stood right after it (from history
    /// rows, O(players); shown with today's display settings). Not on a season's leaderboard,
    /// which is as of the season's end.
    pub(super) as_of: Option<String>,
    /// Only players whose last round is at most this many days older than the newest round
    /// of any player on the board (to the minute; a player whose last round had no time counts
    /// as active); positions, `total` and cursors then count those players only. O(players)
    /// a read, where the other filters cost O(log players).
    #[param(exclusive_minimum = 0.0)]
    pub(super) active_days: Option<f64>,
}

/// One place on the leaderboard.
#[derive(Debug, Serialize, ToSchema)]
pub struct EntryResponse {
    /// 1-based place in this order, among the players listed.
    pub position: u64,
    /// The player.
    pub player: String,
    /// Rating.
    pub mu: f64,
    /// Uncertainty (a standard deviation); `null` in a system that keeps none (Elo).
    pub sigma: Option<f64>,
    /// μ − kσ, k being the pool's `conservative_k` (default 3).
    pub conservative: f64,
    /// The fixed-range rating, if the pool's display settings give one; `null` otherwise.
    pub display_rating: Option<f64>,
    /// Whether the player is still provisional.
    pub provisional: bool,
    /// The player's league and division; `null` if the pool has no leagues or has not placed
    /// them yet.
    pub league: Option<Placement>,
    /// Rounds played.
    pub rounds: u64,
    /// The last round played: when a player was last active.
    pub last_round: RoundRef,
    /// What that round did to the rating, shown with today's display settings; `null` before
    /// any round, and once a season start has reset the rating since.
    pub last_change: Option<LastChangeResponse>,
}

/// A page of the leaderboard.
#[derive(Debug, Serialize, ToSchema)]
pub struct LeaderboardResponse {
    /// The places, best first.
    pub entries: Vec<EntryResponse>,
    /// Players on the whole leaderboard (established ones only with `established=true`, the
    /// league's only with `league`).
    pub total: u64,
    /// Pass as `cursor` for the next page; `null` on the last page.
    pub next_cursor: Option<String>,
    /// Pass as `before` for the page above this one; `null` on the first page.
    pub prev_cursor: Option<String>,
}

/// [`answer`], on the compute pool when the read filters by activity (a pass over the board).
pub(super) async fn answered(
    state: &AppState,
    client: Option<&Client>,
    current: Arc<PoolState>,
    past: Option<Arc<AsOfBoard>>,
    query: LeaderboardQuery,
) -> Result<Json<LeaderboardResponse>, Error> {
    if query.active_days.is_none() {
        return answer(&current, past.as_deref(), &query).map(Json);
    }
    let players = past
        .as_ref()
        .map_or_else(|| current.len(), |past| past.players());
    state
        .limits
        .compute
        .run(client, players.min(MAX_ENTRANTS), move |_| {
            answer(&current, past.as_deref(), &query)
        })
        .await?
        .map(Json)
}

/// A page of `current`'s leaderboard, or of `past`'s when given, as `query` asks.
pub(super) fn answer(
    current: &PoolState,
    past: Option<&AsOfBoard>,
    query: &LeaderboardQuery,
) -> Result<LeaderboardResponse, Error> {
    let limit = limit(query.limit, DEFAULT_LIMIT)? as usize;
    let display = current.display();
    let ranking = display
        .ranking(query.order)
        .map_err(|problem| Error::query("order", problem))?;
    let order = Order::of(ranking);
    if let Some(days) = query.active_days {
        if !(days.is_finite() && days > 0.0) {
            return Err(Error::query(
                "active_days",
                "must be a finite number above 0",
            ));
        }
    }
    let established = display.established_only(query.established);
    let filter = match (&query.league, query.established) {
        (Some(_), Some(true)) => {
            return Err(Error::query(
                "established",
                "cannot be combined with `league`: give one filter",
            ))
        }
        (Some(league), _) => {
            let index = current
                .display()
                .leagues
                .as_ref()
                .and_then(|leagues| leagues.index(league))
                .ok_or_else(|| {
                    Error::query("league", format!("the pool has no league `{league}`"))
                })?;
            Filter::League(u16::try_from(index).unwrap_or(u16::MAX))
        }
        (None, _) if established => Filter::Established,
        (None, _) => Filter::All,
    };
    let (board, lookup): (&Leaderboard, Lookup<'_>) = match past {
        Some(past) => (past.leaderboard(), Box::new(|id: &str| past.listed(id))),
        None => (
            current.leaderboard(),
            Box::new(|id: &str| current.listed(id)),
        ),
    };
    let listing = board.listing(order, filter, query.active_days);
    let (start, limit) = match (&query.cursor, &query.before, &query.around) {
        (Some(_), _, Some(_)) | (_, Some(_), Some(_)) => {
            return Err(Error::query(
                "around",
                "give one of `cursor`, `before` and `around`",
            ))
        }
        (Some(_), Some(_), None) => {
            return Err(Error::query(
                "before",
                "give one of `cursor`, `before` and `around`",
            ))
        }
        (Some(cursor), None, None) => {
            let (key, player) = decode_cursor(order, cursor, "cursor")?;
            (listing.index_after(key, &player), limit)
        }
        (None, Some(cursor), None) => {
            let (key, player) = decode_cursor(order, cursor, "before")?;
            let end = listing.index_before(key, &player);
            let start = end.saturating_sub(limit);
            (start, end - start)
        }
        (None, None, Some(player)) => {
            let Some(listed) = lookup(player) else {
                return Err(Error::NotFound {
                    what: Resource::Player,
                    id: player.clone(),
                });
            };
            let index = listing
                .position_of(listed.rating, player)
                .ok_or_else(|| Error::NotListed(player.clone()))?;
            // Centred where the board allows; at either end the page still holds `limit`
            // places, as many as the board has.
            let start = index
                .saturating_sub(limit / 2)
                .min(listing.len().saturating_sub(limit));
            (start, limit)
        }
        (None, None, None) => (0, limit),
    };
    Ok(page(&listing, &*lookup, order, start, limit))
}

/// A player as the leaderboard being paged lists them.
type Lookup<'a> = Box<dyn Fn(&str) -> Option<Listed> + Send + 'a>;

/// The pool as it stood right after its round `round`, built for `client` if no one has built
/// it yet: 404 if there is no such round, 400 naming `as_of` if it was not applied.
pub(super) async fn board_as_of(
    state: &AppState,
    client: Option<&Client>,
    pool: &Pool,
    round: &str,
) -> Result<Arc<AsOfBoard>, Error> {
    if round.is_empty() {
        return Err(Error::query("as_of", "must name a round"));
    }
    let seq = match reads(state, client)
        .await
        .round_applied(pool.name(), round)
        .await?
    {
        AsOf::Applied(seq) => seq,
        AsOf::NoSuchRound => {
            return Err(Error::NotFound {
                what: Resource::Round,
                id: round.to_owned(),
            })
        }
        AsOf::NotApplied(status) => {
            return Err(Error::query(
                "as_of",
                format!(
                    "round `{round}` is {}: only an applied round has ratings after it",
                    status.as_str()
                ),
            ))
        }
    };
    let storage = Arc::clone(&state.reads);
    let name = pool.name().to_owned();
    let rated = async move {
        let seasons = resets_up_to(storage.as_ref(), &name, seq).await?;
        let rated = storage.ratings_as_of(&name, seq).await?;
        Ok(PastPlayers::Rows(rated, seasons))
    };
    let key = PastKey::AsOf(seq);
    past_board(state, client, pool, pool.read(), key, 0, rated).await
}

/// Whom a past board lists.
pub(super) enum PastPlayers {
    /// The players as history rows give them, and the season starts applied by then (by seq).
    Rows(Vec<RatedAsOf>, Vec<(i64, SoftReset)>),
    /// The snapshot's players whose last round came after this seq: a season still open.
    Since(i64),
}

/// Past board `key` of `pool` (see [`crate::pools::past`]), taking in the lines through seq
/// `through` if it is a season still open (0 otherwise): the one kept or being built, or else
/// one built for `client` of the players `rated` names only then. `current` is the pool's
/// snapshot, taken by the caller before `rated` reads anything (a season still open takes its
/// players from that very snapshot).
pub(super) async fn past_board(
    state: &AppState,
    client: Option<&Client>,
    pool: &Pool,
    current: Arc<PoolState>,
    key: PastKey,
    through: i64,
    rated: impl Future<Output = Result<PastPlayers, Error>> + Send + 'static,
) -> Result<Arc<AsOfBoard>, Error> {
    // The snapshot is taken, and the corrections it holds counted, before the rows are read,
    // so that a board is never kept under a basis or display settings newer than its rows:
    // corrections and leagues change the rows first, then the snapshot (here, or on a replica
    // that follows). A board built from rows newer than its key is built again once the
    // snapshot catches up; one built from the snapshot is kept under that snapshot's own.
    let basis = Basis {
        corrections: reads(state, client)
            .await
            .corrections_applied(pool.name(), current.last_seq())
            .await?,
        through,
    };
    let display = current.display().clone();
    let build = async move {
        let rated = rated.await.map_err(BuildFailed::from)?;
        tokio::task::spawn_blocking(move || match rated {
            PastPlayers::Rows(rated, seasons) => current.as_of(rated, &seasons),
            PastPlayers::Since(after) => current.season_board(after),
        })
        .await
        .map_err(|error| {
            tracing::error!(error = %error, "rebuilding a past leaderboard");
            BuildFailed::Internal
        })
    };
    state
        .past_boards
        .get(client, pool.name(), key, (basis, display), build)
        .await
        .map_err(Error::from)
}

fn page(
    listing: &Listing<'_>,
    lookup: &dyn Fn(&str) -> Option<Listed>,
    order: Order,
    start: usize,
    limit: usize,
) -> LeaderboardResponse {
    let places = listing.page(start, limit);
    let entries = places
        .iter()
        .enumerate()
        .filter_map(|(i, place)| {
            let listed = lookup(&place.player)?;
            Some(EntryResponse {
                position: (start + i + 1) as u64,
                player: place.player.to_string(),
                mu: listed.rating.mu,
                sigma: listed.rating.sigma,
                conservative: listed.shown.conservative,
                display_rating: listed.shown.display_rating,
                provisional: listed.shown.provisional,
                league: listed.league,
                rounds: listed.rounds,
                last_round: RoundRef::of(&listed.last_round),
                last_change: listed.last_change.map(LastChangeResponse::from),
            })
        })
        .collect();
    let total = listing.len();
    let next_cursor = match places.last() {
        Some(last) if start + places.len() < total => Some(encode_cursor(order, last)),
        _ => None,
    };
    let prev_cursor = places
        .first()
        .filter(|_| start > 0)
        .map(|first| encode_cursor(order, first));
    LeaderboardResponse {
        entries,
        total: total as u64,
        next_cursor,
        prev_cursor,
    }
}

fn order_tag(order: Order) -> char {
    match order {
        Order::Mu => 'm',
        Order::Conservative => 'c',
    }
}

/// `base64url("{m|c}{key bits as 16 hex digits}{player}")`.
fn encode_cursor(order: Order, place: &Place) -> String {
    URL_SAFE_NO_PAD.encode(format!(
        "{}{:016x}{}",
        order_tag(order),
        place.key.to_bits(),
        place.player
    ))
}

/// The place `cursor`, given as query parameter `field`, names in `order`.
fn decode_cursor(order: Order, cursor: &str, field: &str) -> Result<(f64, String), Error> {
    let bad = || Error::query(field, "not a cursor of this leaderboard order");
    let bytes = URL_SAFE_NO_PAD.decode(cursor).map_err(|_| bad())?;
    let text = String::from_utf8(bytes).map_err(|_| bad())?;
    let mut chars = text.chars();
    if chars.next() != Some(order_tag(order)) {
        return Err(bad());
    }
    let rest = chars.as_str();
    let bits = rest.get(..16).ok_or_else(bad)?;
    let bits = u64::from_str_radix(bits, 16).map_err(|_| bad())?;
    Ok((f64::from_bits(bits), rest[16..].to_owned()))
}

/// The soft reset a stored start carries.
pub(super) fn reset_of(start: &SeasonRecord) -> Result<SoftReset, Error> {
    let value: serde_json::Value =
        serde_json::from_str(&start.body).map_err(|_| Error::Internal)?;
    match Entry::from_value(&value) {
        Ok(Entry::Season(season)) => Ok(season.reset()),
        _ => {
            tracing::error!(round.id = start.id, "a stored season start does not parse");
            Err(Error::Internal)
        }
    }
}

/// The soft resets of the season starts applied up to the line at `seq`, with their seqs:
/// what an as-of read replays over the history rows.
pub(super) async fn resets_up_to(
    storage: &dyn Storage,
    pool: &str,
    seq: i64,
) -> Result<Vec<(i64, SoftReset)>, Error> {
    storage
        .seasons(pool)
        .await?
        .iter()
        .filter(|start| start.seq <= seq && start.status == RoundStatus::Applied)
        .map(|start| Ok((start.seq, reset_of(start)?)))
        .collect()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn a_cursor_decodes_to_the_place_it_was_made_from_in_its_own_order_only() {
        let place = Place {
            key: 1234.5678,
            player: Arc::from("név/✓"),
        };
        let cursor = encode_cursor(Order::Mu, &place);
        let (key, player) = decode_cursor(Order::Mu, &cursor, "cursor").expect("valid cursor");
        assert_eq!((key, player.as_str()), (1234.5678, "név/✓"));
        assert!(decode_cursor(Order::Conservative, &cursor, "cursor").is_err());
        assert!(decode_cursor(Order::Mu, "!!", "cursor").is_err());
        assert!(decode_cursor(Order::Mu, &URL_SAFE_NO_PAD.encode("m12"), "cursor").is_err());
    }
}
