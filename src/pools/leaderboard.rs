//! A pool's players in rating order, by μ and by the conservative rating μ − 3σ: two sorted
//! arrays, so a player's position is a binary search and a page is a slice. A round's changes
//! are merged in one pass, O(n + k log n) for k changed players, instead of re-sorting: each
//! changed player's old place is found by binary search from their old rating, so the pass
//! compares indices, not names.
//! Knows nothing of HTTP or storage.

use std::cmp::Ordering;
use std::sync::Arc;

/// How many standard deviations the conservative rating lies below μ.
pub const CONSERVATIVE_SIGMAS: f64 = 3.0;

/// The conservative rating μ − 3σ: a player is very probably at least this good.
#[must_use]
pub fn conservative(mu: f64, sigma: f64) -> f64 {
    mu - CONSERVATIVE_SIGMAS * sigma
}

/// Which rating a leaderboard is sorted by, highest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// μ.
    Mu,
    /// μ − 3σ.
    Conservative,
}

/// One place on a leaderboard: the key it is sorted by and the player. Ties on the key are
/// broken by player id, so the order is total and a cursor is unambiguous.
#[derive(Debug, Clone, PartialEq)]
pub struct Place {
    /// The rating sorted on.
    pub key: f64,
    /// The player.
    pub player: Arc<str>,
}

impl Place {
    /// Leaderboard order: higher key first, then player id ascending.
    fn cmp_order(&self, key: f64, player: &str) -> Ordering {
        key.total_cmp(&self.key)
            .then_with(|| (*self.player).cmp(player))
    }
}

/// What one player's change looks like to the leaderboard.
#[derive(Debug, Clone)]
pub struct Move {
    /// The player.
    pub player: Arc<str>,
    /// μ and σ before the change; `None` for a player not yet on the leaderboard.
    pub before: Option<(f64, f64)>,
    /// μ after the change.
    pub mu: f64,
    /// σ after the change.
    pub sigma: f64,
}

/// Every rated player of a pool, in both orders.
#[derive(Debug, Clone, Default)]
pub struct Leaderboard {
    by_mu: Vec<Place>,
    by_conservative: Vec<Place>,
}

impl Leaderboard {
    /// Players rated so far.
    #[must_use]
    pub fn len(&self) -> usize {
        self.by_mu.len()
    }

    /// Whether nobody is rated.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.by_mu.is_empty()
    }

    fn places(&self, order: Order) -> &[Place] {
        match order {
            Order::Mu => &self.by_mu,
            Order::Conservative => &self.by_conservative,
        }
    }

    /// Moves every player of `moves` (new or not) to their new place.
    pub fn update(&mut self, moves: &[Move]) {
        let mu = |(mu, _): (f64, f64)| mu;
        let cons = |(mu, sigma): (f64, f64)| conservative(mu, sigma);
        merge(&mut self.by_mu, moves, mu);
        merge(&mut self.by_conservative, moves, cons);
    }

    /// 0-based index of the player whose key in `order` is `key`; `None` if they are not there.
    #[must_use]
    pub fn index_of(&self, order: Order, key: f64, player: &str) -> Option<usize> {
        let places = self.places(order);
        let index = places.partition_point(|p| p.cmp_order(key, player) == Ordering::Less);
        (places.get(index).is_some_and(|p| &*p.player == player)).then_some(index)
    }

    /// Up to `limit` places from 0-based `start`.
    #[must_use]
    pub fn page(&self, order: Order, start: usize, limit: usize) -> &[Place] {
        let places = self.places(order);
        let start = start.min(places.len());
        &places[start..(start + limit).min(places.len())]
    }

    /// 0-based index of the first place after `(key, player)` in `order`, whether or not that
    /// player is still there: what a cursor resumes from.
    #[must_use]
    pub fn index_after(&self, order: Order, key: f64, player: &str) -> usize {
        self.places(order)
            .partition_point(|p| p.cmp_order(key, player) != Ordering::Greater)
    }
}

