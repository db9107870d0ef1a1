//! A pool as it stood right after one of its rounds ([`AsOfBoard`]): a leaderboard of every
//! player rated by then, with their ratings, built from history rows (or, for an open season,
//! from the snapshot) and shown with today's display settings.

use std::sync::Arc;

use super::leaderboard::{Filter, Leaderboard, Order};
use super::snapshot::{LastChange, LastRound, Listed};
use crate::display::{Display, Placement, Resolved, Spread};
use crate::engine;

/// A pool as it stood after some round, rebuilt from history rows for an as-of read.
#[derive(Debug)]
pub struct AsOfBoard {
    pub(super) leaderboard: Leaderboard,
    pub(super) display: Display,
    pub(super) spread: Spread,
    pub(super) players: AsOfPlayers,
}

/// An [`AsOfBoard`]'s players by id. Hashed with foldhash: std's SipHash took a ninth of a
/// board's build (`perf`, 138,260 players).
pub(super) type AsOfPlayers =
    std::collections::HashMap<Arc<str>, Then, foldhash::fast::RandomState>;

/// A player in an [`AsOfBoard`], as they stood then.
#[derive(Debug)]
pub(super) struct Then {
    pub(super) rating: engine::Rating,
    pub(super) rounds: u64,
    pub(super) last_round: LastRound,
    pub(super) league: Option<Placement>,
    /// The rating before their last round, unless a season start reset it since.
    pub(super) before: Option<engine::Rating>,
}

/// Players from which an [`AsOfBoard`] is freed on a blocking thread rather than where its
/// last holder lets go of it.
const FREED_APART: usize = 10_000;

impl Drop for AsOfBoard {
    /// A board's last holder is most often a runtime thread (a request answered from it, or
    /// the list of kept boards replacing it under its lock), where freeing a board of a whole
    /// pool would stall every request that thread serves, for a time that grows with the pool:
    /// 6-9 ms at 138,260 players whose ids the board shares with the snapshot, 78-84 ms when
    /// it held copies (BENCHMARKS.md, "Hardening bounds").
    fn drop(&mut self) {
        if self.players.len() < FREED_APART {
            return;
        }
        free_apart((
            std::mem::take(&mut self.players),
            std::mem::take(&mut self.leaderboard),
        ));
    }
}

/// Drops `value` on the runtime's blocking pool when called on a runtime, here otherwise.
fn free_apart<T: Send + 'static>(value: T) {
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        runtime.spawn_blocking(move || drop(value));
    }
}

impl AsOfBoard {
    /// How many players were rated then.
    #[must_use]
    pub fn players(&self) -> usize {
        self.players.len()
    }

    /// The leaderboard then.
    #[must_use]
    pub fn leaderboard(&self) -> &Leaderboard {
        &self.leaderboard
    }

    /// A player as a row of this board shows them.
    #[must_use]
    pub fn listed(&self, id: &str) -> Option<Listed> {
        let then = self.players.get(id)?;
        let range = self.fixed_range();
        let shown = self.display.show(range, then.rating, then.rounds);
        Some(Listed {
            last_change: then.before.map(|before| {
                LastChange::between(&self.display, range, before, &shown, then.rating.mu)
            }),
            rating: then.rating,
            shown,
            rounds: then.rounds,
            last_round: then.last_round.clone(),
            league: then.league.clone(),
        })
    }

    /// The fixed-range rating's center and scale on this board, with today's settings.
    #[must_use]
    pub fn fixed_range(&self) -> Option<Resolved> {
        self.display
            .resolve(&self.spread, self.leaderboard.extremes())
    }

    /// The 0-based index of a player in `order` among those `filter` lists, then.
    #[must_use]
    pub fn index_of(&self, order: Order, filter: Filter, id: &str) -> Option<usize> {
        let then = self.players.get(id)?;
        self.leaderboard.position_of(order, filter, then.rating, id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn what_is_freed_apart_is_freed_off_the_runtime_thread() {
        struct Probe(Option<tokio::sync::oneshot::Sender<std::thread::ThreadId>>);
        impl Drop for Probe {
            fn drop(&mut self) {
                if let Some(sender) = self.0.take() {
                    let _ = sender.send(std::thread::current().id());
                }
            }
        }
        let (sender, freed_on) = tokio::sync::oneshot::channel();
        free_apart(Probe(Some(sender)));
        let freed_on = freed_on.await.expect("freed, not leaked");
        assert_ne!(freed_on, std::thread::current().id());
    }
}
