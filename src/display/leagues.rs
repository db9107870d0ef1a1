//! Leagues and divisions (docs/display.md, "Leagues"): an ordered list of leagues with rating
//! thresholds, entered by placement, left by promotion when the conservative rating μ − kσ
//! reaches a higher league's threshold, and by demotion only when the optimistic rating μ + kσ
//! falls below the player's own league's threshold, so a player near a threshold does not
//! bounce between two leagues. Inside a league, players sit in divisions of at most
//! `division_size`, filled in order of arrival.
//!
//! Unlike the rest of the display settings, a player's league depends on the order of their
//! rounds, not only on their rating now: it is state, changed only when a round is applied,
//! by [`LeagueTable::settle`]. The same fold over the same rounds gives the same leagues, which
//! is how the service, `replay` and a recomputation from history rows agree. Pure: no I/O.

use std::sync::Arc;

use imbl::{HashMap, OrdSet, Vector};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::InvalidDisplay;
use crate::engine::Rating;

/// Most leagues a pool may have.
pub const MAX_LEAGUES: usize = 64;

/// Longest league name, in bytes.
pub const MAX_LEAGUE_NAME: usize = 64;

/// A pool's leagues.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Leagues {
    /// `k` of μ − kσ (promotion and placement) and μ + kσ (demotion): 0 to 100, default 3
    /// (the SC2 ladder's 99% confidence).
    #[serde(default = "default_k")]
    #[schema(minimum = 0.0, maximum = 100.0, example = 3.0)]
    pub k: f64,
    /// Rounds a player plays before being placed in a league (default 0: placed after their
    /// first round).
    #[serde(default)]
    pub placement_rounds: u64,
    /// Most players in one division (default 100).
    #[serde(default = "default_division_size")]
    #[schema(minimum = 1, example = 100)]
    pub division_size: u32,
    /// The leagues, lowest first: 1 to 64, names unique.
    #[schema(min_items = 1, max_items = 64)]
    pub tiers: Vec<Tier>,
    /// Ladder points inside each league; absent or `null` for none.
    #[serde(default)]
    pub points: Option<Points>,
}

/// Ladder points (docs/display.md, "Ladder points"): after each round a placed player's points
/// move by an Elo-like rule that compares their points plus their league's threshold with their
/// opponents' ratings, doubled while their bonus pool lasts; they restart at 0 in a new league.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Points {
    /// Points a round moves at most (Elo's K): above 0 and at most 1,000; default 32.
    #[serde(default = "default_points_k")]
    #[schema(example = 32.0)]
    pub k: f64,
    /// Rating points per factor of 10 in the odds (Elo's 400): above 0; default 400.
    #[serde(default = "default_points_scale")]
    #[schema(example = 400.0)]
    pub scale: f64,
    /// What the lowest league, which has no threshold, adds to its players' points: default 0.
    #[serde(default)]
    pub lowest_floor: f64,
    /// Bonus points every player's pool gains per day of the round clock (rounds' `time`)
    /// after `bonus_since`; default 0, no bonus.
    #[serde(default)]
    pub bonus_per_day: f64,
    /// When the bonus pool starts filling (RFC 3339); absent for no bonus.
    #[serde(default)]
    #[schema(example = "2026-01-01T00:00:00Z", format = DateTime)]
    pub bonus_since: Option<String>,
}

fn default_points_k() -> f64 {
    32.0
}

fn default_points_scale() -> f64 {
    400.0
}

impl Points {
    /// The bonus every player's pool has gained by `time` (seconds since the Unix epoch):
    /// 0 without a time, a start or a rate.
    fn accrued(&self, time: Option<i64>) -> f64 {
        let since = self.bonus_since.as_deref().and_then(|s| {
            time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339).ok()
        });
        match (since, time) {
            (Some(since), Some(time)) => {
                let days = (time - since.unix_timestamp()) as f64 / 86_400.0;
                self.bonus_per_day * days.max(0.0)
            }
            _ => 0.0,
        }
    }

    /// A player's points after a round: `points` plus `floor` (their league's threshold) make
    /// their ladder value, `beaten` of `opponents` finished behind them, whose mean rating
    /// before the round was `mean`; `bonus` points of their pool are left. Returns the new
    /// points and the bonus spent.
    #[must_use]
    pub fn after(
        &self,
        points: f64,
        floor: f64,
        (beaten, opponents): (usize, usize),
        mean: f64,
        bonus: f64,
    ) -> (f64, f64) {
        if opponents == 0 {
            return (points, 0.0);
        }
        let expected = 1.0 / (1.0 + 10f64.powf((mean - (points + floor)) / self.scale));
        let gain = self.k * (beaten as f64 / opponents as f64 - expected);
        let spent = if gain > 0.0 {
            gain.min(bonus.max(0.0))
        } else {
            0.0
        };
        ((points + gain + spent).max(0.0), spent)
    }
}

