//! A pool's players in rating order, by μ and by the conservative rating μ − kσ, as sorted
//! lists cut into chunks of a few hundred places that snapshots share: a player's position
//! is a binary search, a page is a slice, and a round's k changes copy only the chunks they
//! touch (copy on write), so the previous snapshot's lists stay as they were. A place holds
//! its player by number in a table of names the snapshots share, so that a chunk copies as
//! plain numbers. Each changed player's old place is found by binary search from their old
//! rating. When a pool has
//! provisional players, a second pair of lists holds the established players only, and when it
//! has leagues, one pair per league holds that league's players, so that their positions and
//! pages cost the same.
//! Knows nothing of HTTP or storage.

use std::cmp::Ordering;
use std::sync::Arc;

use crate::display::{Display, Extremes, Ranking, DEFAULT_CONSERVATIVE_K};
use crate::engine::Rating;

/// Places per chunk when a list is built; a chunk that grows to twice this is split, one that
/// empties is removed (chunks are never merged). Large enough that a list of a million places
/// has about 4,000 chunks (cloning the list clones that many pointers), small enough that
/// copying a chunk a round touches is cheap: 1,024 made a round of 1,000 entrants into a
/// million players twice as slow to publish (`cargo bench --bench hot_paths`).
const CHUNK: usize = 256;

/// Which rating a leaderboard is sorted by, highest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// μ.
    Mu,
    /// μ − kσ.
    Conservative,
}

impl Order {
    /// The order a read names: the display rating rises with μ, so its order is μ's.
    #[must_use]
    pub fn of(ranking: Ranking) -> Self {
        match ranking {
            Ranking::Mu | Ranking::DisplayRating => Self::Mu,
            Ranking::Conservative => Self::Conservative,
        }
    }

    /// The order and filter of `display`'s leaderboard when a read names neither.
    #[must_use]
    pub fn default_board(display: &Display) -> (Self, Filter) {
        let filter = if display.list_provisional {
            Filter::All
        } else {
            Filter::Established
        };
        (Self::of(display.default_ranking()), filter)
    }

    /// The k of the `μ − kσ` this order sorts by, `k` being the conservative rating's: 0 for
    /// μ's order.
    #[must_use]
    pub fn k(self, k: f64) -> f64 {
        match self {
            Self::Mu => 0.0,
            Self::Conservative => k,
        }
    }

    /// The key `rating` is sorted by in this order, `k` being the conservative rating's.
    #[must_use]
    pub fn key(self, k: f64, rating: Rating) -> f64 {
        match self {
            Self::Mu => rating.mu,
            Self::Conservative => rating.conservative(k),
        }
    }
}

/// Which players a leaderboard lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Filter {
    /// Every rated player.
    All,
    /// Players who are not provisional.
    Established,
    /// Players placed in the league of this index.
    League(u16),
}

/// Which lists a leaderboard keeps besides every player's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Kept {
    /// The established players apart (some players may be provisional).
    pub established: bool,
    /// Each of this many leagues' players apart.
    pub leagues: usize,
}

/// What a leaderboard sorts a player by.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Standing {
    /// The player's rating.
    pub rating: Rating,
    /// Whether the player is established (not provisional).
    pub established: bool,
    /// The index of the player's league, if they are placed in one.
    pub league: Option<u16>,
    /// When the player last played ([`minute`]).
    pub last: i32,
}

/// When a round took place as places keep it: minutes since the Unix epoch, floored (an `i32`
/// spans 4,000 years either side), and `i32::MAX` for a round without a time, whose players
/// count as active whatever the window (as the opponents' search counts them).
#[must_use]
pub fn minute(time: Option<i64>) -> i32 {
    let latest = i64::from(i32::MAX - 1);
    time.map_or(i32::MAX, |time| {
        time.div_euclid(60).clamp(i64::from(i32::MIN), latest) as i32
    })
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

/// Every player a leaderboard has listed, by the number its places hold them by. Shared by
/// snapshots and only ever appended to (a player keeps their number as they move), so that
/// copying a chunk of places copies plain numbers: chunks of `Arc<str>` spent half of a
/// round's publication counting references up as they were copied and down as the old
/// snapshot went (`perf` of `cargo bench --bench hot_paths -- publish`).
type Names = imbl::Vector<Arc<str>>;

/// A place as a list holds it: the key, the player by number in the leaderboard's [`Names`]
/// (2³² players are more than a pool could hold in memory), and when they last played, which
/// fits in the bytes the alignment of `key` leaves beside `id`.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Slot {
    key: f64,
    id: u32,
    last: i32,
}

