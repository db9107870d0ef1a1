//! A pool's players in rating order, by μ and by the conservative rating μ − 3σ, as sorted
//! lists cut into chunks of a few hundred places that snapshots share: a player's position
//! is a binary search, a page is a slice, and a round's k changes copy only the chunks they
//! touch (copy on write), so the previous snapshot's lists stay as they were. Each changed
//! player's old place is found by binary search from their old rating.
//! Knows nothing of HTTP or storage.

use std::cmp::Ordering;
use std::sync::Arc;

use crate::engine::Rating;

/// Places per chunk when a list is built; a chunk that grows to twice this is split, one that
/// empties is removed (chunks are never merged). Large enough that a list of a million places
/// has about 4,000 chunks (cloning the list clones that many pointers), small enough that
/// copying a chunk a round touches is cheap: 1,024 made a round of 1,000 entrants into a
/// million players twice as slow to publish (`cargo bench --bench hot_paths`).
const CHUNK: usize = 256;

/// How many standard deviations the conservative rating lies below μ.
pub const CONSERVATIVE_SIGMAS: f64 = 3.0;

/// The conservative rating μ − 3σ: a player is very probably at least this good.
#[must_use]
pub fn conservative(rating: Rating) -> f64 {
    rating.conservative(CONSERVATIVE_SIGMAS)
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
    /// The rating before the change; `None` for a player not yet on the leaderboard.
    pub before: Option<Rating>,
    /// The rating after the change.
    pub after: Rating,
}

/// Places in order, in chunks shared with other snapshots. Every chunk is sorted and
/// non-empty, and each chunk's places come before the next chunk's.
#[derive(Debug, Clone, Default)]
struct Places {
    chunks: Vec<Arc<Vec<Place>>>,
    /// `starts[c]`: the places before chunk `c`.
    starts: Vec<usize>,
    len: usize,
}

impl Places {
    fn from_sorted(places: Vec<Place>) -> Self {
        let mut list = Self {
            chunks: places
                .chunks(CHUNK)
                .map(|chunk| Arc::new(chunk.to_vec()))
                .collect(),
            ..Self::default()
        };
        list.recount();
        list
    }

    fn recount(&mut self) {
        self.starts.clear();
        let mut len = 0;
        for chunk in &self.chunks {
            self.starts.push(len);
            len += chunk.len();
        }
        self.len = len;
    }

    /// The chunk where the first place for which `before` is false lies (or would go), and its
    /// index there; `before` must hold for a prefix of the places only.
    fn locate(&self, before: impl Fn(&Place) -> bool) -> (usize, usize) {
        let chunk = self
            .chunks
            .partition_point(|c| c.last().is_some_and(&before));
        match self.chunks.get(chunk) {
            Some(places) => (chunk, places.partition_point(before)),
            None => (chunk, 0),
        }
    }

    /// The number of places for which `before` holds.
    fn partition_point(&self, before: impl Fn(&Place) -> bool) -> usize {
        let (chunk, index) = self.locate(before);
        self.starts
            .get(chunk)
            .map_or(self.len, |start| start + index)
    }

    fn get(&self, index: usize) -> Option<&Place> {
        let chunk = self.starts.partition_point(|&start| start <= index);
        let chunk = chunk.checked_sub(1)?;
        self.chunks[chunk].get(index - self.starts[chunk])
    }

    /// Removes `player`'s place sorted at `key`, if it is there. Call [`Self::recount`] after.
    fn remove(&mut self, key: f64, player: &str) {
        let (chunk, index) = self.locate(|p| p.cmp_order(key, player) == Ordering::Less);
        let Some(places) = self.chunks.get_mut(chunk) else {
            return;
        };
        if places.get(index).is_some_and(|p| &*p.player == player) {
            let places = Arc::make_mut(places);
            places.remove(index);
            if places.is_empty() {
                self.chunks.remove(chunk);
            }
        }
    }