/// One league.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Tier {
    /// Its name, as `?league=` takes it: 1 to 64 bytes of letters, digits, `_` and `-`.
    #[schema(example = "gold", pattern = r"^[A-Za-z0-9_-]{1,64}$")]
    pub name: String,
    /// The lowest rating of the league: `null` (or absent) for the lowest league, which takes
    /// every placed player below the others; a number above the previous league's for every
    /// other.
    #[serde(default)]
    #[schema(example = 1500.0)]
    pub threshold: Option<f64>,
}

fn default_k() -> f64 {
    super::DEFAULT_CONSERVATIVE_K
}

fn default_division_size() -> u32 {
    100
}

/// A player's league and division, and their ladder points in it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Placement {
    /// The league's name.
    #[schema(value_type = String, example = "gold")]
    pub league: Arc<str>,
    /// The division, from 1.
    #[schema(minimum = 1, example = 3)]
    pub division: u32,
    /// Ladder points in the league, when the pool keeps them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(example = 120.5)]
    pub points: Option<f64>,
}

/// What a round did to a player's league: `None` before placement.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LeagueMove {
    /// Before the round.
    pub before: Option<Placement>,
    /// After the round.
    pub after: Option<Placement>,
}

/// One player's part in a round, as leagues see it.
#[derive(Debug, Clone, Copy)]
pub struct Entrant<'a> {
    /// The player.
    pub player: &'a str,
    /// Their rank in the round: arrivals take division places in rank order, then by id.
    pub rank: u64,
    /// Their rating after the round.
    pub rating: Rating,
    /// Their μ before the round: what their opponents' ladder points are measured against.
    pub prior: f64,
    /// Rounds they have played, this one included.
    pub rounds: u64,
    /// The round's time (seconds since the Unix epoch), for the bonus pool.
    pub time: Option<i64>,
}