impl Slot {
    /// Leaderboard order: higher key first, then player id ascending. The name is looked up in
    /// `names` only on a tie.
    fn cmp_order(self, names: &Names, key: f64, player: &str) -> Ordering {
        key.total_cmp(&self.key)
            .then_with(|| (*names[self.id as usize]).cmp(player))
    }
}

/// What one player's change looks like to the leaderboard.
#[derive(Debug, Clone)]
pub struct Move {
    /// The player.
    pub player: Arc<str>,
    /// The standing before the change; `None` for a player not yet on the leaderboard.
    pub before: Option<Standing>,
    /// The standing after the change.
    pub after: Standing,
}

/// Slots in order, in chunks shared with other snapshots. Every chunk is sorted and
/// non-empty, and each chunk's slots come before the next chunk's.
#[derive(Debug, Clone, Default)]
struct Places {
    chunks: Vec<Arc<Vec<Slot>>>,
    /// `starts[c]`: the slots before chunk `c`.
    starts: Vec<usize>,
    len: usize,
}

impl Places {
    const EMPTY: Self = Self {
        chunks: Vec::new(),
        starts: Vec::new(),
        len: 0,
    };

    fn from_sorted(slots: &[Slot]) -> Self {
        let mut list = Self {
            chunks: slots
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

    /// The chunk where the first slot for which `before` is false lies (or would go), and its
    /// index there; `before` must hold for a prefix of the slots only.
    fn locate(&self, before: impl Fn(Slot) -> bool) -> (usize, usize) {
        let chunk = self
            .chunks
            .partition_point(|c| c.last().is_some_and(|&slot| before(slot)));
        match self.chunks.get(chunk) {
            Some(slots) => (chunk, slots.partition_point(|&slot| before(slot))),
            None => (chunk, 0),
        }
    }

    /// The number of slots for which `before` holds.
    fn partition_point(&self, before: impl Fn(Slot) -> bool) -> usize {
        let (chunk, index) = self.locate(before);
        self.starts
            .get(chunk)
            .map_or(self.len, |start| start + index)
    }

    fn get(&self, index: usize) -> Option<Slot> {
        let chunk = self.starts.partition_point(|&start| start <= index);
        let chunk = chunk.checked_sub(1)?;
        self.chunks[chunk].get(index - self.starts[chunk]).copied()
    }

    /// The number of `player`'s slot, sorted at `key`, if it is there.
    fn find(&self, names: &Names, key: f64, player: &str) -> Option<u32> {
        let (chunk, index) = self.locate(|s| s.cmp_order(names, key, player) == Ordering::Less);
        let slot = self.chunks.get(chunk)?.get(index)?;
        (*names[slot.id as usize] == *player).then_some(slot.id)
    }

    /// Removes `slot`, of `player`, if it is there. Call [`Self::recount`] after.
    fn remove(&mut self, names: &Names, slot: Slot, player: &str) {
        let (chunk, index) =
            self.locate(|s| s.cmp_order(names, slot.key, player) == Ordering::Less);
        let Some(slots) = self.chunks.get_mut(chunk) else {
            return;
        };
        if slots.get(index).is_some_and(|s| s.id == slot.id) {
            let slots = Arc::make_mut(slots);
            slots.remove(index);
            if slots.is_empty() {
                self.chunks.remove(chunk);
            }
        }
    }

    /// Puts `slot`, of `player`, in order. Call [`Self::recount`] after.
    fn insert(&mut self, names: &Names, slot: Slot, player: &str) {
        let (mut chunk, mut index) =
            self.locate(|s| s.cmp_order(names, slot.key, player) == Ordering::Less);
        if chunk == self.chunks.len() {
            // After every slot: at the end of the last chunk.
            match self.chunks.len().checked_sub(1) {
                Some(last) => {
                    chunk = last;
                    index = self.chunks[last].len();
                }
                None => self.chunks.push(Arc::default()),
            }
        }
        let slots = Arc::make_mut(&mut self.chunks[chunk]);
        slots.insert(index, slot);
        if slots.len() >= 2 * CHUNK {
            let upper = slots.split_off(CHUNK);
            self.chunks.insert(chunk + 1, Arc::new(upper));
        }
    }

    /// Takes every slot of the players whose number `moved` marks out and puts `added` in, in
    /// one pass over the list: what [`Self::remove`] and [`Self::insert`] do slot by slot, for a
    /// round that moves at least one player per chunk. Slot by slot, each move searched the
    /// list and shifted half a chunk, and the round copied nearly every chunk anyway: importing
    /// the backfill bench's synthetic history (4,000-entrant rounds among 30,000 players) into
    /// SQLite, `Places::remove`, `find`, `insert` and their binary searches were 9% of the
    /// service's samples (`perf record -p`). The chunks are cut afresh.
    fn merge(&mut self, names: &Names, moved: &[bool], mut added: Vec<Slot>) {
        // Names are looked up only on a tie of keys: an index into `names` walks down a tree.
        let name = |slot: &Slot| &*names[slot.id as usize];
        let order = |a: &Slot, b: &Slot| b.key.total_cmp(&a.key).then_with(|| name(a).cmp(name(b)));
        added.sort_unstable_by(order);
        let mut merged = Vec::with_capacity(self.len + added.len());
        let mut added = added.into_iter().peekable();
        let kept = self
            .chunks
            .iter()
            .flat_map(|chunk| chunk.iter().copied())
            .filter(|slot| !moved.get(slot.id as usize).copied().unwrap_or(false));
        for slot in kept {
            while let Some(new) = added.next_if(|new| order(new, &slot).is_lt()) {
                merged.push(new);
            }
            merged.push(slot);
        }
        merged.extend(added);
        *self = Self::from_sorted(&merged);
    }

    /// Up to `limit` slots from 0-based `start`, in order.
    fn iter_from(&self, start: usize, limit: usize) -> impl Iterator<Item = Slot> + '_ {
        let chunk = self
            .starts
            .partition_point(|&s| s <= start)
            .saturating_sub(1);
        let skip = start.saturating_sub(self.starts.get(chunk).copied().unwrap_or(0));
        self.chunks[chunk.min(self.chunks.len())..]
            .iter()
            .flat_map(|c| c.iter().copied())
            .skip(skip)
            .take(limit)
    }
}

/// Some players in both orders.
#[derive(Debug, Clone, Default)]
struct Orders {
    by_mu: Places,
    by_conservative: Places,
}

impl Orders {
    /// The players of `standings` (by number in `names`) in both orders.
    fn from_standings(k: f64, names: &[Arc<str>], standings: &[(u32, Standing)]) -> Self {
        let sorted = |order: Order| {
            let mut slots: Vec<Slot> = standings
                .iter()
                .map(|&(id, standing)| Slot {
                    key: order.key(k, standing.rating),
                    id,
                    last: standing.last,
                })
                .collect();
            slots.sort_unstable_by(|a, b| {
                b.key
                    .total_cmp(&a.key)
                    .then_with(|| names[a.id as usize].cmp(&names[b.id as usize]))
            });
            Places::from_sorted(&slots)
        };
        Self {
            by_mu: sorted(Order::Mu),
            by_conservative: sorted(Order::Conservative),
        }
    }