/// Drops the moved players from `places`, then merges their new places in; `key` turns
/// (μ, σ) into the rating `places` is sorted by.
fn merge(places: &mut Vec<Place>, moves: &[Move], key: impl Fn((f64, f64)) -> f64) {
    let mut leaving: Vec<usize> = moves
        .iter()
        .filter_map(|m| {
            let old = key(m.before?);
            let index = places.partition_point(|p| p.cmp_order(old, &m.player) == Ordering::Less);
            places
                .get(index)
                .is_some_and(|p| p.player == m.player)
                .then_some(index)
        })
        .collect();
    leaving.sort_unstable();
    let mut incoming: Vec<Place> = moves
        .iter()
        .map(|m| Place {
            key: key((m.mu, m.sigma)),
            player: Arc::clone(&m.player),
        })
        .collect();
    incoming.sort_by(|a, b| a.cmp_order(b.key, &b.player));
    let mut merged = Vec::with_capacity(places.len() - leaving.len() + incoming.len());
    let mut leaving = leaving.into_iter().peekable();
    let mut incoming = incoming.into_iter().peekable();
    for (index, place) in std::mem::take(places).into_iter().enumerate() {
        if leaving.next_if_eq(&index).is_some() {
            continue;
        }
        while let Some(next) =
            incoming.next_if(|n| place.cmp_order(n.key, &n.player) == Ordering::Greater)
        {
            merged.push(next);
        }
        merged.push(place);
    }
    merged.extend(incoming);
    *places = merged;
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn mv(player: &str, before: Option<(f64, f64)>, mu: f64, sigma: f64) -> Move {
        Move {
            player: Arc::from(player),
            before,
            mu,
            sigma,
        }
    }

    fn names(places: &[Place]) -> Vec<&str> {
        places.iter().map(|p| &*p.player).collect()
    }

    #[test]
    fn places_follow_the_rating_then_the_player_id() {
        let mut board = Leaderboard::default();
        board.update(&[
            mv("c", None, 1500.0, 100.0),
            mv("a", None, 1600.0, 300.0),
            mv("b", None, 1500.0, 50.0),
        ]);
        assert_eq!(names(board.page(Order::Mu, 0, 10)), ["a", "b", "c"]);
        assert_eq!(
            names(board.page(Order::Conservative, 0, 10)),
            ["b", "c", "a"]
        );
        board.update(&[mv("a", Some((1600.0, 300.0)), 1400.0, 300.0)]);
        assert_eq!(names(board.page(Order::Mu, 0, 10)), ["b", "c", "a"]);
        assert_eq!(board.index_of(Order::Mu, 1400.0, "a"), Some(2));
        assert_eq!(board.index_of(Order::Mu, 1600.0, "a"), None);
        assert_eq!(board.index_after(Order::Mu, 1500.0, "b"), 1);
        assert_eq!(
            board.index_after(Order::Mu, 1450.0, "x"),
            2,
            "a cursor outlives its player"
        );
    }

    proptest! {
        #[test]
        fn merging_rounds_of_changes_equals_sorting_from_scratch(
            rounds in prop::collection::vec(
                prop::collection::vec((0u8..40, -50i32..50, 1u8..5), 1..15), 1..20)
        ) {
            let mut board = Leaderboard::default();
            let mut current = std::collections::BTreeMap::new();
            for round in rounds {
                let mut seen = std::collections::HashSet::new();
                let moves: Vec<Move> = round
                    .into_iter()
                    .filter(|(p, _, _)| seen.insert(*p))
                    .map(|(p, mu, sigma)| {
                        let name = format!("p{p}");
                        let before = current.get(&name).copied();
                        mv(&name, before, f64::from(mu), f64::from(sigma))
                    })
                    .collect();
                for m in &moves {
                    current.insert(m.player.to_string(), (m.mu, m.sigma));
                }
                board.update(&moves);
            }
            for (order, key) in [
                (Order::Mu, (|mu: f64, _: f64| mu) as fn(f64, f64) -> f64),
                (Order::Conservative, conservative),
            ] {
                let mut expected: Vec<(f64, &str)> =
                    current.iter().map(|(p, &(mu, s))| (key(mu, s), p.as_str())).collect();
                expected.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
                let got: Vec<(f64, &str)> = board
                    .page(order, 0, usize::MAX)
                    .iter()
                    .map(|p| (p.key, &*p.player))
                    .collect();
                prop_assert_eq!(&got, &expected);
                for (i, (k, p)) in expected.iter().enumerate() {
                    prop_assert_eq!(board.index_of(order, *k, p), Some(i));
                }
            }
        }
    }
}