    /// Puts `place` in order. Call [`Self::recount`] after.
    fn insert(&mut self, place: Place) {
        let (mut chunk, mut index) =
            self.locate(|p| p.cmp_order(place.key, &place.player) == Ordering::Less);
        if chunk == self.chunks.len() {
            // After every place: at the end of the last chunk.
            match self.chunks.len().checked_sub(1) {
                Some(last) => {
                    chunk = last;
                    index = self.chunks[last].len();
                }
                None => self.chunks.push(Arc::default()),
            }
        }
        let places = Arc::make_mut(&mut self.chunks[chunk]);
        places.insert(index, place);
        if places.len() >= 2 * CHUNK {
            let upper = places.split_off(CHUNK);
            self.chunks.insert(chunk + 1, Arc::new(upper));
        }
    }

    /// Up to `limit` places from 0-based `start`, in order.
    fn iter_from(&self, start: usize, limit: usize) -> impl Iterator<Item = &Place> {
        let chunk = self
            .starts
            .partition_point(|&s| s <= start)
            .saturating_sub(1);
        let skip = start.saturating_sub(self.starts.get(chunk).copied().unwrap_or(0));
        self.chunks[chunk.min(self.chunks.len())..]
            .iter()
            .flat_map(|c| c.iter())
            .skip(skip)
            .take(limit)
    }
}

/// Every rated player of a pool, in both orders. Cloning copies one pointer per chunk.
#[derive(Debug, Clone, Default)]
pub struct Leaderboard {
    by_mu: Places,
    by_conservative: Places,
}

impl Leaderboard {
    /// The leaderboard of `(player, rating)`, each player once. O(n log n).
    pub fn from_players(players: impl Iterator<Item = (Arc<str>, Rating)>) -> Self {
        let (mut by_mu, mut by_conservative): (Vec<Place>, Vec<Place>) = players
            .map(|(player, rating)| {
                let cons = Place {
                    key: conservative(rating),
                    player: Arc::clone(&player),
                };
                let mu = Place {
                    key: rating.mu,
                    player,
                };
                (mu, cons)
            })
            .unzip();
        for places in [&mut by_mu, &mut by_conservative] {
            places.sort_unstable_by(|a, b| a.cmp_order(b.key, &b.player));
        }
        Self {
            by_mu: Places::from_sorted(by_mu),
            by_conservative: Places::from_sorted(by_conservative),
        }
    }

    /// Players rated so far.
    #[must_use]
    pub fn len(&self) -> usize {
        self.by_mu.len
    }

    /// Whether nobody is rated.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.by_mu.len == 0
    }

    fn places(&self, order: Order) -> &Places {
        match order {
            Order::Mu => &self.by_mu,
            Order::Conservative => &self.by_conservative,
        }
    }

    /// Moves every player of `moves` (new or not) to their new place.
    pub fn update(&mut self, moves: &[Move]) {
        relocate(&mut self.by_mu, moves, |rating| rating.mu);
        relocate(&mut self.by_conservative, moves, conservative);
    }

    /// 0-based index of the player whose key in `order` is `key`; `None` if they are not there.
    #[must_use]
    pub fn index_of(&self, order: Order, key: f64, player: &str) -> Option<usize> {
        let places = self.places(order);
        let index = places.partition_point(|p| p.cmp_order(key, player) == Ordering::Less);
        (places.get(index).is_some_and(|p| &*p.player == player)).then_some(index)
    }

    /// Up to `limit` places from 0-based `start`.
    pub fn page(&self, order: Order, start: usize, limit: usize) -> impl Iterator<Item = &Place> {
        self.places(order).iter_from(start, limit)
    }

    /// 0-based index of the first place after `(key, player)` in `order`, whether or not that
    /// player is still there: what a cursor resumes from.
    #[must_use]
    pub fn index_after(&self, order: Order, key: f64, player: &str) -> usize {
        self.places(order)
            .partition_point(|p| p.cmp_order(key, player) != Ordering::Greater)
    }
}