    fn places(&self, order: Order) -> &Places {
        match order {
            Order::Mu => &self.by_mu,
            Order::Conservative => &self.by_conservative,
        }
    }

    /// Moves the players of `moves`, numbered `ids`, whose standing passes `listed`, and takes
    /// out those who passed it before and no longer do: slot by slot, or in one pass over a
    /// list that has no more chunks than the round has moves ([`Places::merge`]).
    fn relocate(
        &mut self,
        k: f64,
        names: &Names,
        moves: &[Move],
        ids: &[u32],
        moved: &mut Option<Vec<bool>>,
        listed: impl Fn(&Standing) -> bool,
    ) {
        for (order, places) in [
            (Order::Mu, &mut self.by_mu),
            (Order::Conservative, &mut self.by_conservative),
        ] {
            if moves.len() * CHUNK >= places.len {
                let added = moves
                    .iter()
                    .zip(ids)
                    .filter(|(m, _)| listed(&m.after))
                    .map(|(m, &id)| Slot {
                        key: order.key(k, m.after.rating),
                        id,
                        last: m.after.last,
                    })
                    .collect();
                let moved = moved.get_or_insert_with(|| {
                    let mut marks = vec![false; names.len()];
                    for &id in ids {
                        marks[id as usize] = true;
                    }
                    marks
                });
                places.merge(names, moved, added);
                continue;
            }
            for (m, &id) in moves.iter().zip(ids) {
                if let Some(before) = m.before.filter(&listed) {
                    let key = order.key(k, before.rating);
                    let last = before.last;
                    places.remove(names, Slot { key, id, last }, &m.player);
                }
            }
            for (m, &id) in moves.iter().zip(ids) {
                if listed(&m.after) {
                    let key = order.key(k, m.after.rating);
                    let last = m.after.last;
                    places.insert(names, Slot { key, id, last }, &m.player);
                }
            }
            places.recount();
        }
    }
}

/// Every rated player of a pool, in both orders, the established ones apart when some are
/// provisional, and each league's apart. Cloning copies one pointer per chunk.
#[derive(Debug, Clone)]
pub struct Leaderboard {
    /// `k` of the conservative order.
    k: f64,
    /// Every player listed, by the number the lists hold them by.
    names: Names,
    all: Orders,
    /// The established players; `None` when every player is.
    established: Option<Orders>,
    /// Each league's players, lowest league first.
    leagues: Vec<Orders>,
}

impl Default for Leaderboard {
    fn default() -> Self {
        Self::new(DEFAULT_CONSERVATIVE_K, Kept::default())
    }
}

impl Leaderboard {
    /// An empty leaderboard whose conservative order is μ − `k`σ, keeping the lists `kept`
    /// says apart.
    #[must_use]
    pub fn new(k: f64, kept: Kept) -> Self {
        Self::from_players(k, kept, std::iter::empty())
    }