impl Leagues {
    /// Checks every setting, naming the first bad field (`leagues.tiers[2].threshold`, …).
    pub fn validate(&self) -> Result<(), InvalidDisplay> {
        let bad = |field: String, message: &'static str| Err(InvalidDisplay { field, message });
        if !(0.0..=super::MAX_CONSERVATIVE_K).contains(&self.k) {
            return bad("leagues.k".into(), "must be between 0 and 100");
        }
        if self.division_size == 0 {
            return bad("leagues.division_size".into(), "must be at least 1");
        }
        if self.tiers.is_empty() || self.tiers.len() > MAX_LEAGUES {
            return bad("leagues.tiers".into(), "must list 1 to 64 leagues");
        }
        if let Some(points) = &self.points {
            let field = |name: &str| format!("leagues.points.{name}");
            if !(points.k > 0.0 && points.k <= 1000.0) {
                return bad(field("k"), "must be above 0 and at most 1000");
            }
            if !(points.scale.is_finite() && points.scale > 0.0) {
                return bad(field("scale"), "must be a finite number above 0");
            }
            if !points.lowest_floor.is_finite() {
                return bad(field("lowest_floor"), "must be finite");
            }
            if !(points.bonus_per_day.is_finite() && points.bonus_per_day >= 0.0) {
                return bad(
                    field("bonus_per_day"),
                    "must be a finite number of at least 0",
                );
            }
            let rfc3339 = &time::format_description::well_known::Rfc3339;
            if points
                .bonus_since
                .as_deref()
                .is_some_and(|s| time::OffsetDateTime::parse(s, rfc3339).is_err())
            {
                return bad(field("bonus_since"), "must be an RFC 3339 time");
            }
        }
        for (i, tier) in self.tiers.iter().enumerate() {
            let name_ok = (1..=MAX_LEAGUE_NAME).contains(&tier.name.len())
                && tier
                    .name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
            if !name_ok {
                return bad(
                    format!("leagues.tiers[{i}].name"),
                    "must be 1 to 64 letters, digits, `_` or `-`",
                );
            }
            if self.tiers[..i].iter().any(|t| t.name == tier.name) {
                return bad(format!("leagues.tiers[{i}].name"), "is already used");
            }
            let threshold = format!("leagues.tiers[{i}].threshold");
            match (i, tier.threshold) {
                (0, None) => {}
                (0, Some(_)) => {
                    return bad(
                        threshold,
                        "must be null: the lowest league has no threshold",
                    )
                }
                (_, None) => return bad(threshold, "must be a number"),
                (_, Some(t)) if !t.is_finite() => return bad(threshold, "must be finite"),
                (_, Some(t)) if i > 1 && self.tiers[i - 1].threshold >= Some(t) => {
                    return bad(threshold, "must be above the previous league's")
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// The index of the league called `name`.
    #[must_use]
    pub fn index(&self, name: &str) -> Option<usize> {
        self.tiers.iter().position(|t| t.name == name)
    }

    /// The highest league whose threshold is at most `rating`.
    fn reached(&self, rating: f64) -> usize {
        self.tiers
            .iter()
            .rposition(|t| t.threshold.is_none_or(|threshold| threshold <= rating))
            .unwrap_or(0)
    }

    /// The league a player in league `current` (`None`: not placed) moves to after a round
    /// that left them rated `rating` with `rounds` rounds played.
    #[must_use]
    pub fn next_league(
        &self,
        current: Option<usize>,
        rating: Rating,
        rounds: u64,
    ) -> Option<usize> {
        let spread = self.k * rating.sigma.unwrap_or(0.0);
        let (low, high) = (rating.mu - spread, rating.mu + spread);
        let Some(current) = current else {
            return (rounds >= self.placement_rounds).then(|| self.reached(low));
        };
        let promoted = self.reached(low);
        if promoted > current {
            return Some(promoted);
        }
        match self.tiers[current].threshold {
            Some(threshold) if high < threshold => Some(self.reached(high)),
            _ => Some(current),
        }
    }
}

/// One league's divisions: how many players each holds, and which have room.
#[derive(Debug, Clone, Default, PartialEq)]
struct Divisions {
    /// Players in division `d + 1`.
    counts: Vector<u32>,
    /// The divisions (from 1) with fewer than `division_size` players.
    open: OrdSet<u32>,
}

impl Divisions {
    /// Seats a player in the lowest-numbered division with room, opening a new one when
    /// every division is full.
    fn arrive(&mut self, size: u32) -> u32 {
        let division = match self.open.get_min() {
            Some(&open) => open,
            None => {
                self.counts.push_back(0);
                let opened = u32::try_from(self.counts.len()).unwrap_or(u32::MAX);
                self.open.insert(opened);
                opened
            }
        };
        self.seat(division, size);
        division
    }

    /// Seats a player in `division` (from 1), whatever its count.
    fn seat(&mut self, division: u32, size: u32) {
        let index = division as usize - 1;
        while self.counts.len() <= index {
            self.counts.push_back(0);
            self.open
                .insert(u32::try_from(self.counts.len()).unwrap_or(u32::MAX));
        }
        self.counts[index] += 1;
        if self.counts[index] >= size {
            self.open.remove(&division);
        }
    }

    /// Frees a place in `division`. Empty divisions at the end close, so the divisions are
    /// exactly those up to the highest one holding a player, whatever the order of arrivals
    /// and departures that led there (a reloaded table equals the one it was stored from).
    fn leave(&mut self, division: u32) {
        let index = division as usize - 1;
        self.counts[index] -= 1;
        self.open.insert(division);
        while self.counts.last() == Some(&0) {
            self.counts.pop_back();
            self.open
                .remove(&u32::try_from(self.counts.len() + 1).unwrap_or(u32::MAX));
        }
    }

    fn players(&self) -> u64 {
        self.counts.iter().map(|&c| u64::from(c)).sum()
    }
}

/// Every placed player's league, division and ladder points under one set of [`Leagues`].
/// Cloning is O(1) (persistent maps), so a pool's snapshot carries one.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LeagueTable {
    leagues: Option<Arc<Leagues>>,
    /// The leagues' names, shared by every placement read.
    names: Arc<[Arc<str>]>,
    placed: HashMap<Arc<str>, Seat>,
    /// Bonus points spent by players not placed in the current season: a new season takes
    /// every player out of their league, but their bonus pool runs on.
    carried: HashMap<Arc<str>, f64>,
    divisions: Vec<Divisions>,
}

/// Where a placed player sits.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Seat {
    league: u16,
    division: u32,
    /// Ladder points in the league (0 when the pool keeps none).
    points: f64,
    /// Bonus points spent so far.
    bonus_spent: f64,
}

/// Players and divisions of one league.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeagueCount {
    /// Players placed in it.
    pub players: u64,
    /// Its divisions: the highest division number holding a player (a lower one may have
    /// emptied since).
    pub divisions: u64,
}

impl LeagueTable {
    /// Nobody placed yet under `leagues` (validated by the caller); `None` for a pool without
    /// leagues, where [`Self::settle`] places nobody.
    #[must_use]
    pub fn new(leagues: Option<&Leagues>) -> Self {
        Self {
            divisions: vec![Divisions::default(); leagues.map_or(0, |l| l.tiers.len())],
            names: leagues
                .iter()
                .flat_map(|l| &l.tiers)
                .map(|tier| Arc::from(tier.name.as_str()))
                .collect(),
            leagues: leagues.cloned().map(Arc::new),
            placed: HashMap::new(),
            carried: HashMap::new(),
        }
    }

