//! What the player routes, the leaderboard, rounds and the matchmaker's answers share in how
//! they show a player: a round named by id and time, the change their last round made, their
//! peak, and a round's change beside its expectation.

use serde::Serialize;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;
use utoipa::ToSchema;

use crate::display::{Display, Resolved};
use crate::engine::RatingChange;
use crate::pools::{LastChange, LastRound, PoolState};
use crate::storage::Peak;

/// A round's id and time.
#[derive(Debug, Serialize, ToSchema)]
pub struct RoundRef {
    /// The round's id.
    pub id: String,
    /// When it took place (RFC 3339), if it said.
    pub time: Option<String>,
}

impl RoundRef {
    /// What a reader sees of `round`.
    pub(super) fn of(round: &LastRound) -> Self {
        Self {
            id: round.id.to_string(),
            time: rfc3339(round.time),
        }
    }
}

/// Formats Unix seconds as RFC 3339.
pub(super) fn rfc3339(time: Option<i64>) -> Option<String> {
    time.and_then(|t| OffsetDateTime::from_unix_timestamp(t).ok())
        .and_then(|t| t.format(&Rfc3339).ok())
}

/// How far a player's last round moved their rating, through the pool's display settings of
/// now: what a leaderboard shows as "+12" beside a rating.
#[derive(Debug, Serialize, ToSchema)]
pub struct LastChangeResponse {
    /// μ after the round minus μ before it.
    pub mu: f64,
    /// The same of μ − kσ, with the pool's current `conservative_k`.
    pub conservative: f64,
    /// The same of the fixed-range rating; `null` if the pool shows none.
    pub display_rating: Option<f64>,
}

impl From<LastChange> for LastChangeResponse {
    fn from(change: LastChange) -> Self {
        Self {
            mu: change.mu,
            conservative: change.conservative,
            display_rating: change.display_rating,
        }
    }
}

/// The round after which a player's rating stood highest in the pool's default order.
#[derive(Debug, Serialize, ToSchema)]
pub struct PeakResponse {
    /// The round.
    pub round: RoundRef,
    /// μ after it.
    pub mu: f64,
    /// σ after it; `null` in a system that keeps none (Elo).
    pub sigma: Option<f64>,
    /// μ − kσ after it, with the pool's current `conservative_k`.
    pub conservative: f64,
    /// The fixed-range rating of that μ under the pool's current settings; `null` if it shows
    /// none.
    pub display_rating: Option<f64>,
}

impl PeakResponse {
    /// `peak` shown by `display`, the fixed-range rating resolved as `range`.
    pub(super) fn of(peak: Peak, display: &Display, range: Option<Resolved>) -> Self {
        Self {
            mu: peak.rating.mu,
            sigma: peak.rating.sigma,
            conservative: display.conservative(peak.rating),
            display_rating: range.map(|range| range.display(peak.rating.mu)),
            round: RoundRef {
                id: peak.round_id,
                time: rfc3339(peak.time),
            },
        }
    }
}

/// What a round's change looks like beside the expectation and through the pool's display
/// settings, so that a frontend can say "3rd, 7th was expected, +42".
#[derive(Debug, Serialize, ToSchema)]
pub struct ShownChange {
    /// The place the player (their team, in a team round) was expected to take among the
    /// round's entrants before it was played, from the ratings then: `1 + Σ P(another entrant
    /// finishes ahead)`, between 1 and the number of entrants; `null` unless the pool's display
    /// settings asked for `expected_ranks` when the round was applied.
    pub expected_rank: Option<f64>,
    /// μ − kσ before the round, with the pool's current `conservative_k`.
    pub conservative_before: f64,
    /// μ − kσ after the round.
    pub conservative_after: f64,
    /// The fixed-range rating of `mu_before` under the pool's current display settings;
    /// `null` if it shows none.
    pub display_rating_before: Option<f64>,
    /// The same of `mu_after`.
    pub display_rating_after: Option<f64>,
}

impl ShownChange {
    /// `change` (expected to be `expected_rank`) as `state`'s display settings show it.
    pub(super) fn of(state: &PoolState, change: &RatingChange, expected_rank: Option<f64>) -> Self {
        let display = state.display();
        let range = state.fixed_range();
        Self {
            expected_rank,
            conservative_before: display.conservative(change.before),
            conservative_after: display.conservative(change.after),
            display_rating_before: range.map(|r| r.display(change.before.mu)),
            display_rating_after: range.map(|r| r.display(change.after.mu)),
        }
    }
}