    /// Like [`Self::new`], holding `(player, standing)`, each player once. O(n log n).
    pub fn from_players(
        k: f64,
        kept: Kept,
        players: impl Iterator<Item = (Arc<str>, Standing)>,
    ) -> Self {
        let (names, standings): (Vec<Arc<str>>, Vec<Standing>) = players.unzip();
        let orders = |keep: &dyn Fn(&Standing) -> bool| {
            let listed: Vec<(u32, Standing)> = (0u32..)
                .zip(standings.iter().copied())
                .filter(|(_, standing)| keep(standing))
                .collect();
            Orders::from_standings(k, &names, &listed)
        };
        Self {
            k,
            all: orders(&|_| true),
            established: kept
                .established
                .then(|| orders(&|standing| standing.established)),
            leagues: (0..kept.leagues)
                .map(|league| orders(&|standing| standing.league == Some(league as u16)))
                .collect(),
            names: Names::from(names),
        }
    }

    /// Players rated so far.
    #[must_use]
    pub fn len(&self) -> usize {
        self.all.by_mu.len
    }

    /// Whether nobody is rated.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The highest and the lowest μ of every player listed; `None` with nobody.
    #[must_use]
    pub fn extremes(&self) -> Option<Extremes> {
        let by_mu = self.all.places(Order::Mu);
        let last = by_mu.len.checked_sub(1)?;
        let top = by_mu.iter_from(0, 1).next()?.key;
        let bottom = by_mu.iter_from(last, 1).next()?.key;
        Some(Extremes { top, bottom })
    }

    /// Players that `filter` lists.
    #[must_use]
    pub fn count(&self, filter: Filter) -> usize {
        self.orders(filter).by_mu.len
    }

    fn orders(&self, filter: Filter) -> &Orders {
        static NOBODY: Orders = Orders {
            by_mu: Places::EMPTY,
            by_conservative: Places::EMPTY,
        };
        match (filter, &self.established) {
            (Filter::Established, Some(established)) => established,
            (Filter::League(league), _) => self.leagues.get(usize::from(league)).unwrap_or(&NOBODY),
            _ => &self.all,
        }
    }