    /// The table at the start of a new season: nobody placed, every division empty, the
    /// bonus points spent so far kept.
    #[must_use]
    pub fn new_season(&self) -> Self {
        let mut next = Self::new(self.leagues.as_deref());
        next.carried = self.carried.clone();
        for (player, seat) in &self.placed {
            if seat.bonus_spent != 0.0 {
                next.carried.insert(Arc::clone(player), seat.bonus_spent);
            }
        }
        next
    }

    /// A table holding `placements` as stored (each player once, with the bonus points they
    /// spent, and no placement for one waiting to be placed in this season); fails on a
    /// league these settings do not have.
    pub fn from_placements<'a>(
        leagues: Option<&Leagues>,
        placements: impl Iterator<Item = (&'a Arc<str>, Option<&'a Placement>, f64)>,
    ) -> Result<Self, String> {
        let mut table = Self::new(leagues);
        for (player, placement, bonus_spent) in placements {
            let Some(placement) = placement else {
                if bonus_spent != 0.0 && table.leagues.is_some() {
                    table.carried.insert(Arc::clone(player), bonus_spent);
                }
                continue;
            };
            let (Some(settings), Some(league)) = (
                &table.leagues,
                table
                    .leagues
                    .as_ref()
                    .and_then(|l| l.index(&placement.league)),
            ) else {
                return Err(format!(
                    "player `{player}` is in league `{}`, which the pool does not have",
                    placement.league
                ));
            };
            if placement.division == 0 {
                return Err(format!("player `{player}` is in division 0"));
            }
            let size = settings.division_size;
            table.divisions[league].seat(placement.division, size);
            let seat = Seat {
                league: league as u16,
                division: placement.division,
                points: placement.points.unwrap_or(0.0),
                bonus_spent,
            };
            table.placed.insert(Arc::clone(player), seat);
        }
        Ok(table)
    }

    fn placement(&self, seat: Seat) -> Option<Placement> {
        let leagues = self.leagues.as_ref()?;
        Some(Placement {
            league: Arc::clone(&self.names[usize::from(seat.league)]),
            division: seat.division,
            points: leagues.points.as_ref().map(|_| seat.points),
        })
    }

    /// The index of a player's league.
    #[must_use]
    pub fn league_of(&self, player: &str) -> Option<u16> {
        self.placed.get(player).map(|seat| seat.league)
    }

    /// A player's league, division and points.
    #[must_use]
    pub fn placement_of(&self, player: &str) -> Option<Placement> {
        self.placement(*self.placed.get(player)?)
    }

    /// The ladder bonus points a player has spent.
    #[must_use]
    pub fn bonus_spent(&self, player: &str) -> f64 {
        match self.placed.get(player) {
            Some(seat) => seat.bonus_spent,
            None => self.carried.get(player).copied().unwrap_or(0.0),
        }
    }

    /// Every placed player, their league and the bonus points they spent, then every player
    /// waiting for placement in this season who has spent some, in no particular order.
    pub fn placements(&self) -> impl Iterator<Item = (&Arc<str>, Option<Placement>, f64)> + '_ {
        self.placed
            .iter()
            .filter_map(|(player, &seat)| {
                Some((player, Some(self.placement(seat)?), seat.bonus_spent))
            })
            .chain(
                self.carried
                    .iter()
                    .map(|(player, &spent)| (player, None, spent)),
            )
    }

    /// Players and divisions per league, lowest league first.
    #[must_use]
    pub fn counts(&self) -> Vec<LeagueCount> {
        self.divisions
            .iter()
            .map(|d| LeagueCount {
                players: d.players(),
                divisions: d.counts.len() as u64,
            })
            .collect()
    }

    /// Moves the entrants of one applied round between leagues, in rank order (then by id),
    /// and returns what happened to each, in the order given. A player who changes league
    /// leaves their division and takes the first free place in the new league's. Ladder
    /// points move first, in the league the player played the round in, then restart at 0 if
    /// the player changes league.
    pub fn settle(&mut self, entrants: &[Entrant<'_>]) -> Vec<LeagueMove> {
        let Some(leagues) = self.leagues.clone() else {
            return vec![LeagueMove::default(); entrants.len()];
        };
        let mut order: Vec<usize> = (0..entrants.len()).collect();
        order.sort_by(|&a, &b| {
            (entrants[a].rank, entrants[a].player).cmp(&(entrants[b].rank, entrants[b].player))
        });
        let field = Field::of(entrants, &order);
        let mut moves = vec![LeagueMove::default(); entrants.len()];
        for (position, &i) in order.iter().enumerate() {
            let entrant = &entrants[i];
            let current = self.placed.get(entrant.player).copied();
            let next = leagues.next_league(
                current.map(|seat| usize::from(seat.league)),
                entrant.rating,
                entrant.rounds,
            );
            let played = match (current, &leagues.points) {
                (Some(seat), Some(points)) => {
                    let floor = leagues.tiers[usize::from(seat.league)]
                        .threshold
                        .unwrap_or(points.lowest_floor);
                    let bonus = points.accrued(entrant.time) - seat.bonus_spent;
                    let (after, spent) = points.after(
                        seat.points,
                        floor,
                        field.against(position),
                        field.mean_against(position),
                        bonus,
                    );
                    Some(Seat {
                        points: after,
                        bonus_spent: seat.bonus_spent + spent,
                        ..seat
                    })
                }
                (seat, _) => seat,
            };
            let after = match (played, next) {
                (Some(seat), Some(next)) if usize::from(seat.league) == next => Some(seat),
                (_, Some(next)) => {
                    if let Some(seat) = current {
                        self.divisions[usize::from(seat.league)].leave(seat.division);
                    }
                    let bonus_spent = match played {
                        Some(seat) => seat.bonus_spent,
                        None => self.carried.remove(entrant.player).unwrap_or(0.0),
                    };
                    Some(Seat {
                        league: next as u16,
                        division: self.divisions[next].arrive(leagues.division_size),
                        points: 0.0,
                        bonus_spent,
                    })
                }
                (_, None) => None,
            };
            if let Some(seat) = after {
                self.placed.insert(Arc::from(entrant.player), seat);
            }
            moves[i] = LeagueMove {
                before: current.and_then(|seat| self.placement(seat)),
                after: after.and_then(|seat| self.placement(seat)),
            };
        }
        moves
    }
}