/// Takes the moved players out of `places`, then puts each back at their new place; `key`
/// gives the rating `places` is sorted by.
fn relocate(places: &mut Places, moves: &[Move], key: impl Fn(Rating) -> f64) {
    for m in moves {
        if let Some(before) = m.before {
            places.remove(key(before), &m.player);
        }
    }
    for m in moves {
        places.insert(Place {
            key: key(m.after),
            player: Arc::clone(&m.player),
        });
    }
    places.recount();
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn mv(player: &str, before: Option<(f64, f64)>, mu: f64, sigma: f64) -> Move {
        let rating = |(mu, sigma)| Rating {
            mu,
            sigma: Some(sigma),
        };
        Move {
            player: Arc::from(player),
            before: before.map(rating),
            after: rating((mu, sigma)),
        }
    }

    fn names<'a>(places: impl Iterator<Item = &'a Place>) -> Vec<&'a str> {
        places.map(|p| &*p.player).collect()
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

    #[test]
    fn thousands_of_moves_across_many_chunks_keep_the_order_of_a_fresh_sort() {
        const PLAYERS: u64 = 5_000;
        let mut seed = 0x1ead_u64;
        let mut next = move || {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            seed >> 33
        };
        let mut current = std::collections::BTreeMap::new();
        let mut board = Leaderboard::default();
        let mut previous: Vec<Place> = Vec::new();
        for round in 0..12 {
            let moves: Vec<Move> = (0..1_500)
                .map(|_| format!("p{}", next() % PLAYERS))
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .map(|name| {
                    let before = current.get(&name).copied();
                    let (mu, sigma) = ((next() % 3_000) as f64, (next() % 300 + 1) as f64);
                    current.insert(name.clone(), (mu, sigma));
                    mv(&name, before, mu, sigma)
                })
                .collect();
            let snapshot = board.clone();
            board.update(&moves);
            let fresh = Leaderboard::from_players(current.iter().map(|(p, &(mu, sigma))| {
                (
                    Arc::from(p.as_str()),
                    Rating {
                        mu,
                        sigma: Some(sigma),
                    },
                )
            }));
            for order in [Order::Mu, Order::Conservative] {
                let got: Vec<&Place> = board.page(order, 0, usize::MAX).collect();
                let want: Vec<&Place> = fresh.page(order, 0, usize::MAX).collect();
                assert_eq!(got, want, "round {round}, {order:?}");
                let middle: Vec<&Place> = board.page(order, 2_345, 7).collect();
                assert_eq!(middle, &want[2_345.min(want.len())..2_352.min(want.len())]);
                for (i, place) in want.iter().enumerate().step_by(97) {
                    assert_eq!(board.index_of(order, place.key, &place.player), Some(i));
                }
            }
            assert_eq!(board.len(), current.len());
            let kept: Vec<Place> = snapshot.page(Order::Mu, 0, usize::MAX).cloned().collect();
            assert_eq!(
                kept, previous,
                "round {round}: the snapshot taken before is unchanged"
            );
            previous = board.page(Order::Mu, 0, usize::MAX).cloned().collect();
        }
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
                    current.insert(m.player.to_string(), (m.after.mu, m.after.sigma.unwrap_or_default()));
                }
                board.update(&moves);
            }
            for (order, key) in [
                (Order::Mu, (|mu: f64, _: f64| mu) as fn(f64, f64) -> f64),
                (Order::Conservative, |mu, sigma| conservative(Rating { mu, sigma: Some(sigma) })),
            ] {
                let mut expected: Vec<(f64, &str)> =
                    current.iter().map(|(p, &(mu, s))| (key(mu, s), p.as_str())).collect();
                expected.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
                let got: Vec<(f64, &str)> = board
                    .page(order, 0, usize::MAX)
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