    /// Moves every player of `moves` (new or not) to their new place.
    pub fn update(&mut self, moves: &[Move]) {
        let k = self.k;
        // A player keeps the number their place holds; one not listed yet gets the next.
        let ids: Vec<u32> = moves
            .iter()
            .map(|m| {
                let listed = m.before.and_then(|before| {
                    let key = Order::Mu.key(k, before.rating);
                    self.all.by_mu.find(&self.names, key, &m.player)
                });
                listed.unwrap_or_else(|| {
                    let id = u32::try_from(self.names.len()).expect("fewer than 2^32 players");
                    self.names.push_back(Arc::clone(&m.player));
                    id
                })
            })
            .collect();
        let names = &self.names;
        // Which players moved, by number: made by the first list merged in one pass.
        let mut moved = None;
        self.all
            .relocate(k, names, moves, &ids, &mut moved, |_| true);
        if let Some(established) = &mut self.established {
            established.relocate(k, names, moves, &ids, &mut moved, |standing| {
                standing.established
            });
        }
        for (league, orders) in self.leagues.iter_mut().enumerate() {
            let league = Some(league as u16);
            if moves
                .iter()
                .any(|m| m.after.league == league || m.before.is_some_and(|b| b.league == league))
            {
                orders.relocate(k, names, moves, &ids, &mut moved, |standing| {
                    standing.league == league
                });
            }
        }
    }

    /// 0-based index among those `filter` lists of the player whose key in `order` is `key`;
    /// `None` if they are not there.
    #[must_use]
    pub fn index_of(&self, order: Order, filter: Filter, key: f64, player: &str) -> Option<usize> {
        let (places, names) = (self.orders(filter).places(order), &self.names);
        let index = places.partition_point(|s| s.cmp_order(names, key, player) == Ordering::Less);
        let slot = places.get(index)?;
        (*names[slot.id as usize] == *player).then_some(index)
    }

    /// 0-based index among those `filter` lists of `player`, rated `rating`; `None` if they
    /// are not there.
    #[must_use]
    pub fn position_of(
        &self,
        order: Order,
        filter: Filter,
        rating: Rating,
        player: &str,
    ) -> Option<usize> {
        self.index_of(order, filter, order.key(self.k, rating), player)
    }

    /// Up to `limit` places from 0-based `start`.
    pub fn page(
        &self,
        order: Order,
        filter: Filter,
        start: usize,
        limit: usize,
    ) -> impl Iterator<Item = Place> + '_ {
        self.orders(filter)
            .places(order)
            .iter_from(start, limit)
            .map(|slot| Place {
                key: slot.key,
                player: Arc::clone(&self.names[slot.id as usize]),
            })
    }

    /// How many of those `filter` lists have a key of at least `key` in `order`: a binary
    /// search, O(log n).
    #[must_use]
    pub fn count_at_least(&self, order: Order, filter: Filter, key: f64) -> usize {
        self.orders(filter)
            .places(order)
            .partition_point(|s| s.key >= key)
    }

    /// 0-based index of `(key, player)` in `order`, or of where it would be: the places
    /// before it, whether or not that player is still there. What a page before a cursor ends
    /// at.
    #[must_use]
    pub fn index_before(&self, order: Order, filter: Filter, key: f64, player: &str) -> usize {
        let names = &self.names;
        self.orders(filter)
            .places(order)
            .partition_point(|s| s.cmp_order(names, key, player) == Ordering::Less)
    }

    /// 0-based index of the first place after `(key, player)` in `order`, whether or not that
    /// player is still there: what a cursor resumes from.
    #[must_use]
    pub fn index_after(&self, order: Order, filter: Filter, key: f64, player: &str) -> usize {
        let names = &self.names;
        self.orders(filter)
            .places(order)
            .partition_point(|s| s.cmp_order(names, key, player) != Ordering::Greater)
    }