/// A round's standings in rank order as ladder points see them: for each, how many finished
/// behind and how many ahead, and the sum of the priors of those ranked differently.
struct Field {
    /// Per position in rank order: `(behind, ahead)`.
    counts: Vec<(usize, usize)>,
    /// Per position: the sum of the priors of every standing not tied with it.
    others: Vec<f64>,
}

impl Field {
    /// `order` lists `entrants` best rank first. O(n).
    fn of(entrants: &[Entrant<'_>], order: &[usize]) -> Self {
        let n = order.len();
        let total: f64 = order.iter().map(|&i| entrants[i].prior).sum();
        let mut counts = vec![(0, 0); n];
        let mut others = vec![0.0; n];
        let mut start = 0;
        while start < n {
            let rank = entrants[order[start]].rank;
            let end = start + order[start..].partition_point(|&i| entrants[i].rank == rank);
            let tied: f64 = order[start..end].iter().map(|&i| entrants[i].prior).sum();
            for position in start..end {
                counts[position] = (n - end, start);
                others[position] = total - tied;
            }
            start = end;
        }
        Self { counts, others }
    }

    /// `(opponents beaten, opponents)` of the standing at `position`: ties are neither.
    fn against(&self, position: usize) -> (usize, usize) {
        let (behind, ahead) = self.counts[position];
        (behind, behind + ahead)
    }

    /// The mean prior of the standing's opponents (0 with none).
    fn mean_against(&self, position: usize) -> f64 {
        let (_, opponents) = self.against(position);
        if opponents == 0 {
            0.0
        } else {
            self.others[position] / opponents as f64
        }
    }
}

/// One history row as [`recompute`] takes it.
#[derive(Debug, Clone, Copy)]
pub struct HistoryPoint<'a> {
    /// The round's place in the pool's order.
    pub round: i64,
    /// The player, their rank and their rating after the round.
    pub entrant: Entrant<'a>,
}