    /// The places of `order` that `filter` lists, those of players who last played within
    /// `active_days` days of the newest round of any player listed here (to the minute) when
    /// given: O(1) without it, one pass over the places with it, O(n).
    #[must_use]
    pub fn listing(&self, order: Order, filter: Filter, active_days: Option<f64>) -> Listing<'_> {
        let places = self.orders(filter).places(order);
        let active = active_days.map(|days| {
            let newest = self
                .all
                .by_mu
                .chunks
                .iter()
                .flat_map(|chunk| chunk.iter())
                .map(|slot| slot.last)
                .filter(|&last| last != i32::MAX)
                .max();
            let since = newest.map_or(i64::MIN, |newest| {
                i64::from(newest) - (days * 1_440.0).ceil() as i64
            });
            (0u32..)
                .zip(places.chunks.iter().flat_map(|chunk| chunk.iter()))
                .filter(|(_, slot)| i64::from(slot.last) >= since)
                .map(|(index, _)| index)
                .collect()
        });
        Listing {
            board: self,
            order,
            filter,
            active,
        }
    }
}

/// The places a read of one order and filter pages through ([`Leaderboard::listing`]): every
/// place, or the active players' only, indices counting those listed.
#[derive(Debug)]
pub struct Listing<'a> {
    board: &'a Leaderboard,
    order: Order,
    filter: Filter,
    /// The indices among every place of those listed, when not every place is.
    active: Option<Vec<u32>>,
}