/// Places every player under `leagues` again from a pool's history: `rows` in the order the
/// rounds were applied (each point's `entrant.rounds` is ignored: it is counted here), with
/// `seasons` the places in that order where seasons started. Gives the table after the last
/// round and each row's move, in `rows`' order: what applying the rounds one by one with
/// these leagues would have given.
#[must_use]
pub fn recompute(
    leagues: Option<&Leagues>,
    rows: &[HistoryPoint<'_>],
    seasons: &[i64],
) -> (LeagueTable, Vec<LeagueMove>) {
    let mut table = LeagueTable::new(leagues);
    let mut played: std::collections::HashMap<&str, u64> = std::collections::HashMap::new();
    let mut moves = Vec::with_capacity(rows.len());
    let mut seasons = seasons.iter().copied().peekable();
    for round in rows.chunk_by(|a, b| a.round == b.round) {
        if seasons.next_if(|&start| start < round[0].round).is_some() {
            while seasons.next_if(|&start| start < round[0].round).is_some() {}
            table = table.new_season();
            played.clear();
        }
        let entrants: Vec<Entrant<'_>> = round
            .iter()
            .map(|point| {
                let rounds = played.entry(point.entrant.player).or_default();
                *rounds += 1;
                Entrant {
                    rounds: *rounds,
                    ..point.entrant
                }
            })
            .collect();
        moves.extend(table.settle(&entrants));
    }
    if seasons.next().is_some() {
        table = table.new_season();
    }
    (table, moves)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn leagues(division_size: u32) -> Leagues {
        serde_json::from_value(serde_json::json!({
            "k": 2,
            "placement_rounds": 2,
            "division_size": division_size,
            "tiers": [
                {"name": "bronze"},
                {"name": "silver", "threshold": 1000},
                {"name": "gold", "threshold": 1500},
                {"name": "master", "threshold": 2000}
            ],
            "points": {"k": 40, "lowest_floor": 800, "bonus_per_day": 5,
                       "bonus_since": "1970-01-02T00:00:00Z"}
        }))
        .expect("valid settings")
    }

    fn rating(mu: f64, sigma: f64) -> Rating {
        Rating {
            mu,
            sigma: Some(sigma),
        }
    }

    #[test]
    fn placement_waits_for_the_rounds_then_uses_the_conservative_rating() {
        let l = leagues(10);
        assert_eq!(l.next_league(None, rating(1900.0, 10.0), 1), None);
        assert_eq!(l.next_league(None, rating(1900.0, 10.0), 2), Some(2));
        assert_eq!(l.next_league(None, rating(1900.0, 250.0), 2), Some(1));
        assert_eq!(l.next_league(None, rating(1900.0, 500.0), 2), Some(0));
        assert_eq!(l.next_league(None, rating(2100.0, 50.0), 3), Some(3));
    }

    #[test]
    fn promotion_needs_the_low_end_and_demotion_the_high_end() {
        let l = leagues(10);
        let gold = Some(2);
        // Inside the band between the two ends: stays.
        assert_eq!(l.next_league(gold, rating(1990.0, 10.0), 5), gold);
        assert_eq!(l.next_league(gold, rating(1480.0, 20.0), 5), gold);
        // μ − 2σ reaches master's 2000.
        assert_eq!(l.next_league(gold, rating(2020.0, 10.0), 5), Some(3));
        // μ + 2σ below gold's 1500: down to the league μ + 2σ reaches.
        assert_eq!(l.next_league(gold, rating(1470.0, 10.0), 5), Some(1));
        assert_eq!(l.next_league(gold, rating(900.0, 10.0), 5), Some(0));
        // The lowest league has no threshold to fall below.
        assert_eq!(l.next_league(Some(0), rating(-1e9, 1.0), 5), Some(0));
        // No σ (Elo): both ends are μ.
        let elo = Rating {
            mu: 1499.0,
            sigma: None,
        };
        assert_eq!(l.next_league(gold, elo, 5), Some(1));
    }

    #[test]
    fn a_new_season_unplaces_everyone_counts_placement_again_and_keeps_the_bonus_spent() {
        let settings = leagues(10);
        let mut table = LeagueTable::new(Some(&settings));
        let entrant = |player, rank, rounds| Entrant {
            player,
            rank,
            rating: rating(1900.0, 10.0),
            prior: 1500.0,
            rounds,
            time: Some(30 * 86_400),
        };
        table.settle(&[entrant("a", 1, 2), entrant("b", 2, 2)]);
        table.settle(&[entrant("a", 1, 3), entrant("b", 2, 3)]);
        let spent = table.bonus_spent("a");
        assert!(spent > 0.0, "a won with a bonus to spend");
        let placed = table.placement_of("a").expect("placed");

        let next = table.new_season();
        assert_eq!(next.placement_of("a"), None);
        assert_eq!(next.bonus_spent("a"), spent);
        assert!(next
            .counts()
            .iter()
            .all(|c| c.players == 0 && c.divisions == 0));
        let mut next = next;
        // One round of the new season is not enough under `placement_rounds` = 2 …
        let moved = next.settle(&[entrant("a", 1, 1), entrant("b", 2, 1)]);
        assert_eq!(moved[0].after, None);
        // … two are, in the league the rating reaches, with the bonus spent carried over.
        let moved = next.settle(&[entrant("a", 1, 2), entrant("b", 2, 2)]);
        assert_eq!(
            moved[0].after.as_ref().map(|p| &p.league),
            Some(&placed.league)
        );
        assert_eq!(next.bonus_spent("a"), spent);
    }

    #[test]
    fn the_articles_diamond_example() {
        // sc2-ladder-analysis: MMR 2500 with σ 100 is not promoted to Diamond (threshold 2300),
        // since 2500 − 3·100 = 2200; a Diamond player with σ 50 is demoted only below 2150.
        let ladder: Leagues = serde_json::from_value(serde_json::json!({"tiers": [
            {"name": "platinum"}, {"name": "diamond", "threshold": 2300}]}))
        .expect("valid settings");
        let (platinum, diamond) = (Some(0), Some(1));
        assert_eq!(ladder.k, 3.0);
        assert_eq!(
            ladder.next_league(platinum, rating(2500.0, 100.0), 9),
            platinum
        );
        assert_eq!(
            ladder.next_league(platinum, rating(2600.0, 100.0), 9),
            diamond
        );
        assert_eq!(
            ladder.next_league(diamond, rating(2151.0, 50.0), 9),
            diamond
        );
        assert_eq!(
            ladder.next_league(diamond, rating(2149.0, 50.0), 9),
            platinum
        );
    }

    #[test]
    fn the_articles_points_example() {
        // sc2-ladder-analysis: Excal (MMR 2600, 300 points) beats the author (MMR 2500, 150
        // points), both in Diamond (threshold 2300). Excal's gain compares 300 + 2300 = 2600
        // with 2500; the author's loss compares 150 + 2300 = 2450 with 2600.
        let points: Points = serde_json::from_value(serde_json::json!({})).expect("the defaults");
        let (excal, _) = points.after(300.0, 2300.0, (1, 1), 2500.0, 0.0);
        let (author, _) = points.after(150.0, 2300.0, (0, 1), 2600.0, 0.0);
        let elo = |d: f64| 1.0 / (1.0 + 10f64.powf(-d / 400.0));
        assert!((excal - (300.0 + 32.0 * (1.0 - elo(100.0)))).abs() < 1e-12);
        assert!((author - (150.0 - 32.0 * elo(-150.0))).abs() < 1e-12);
        assert_eq!(excal.round(), 312.0, "+11.5");
        assert_eq!(author.round(), 141.0, "−9.5");
        // With a bonus pool, a gain is doubled while the pool lasts, and points never go below 0.
        let (doubled, spent) = points.after(300.0, 2300.0, (1, 1), 2500.0, 100.0);
        assert!((doubled - 300.0 - 2.0 * (excal - 300.0)).abs() < 1e-12);
        assert!((spent - (excal - 300.0)).abs() < 1e-12);
        let (partly, spent) = points.after(300.0, 2300.0, (1, 1), 2500.0, 4.0);
        assert_eq!((partly, spent), (excal + 4.0, 4.0));
        assert_eq!(points.after(1.0, 2300.0, (0, 1), 2600.0, 50.0), (0.0, 0.0));
    }

    #[test]
    fn divisions_fill_in_order_and_reuse_freed_places() {
        let mut d = Divisions::default();
        assert_eq!([d.arrive(2), d.arrive(2), d.arrive(2)], [1, 1, 2]);
        d.leave(1);
        assert_eq!([d.arrive(2), d.arrive(2)], [1, 2]);
        assert_eq!(d.arrive(2), 3);
        assert_eq!(d.players(), 5);
        d.leave(3);
        assert_eq!(d.counts.len(), 2, "an empty last division closes");
        assert_eq!(d.arrive(2), 3);
    }

    #[test]
    fn bad_settings_name_their_field() {
        let field = |json: serde_json::Value| {
            serde_json::from_value::<Leagues>(json)
                .expect("well-formed")
                .validate()
                .err()
                .map(|e| e.field)
        };
        let tiers = |t: serde_json::Value| serde_json::json!({ "tiers": t });
        assert_eq!(
            field(tiers(serde_json::json!([]))).as_deref(),
            Some("leagues.tiers")
        );
        assert_eq!(
            field(tiers(serde_json::json!([{"name": "a", "threshold": 1}]))).as_deref(),
            Some("leagues.tiers[0].threshold")
        );
        assert_eq!(
            field(tiers(
                serde_json::json!([{"name": "a"}, {"name": "b", "threshold": 5}, {"name": "c", "threshold": 5}])
            ))
            .as_deref(),
            Some("leagues.tiers[2].threshold")
        );
        assert_eq!(
            field(tiers(
                serde_json::json!([{"name": "a"}, {"name": "a", "threshold": 5}])
            ))
            .as_deref(),
            Some("leagues.tiers[1].name")
        );
        assert_eq!(
            field(tiers(serde_json::json!([{"name": "a b"}]))).as_deref(),
            Some("leagues.tiers[0].name")
        );
        assert_eq!(
            field(serde_json::json!({"division_size": 0, "tiers": [{"name": "a"}]})).as_deref(),
            Some("leagues.division_size")
        );
        assert_eq!(field(tiers(serde_json::json!([{"name": "a"}]))), None);
    }

    /// Random rounds of up to 8 players out of 12: `(player, μ, σ)`, ranks by position.
    fn rounds() -> impl Strategy<Value = Vec<Vec<(u8, f64, f64)>>> {
        prop::collection::vec(
            prop::collection::vec((0u8..12, 500.0f64..2500.0, 0.0f64..300.0), 1..8),
            1..30,
        )
    }

    proptest! {
        #[test]
        fn leagues_follow_the_rule_and_divisions_never_overflow(
            rounds in rounds(), size in 1u32..4,
            seasons in proptest::collection::btree_set(0usize..12, 0..3),
        ) {
            let settings = leagues(size);
            let mut table = LeagueTable::new(Some(&settings));
            let mut played = std::collections::HashMap::new();
            let names: Vec<String> = (0..12).map(|p| format!("p{p}")).collect();
            let mut history = Vec::new();
            let mut incremental = Vec::new();
            for (index, round) in rounds.iter().enumerate() {
                if seasons.contains(&index) {
                    table = table.new_season();
                    played.clear();
                    prop_assert!(table.counts().iter().all(|c| c.players == 0));
                }
                let mut seen = std::collections::HashSet::new();
                let entrants: Vec<Entrant<'_>> = round
                    .iter()
                    .enumerate()
                    .filter(|(_, (p, _, _))| seen.insert(*p))
                    .map(|(rank, (p, mu, sigma))| {
                        let rounds = played.entry(*p).or_insert(0u64);
                        *rounds += 1;
                        Entrant {
                            player: &names[usize::from(*p)],
                            rank: (rank / 2) as u64,
                            rating: rating(*mu, *sigma),
                            prior: *mu - 50.0 + *sigma,
                            rounds: *rounds,
                            time: Some(index as i64 * 86_400),
                        }
                    })
                    .collect();
                let mut sorted = entrants.clone();
                sorted.sort_by_key(|e| (e.rank, e.player));
                // Rounds at odd places in the pool's order, season starts at even ones.
                history.extend(sorted.into_iter().map(|entrant| HistoryPoint { round: 2 * index as i64 + 1, entrant }));
                let moves = table.settle(&entrants);
                incremental.extend(entrants.iter().zip(&moves).map(|(e, m)| ((index, e.rank, e.player), m.clone())));
                for (entrant, m) in entrants.iter().zip(&moves) {
                    let index = |p: &Option<Placement>| p.as_ref().and_then(|p| settings.index(&p.league));
                    let (before, after) = (index(&m.before), index(&m.after));
                    prop_assert_eq!(after.is_some(), entrant.rounds >= settings.placement_rounds);
                    let low = entrant.rating.mu - 2.0 * entrant.rating.sigma.unwrap_or(0.0);
                    let high = entrant.rating.mu + 2.0 * entrant.rating.sigma.unwrap_or(0.0);
                    let threshold = |i: usize| settings.tiers[i].threshold.unwrap_or(f64::NEG_INFINITY);
                    match (before, after) {
                        (Some(b), Some(a)) if a > b => prop_assert!(low >= threshold(a)),
                        (Some(b), Some(a)) if a < b => prop_assert!(high < threshold(b)),
                        (Some(b), Some(a)) => {
                            prop_assert!(low < settings.tiers.get(b + 1).map_or(f64::INFINITY, |t| t.threshold.unwrap_or(0.0)));
                            prop_assert!(high >= threshold(a));
                            let seat = |p: &Option<Placement>| p.as_ref().map(|p| (p.league.clone(), p.division));
                            prop_assert_eq!(seat(&m.before), seat(&m.after), "no move, same division");
                        }
                        _ => {}
                    }
                }
                for (league, divisions) in table.divisions.iter().enumerate() {
                    for (d, &count) in divisions.counts.iter().enumerate() {
                        prop_assert!(count <= size);
                        let seated = table
                            .placed
                            .values()
                            .filter(|seat| usize::from(seat.league) == league && seat.division as usize == d + 1)
                            .count();
                        prop_assert_eq!(seated, count as usize);
                        prop_assert_eq!(divisions.open.contains(&(d as u32 + 1)), count < size);
                    }
                }
            }
            let starts: Vec<i64> = seasons.iter().map(|&i| 2 * i as i64).collect();
            let (recomputed, moves) = recompute(Some(&settings), &history, &starts);
            if seasons.iter().any(|&i| i >= rounds.len()) {
                table = table.new_season();
            }
            prop_assert_eq!(&recomputed, &table);
            incremental.sort_by(|a, b| a.0.cmp(&b.0));
            let incremental: Vec<LeagueMove> = incremental.into_iter().map(|(_, m)| m).collect();
            prop_assert_eq!(moves, incremental);
            let stored: Vec<(Arc<str>, Option<Placement>, f64)> = table
                .placements()
                .map(|(p, placement, spent)| (Arc::clone(p), placement, spent))
                .collect();
            let reloaded = LeagueTable::from_placements(
                Some(&settings),
                stored.iter().map(|(p, placement, spent)| (p, placement.as_ref(), *spent)),
            )
            .expect("valid placements");
            prop_assert_eq!(&reloaded, &table);
        }
    }
}