impl Listing<'_> {
    /// Places listed.
    #[must_use]
    pub fn len(&self) -> usize {
        match &self.active {
            Some(active) => active.len(),
            None => self.board.count(self.filter),
        }
    }

    /// Whether no place is listed.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The index among those listed of the first listed at or after `index` among every place.
    fn listed_from(&self, index: usize) -> usize {
        match &self.active {
            Some(active) => active.partition_point(|&i| (i as usize) < index),
            None => index,
        }
    }

    /// What a cursor resumes from: the index of the first place listed after `(key, player)`.
    #[must_use]
    pub fn index_after(&self, key: f64, player: &str) -> usize {
        let index = self.board.index_after(self.order, self.filter, key, player);
        self.listed_from(index)
    }

    /// What a page before a cursor ends at: the places listed before `(key, player)`.
    #[must_use]
    pub fn index_before(&self, key: f64, player: &str) -> usize {
        let index = self
            .board
            .index_before(self.order, self.filter, key, player);
        self.listed_from(index)
    }

    /// The index of `player`, rated `rating`, among those listed; `None` if not listed.
    #[must_use]
    pub fn position_of(&self, rating: Rating, player: &str) -> Option<usize> {
        let index = self
            .board
            .position_of(self.order, self.filter, rating, player)?;
        let listed = self.listed_from(index);
        match &self.active {
            Some(active) => (active.get(listed) == Some(&(index as u32))).then_some(listed),
            None => Some(listed),
        }
    }

    /// Up to `limit` places listed from 0-based `start`.
    #[must_use]
    pub fn page(&self, start: usize, limit: usize) -> Vec<Place> {
        let board = self.board;
        let place = |slot: Slot| Place {
            key: slot.key,
            player: Arc::clone(&board.names[slot.id as usize]),
        };
        let places = board.orders(self.filter).places(self.order);
        match &self.active {
            None => places.iter_from(start, limit).map(place).collect(),
            Some(active) => active
                .iter()
                .skip(start)
                .take(limit)
                .filter_map(|&index| places.get(index as usize).map(place))
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn standing((mu, sigma): (f64, f64)) -> Standing {
        Standing {
            rating: Rating {
                mu,
                sigma: Some(sigma),
            },
            established: sigma < 100.0,
            league: Some(u16::from(mu >= 0.0)),
            // Ten minutes a point of μ, so that the better played last; no time above σ 140.
            last: if sigma > 140.0 {
                i32::MAX
            } else {
                mu as i32 * 10
            },
        }
    }

    fn mv(player: &str, before: Option<(f64, f64)>, mu: f64, sigma: f64) -> Move {
        Move {
            player: Arc::from(player),
            before: before.map(standing),
            after: standing((mu, sigma)),
        }
    }

    fn names(places: impl Iterator<Item = Place>) -> Vec<String> {
        places.map(|p| p.player.to_string()).collect()
    }

    #[test]
    fn places_follow_the_rating_then_the_player_id() {
        let mut board = Leaderboard::default();
        board.update(&[
            mv("c", None, 1500.0, 100.0),
            mv("a", None, 1600.0, 300.0),
            mv("b", None, 1500.0, 50.0),
        ]);
        assert_eq!(
            names(board.page(Order::Mu, Filter::All, 0, 10)),
            ["a", "b", "c"]
        );
        assert_eq!(
            names(board.page(Order::Conservative, Filter::All, 0, 10)),
            ["b", "c", "a"]
        );
        board.update(&[mv("a", Some((1600.0, 300.0)), 1400.0, 300.0)]);
        assert_eq!(
            names(board.page(Order::Mu, Filter::All, 0, 10)),
            ["b", "c", "a"]
        );
        assert_eq!(board.index_of(Order::Mu, Filter::All, 1400.0, "a"), Some(2));
        assert_eq!(board.index_of(Order::Mu, Filter::All, 1600.0, "a"), None);
        assert_eq!(board.index_after(Order::Mu, Filter::All, 1500.0, "b"), 1);
        assert_eq!(
            board.index_after(Order::Mu, Filter::All, 1450.0, "x"),
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
            let fresh = Leaderboard::from_players(
                DEFAULT_CONSERVATIVE_K,
                Kept::default(),
                current
                    .iter()
                    .map(|(p, &rating)| (Arc::from(p.as_str()), standing(rating))),
            );
            for order in [Order::Mu, Order::Conservative] {
                let got: Vec<Place> = board.page(order, Filter::All, 0, usize::MAX).collect();
                let want: Vec<Place> = fresh.page(order, Filter::All, 0, usize::MAX).collect();
                assert_eq!(got, want, "round {round}, {order:?}");
                let middle: Vec<Place> = board.page(order, Filter::All, 2_345, 7).collect();
                assert_eq!(middle, &want[2_345.min(want.len())..2_352.min(want.len())]);
                for (i, place) in want.iter().enumerate().step_by(97) {
                    assert_eq!(
                        board.index_of(order, Filter::All, place.key, &place.player),
                        Some(i)
                    );
                }
            }
            assert_eq!(board.len(), current.len());
            assert_eq!(
                board.names.len(),
                current.len(),
                "a player who moves keeps their number"
            );
            let kept: Vec<Place> = snapshot
                .page(Order::Mu, Filter::All, 0, usize::MAX)
                .collect();
            assert_eq!(
                kept, previous,
                "round {round}: the snapshot taken before is unchanged"
            );
            previous = board.page(Order::Mu, Filter::All, 0, usize::MAX).collect();
        }
    }

    #[test]
    fn a_rounds_minute_is_floored_and_a_round_without_a_time_is_always_active() {
        assert_eq!(minute(Some(0)), 0);
        assert_eq!(minute(Some(59)), 0);
        assert_eq!(minute(Some(-1)), -1, "before 1970, floored");
        assert_eq!(minute(Some(-631_152_000)), -10_519_200, "1950");
        assert_eq!(minute(None), i32::MAX);
        assert_eq!(minute(Some(i64::MAX)), i32::MAX - 1, "timed, however far");
        assert_eq!(minute(Some(i64::MIN)), i32::MIN);
    }

    proptest! {
        #[test]
        fn a_merge_in_one_pass_leaves_the_list_that_moving_slot_by_slot_leaves(
            listed in prop::collection::btree_map(0u32..3_000, -40i32..40, 0..1_500),
            moves in prop::collection::btree_map(0u32..3_500, prop::option::of(-40i32..40), 0..400),
        ) {
            let names: Names = (0..3_500).map(|i| Arc::from(format!("p{i:04}"))).collect();
            let slot = |id: u32, key: i32| Slot { key: f64::from(key), id, last: key };
            let mut slots: Vec<Slot> = listed.iter().map(|(&id, &key)| slot(id, key)).collect();
            slots.sort_by(|a, b| {
                b.key.total_cmp(&a.key).then_with(|| names[a.id as usize].cmp(&names[b.id as usize]))
            });
            let before = Places::from_sorted(&slots);
            let mut one_by_one = before.clone();
            for &id in moves.keys() {
                if let Some(&key) = listed.get(&id) {
                    one_by_one.remove(&names, slot(id, key), &names[id as usize]);
                }
            }
            let added: Vec<Slot> = moves
                .iter()
                .filter_map(|(&id, &key)| key.map(|key| slot(id, key)))
                .collect();
            for &new in &added {
                one_by_one.insert(&names, new, &names[new.id as usize]);
            }
            one_by_one.recount();
            let mut merged = before.clone();
            let moved: Vec<bool> = (0..3_500).map(|id| moves.contains_key(&id)).collect();
            merged.merge(&names, &moved, added);
            let all = |places: &Places| places.iter_from(0, usize::MAX).collect::<Vec<Slot>>();
            prop_assert_eq!(all(&merged), all(&one_by_one));
            prop_assert_eq!(merged.len, one_by_one.len);
            prop_assert_eq!(all(&before), slots, "the list merged from is unchanged");
        }

        #[test]
        fn merging_rounds_of_changes_equals_sorting_from_scratch(
            k in 0.0f64..4.0,
            rounds in prop::collection::vec(
                prop::collection::vec((0u8..40, -50i32..50, 50u8..150), 1..15), 1..20)
        ) {
            let kept = Kept { established: true, leagues: 2 };
            let mut board = Leaderboard::new(k, kept);
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
                    let rating = m.after.rating;
                    current.insert(m.player.to_string(), (rating.mu, rating.sigma.unwrap_or_default()));
                }
                board.update(&moves);
            }
            for order in [Order::Mu, Order::Conservative] {
                for filter in [Filter::All, Filter::Established, Filter::League(0), Filter::League(1)] {
                    let mut expected: Vec<(f64, &str)> = current
                        .iter()
                        .map(|(p, &rating)| (standing(rating), p.as_str()))
                        .filter(|(s, _)| match filter {
                            Filter::All => true,
                            Filter::Established => s.established,
                            Filter::League(league) => s.league == Some(league),
                        })
                        .map(|(s, p)| (order.key(k, s.rating), p))
                        .collect();
                    expected.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
                    let got: Vec<(f64, String)> = board
                        .page(order, filter, 0, usize::MAX)
                        .map(|p| (p.key, p.player.to_string()))
                        .collect();
                    let expected_owned: Vec<(f64, String)> =
                        expected.iter().map(|&(key, p)| (key, p.to_owned())).collect();
                    prop_assert_eq!(&got, &expected_owned);
                    prop_assert_eq!(board.count(filter), expected.len());
                    for (i, (key, p)) in expected.iter().enumerate() {
                        prop_assert_eq!(board.index_of(order, filter, *key, p), Some(i));
                    }
                    let newest = current
                        .values()
                        .map(|&rating| standing(rating).last)
                        .filter(|&last| last != i32::MAX)
                        .max();
                    for days in [0.05, 0.2, 1.0] {
                        let since = newest.map_or(i64::MIN, |n| i64::from(n) - (days * 1_440.0f64).ceil() as i64);
                        let active: Vec<(f64, String)> = expected_owned
                            .iter()
                            .filter(|(_, p)| i64::from(standing(current[p]).last) >= since)
                            .cloned()
                            .collect();
                        let listing = board.listing(order, filter, Some(days));
                        let got: Vec<(f64, String)> = listing
                            .page(0, usize::MAX)
                            .into_iter()
                            .map(|p| (p.key, p.player.to_string()))
                            .collect();
                        prop_assert_eq!(&got, &active, "{} days", days);
                        prop_assert_eq!(listing.len(), active.len());
                        for (i, (key, p)) in active.iter().enumerate() {
                            let rating = standing(current[p]).rating;
                            prop_assert_eq!(listing.position_of(rating, p), Some(i));
                            prop_assert_eq!(listing.index_after(*key, p), i + 1);
                            prop_assert_eq!(listing.index_before(*key, p), i);
                            let page = listing.page(i, 2);
                            prop_assert_eq!(&*page[0].player, p.as_str());
                        }
                        for (key, p) in &expected_owned {
                            if !active.iter().any(|(_, a)| a == p) {
                                let rating = standing(current[p]).rating;
                                prop_assert_eq!(listing.position_of(rating, p), None);
                                let after = listing.index_after(*key, p);
                                prop_assert_eq!(after, listing.index_before(*key, p));
                            }
                        }
                    }
                }
            }
        }
    }
}
