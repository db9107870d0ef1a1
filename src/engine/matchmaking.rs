//! Matchmaking (docs/matchmaking.md): from players waiting for a game, disjoint matches of
//! `teams` teams of `team_size` players that maximise the sum of their match qualities, where
//! a match may only be formed if its quality reaches the floor of every player in it, and each
//! player's floor falls the longer they have waited. Deterministic: the same input gives the
//! same matches.
//!
//! Players are sorted by rating and a match takes players close together in that order: a
//! dynamic program over the sorted players forms each match at its last member, from players
//! not yet matched among the few before it, and is exact among all matchings whose matches
//! each lie within that reach (8 consecutive places, or the match's size if larger: 10 for
//! five against five). Each match is split into the teams of the best quality.

use std::sync::atomic::{AtomicBool, Ordering};

use super::predict::{match_quality, match_quality_two};
use super::system::Performance;
use super::Error;

/// The most team splits a search may score per waiting player ([`work_per_player`]): it keeps
/// 10,000 waiting players within a few hundred milliseconds (BENCHMARKS.md). Of the formats of
/// up to 10 players, only five teams of two exceed it (945).
pub const MAX_WORK_PER_PLAYER: u64 = 400;

/// The quality a player will accept after waiting `waited` seconds:
/// `max(min, start − per_second · waited)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Relaxation {
    /// The floor of a player who has not waited.
    pub start: f64,
    /// How much the floor falls per second waited.
    pub per_second: f64,
    /// The lowest the floor falls.
    pub min: f64,
}

impl Relaxation {
    /// The floor after `waited` seconds.
    #[must_use]
    pub fn floor(&self, waited: f64) -> f64 {
        (self.start - self.per_second * waited).max(self.min)
    }
}

/// One player waiting: their performance as a lone entrant, and how long they have waited.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Waiting {
    /// The player's performance distribution in the pool's system.
    pub performance: Performance,
    /// Seconds waited.
    pub waited: f64,
}

/// One match: its teams (indices into the waiting list) and its quality.
#[derive(Debug, Clone, PartialEq)]
pub struct Match {
    /// `teams` teams of `team_size` players each.
    pub teams: Vec<Vec<usize>>,
    /// The match quality of the teams.
    pub quality: f64,
}

/// What matchmaking made of a waiting list.
#[derive(Debug, Clone, PartialEq)]
pub struct Matching {
    /// The matches, in rating order (strongest last).
    pub matches: Vec<Match>,
    /// The players left waiting, by index, in the order given.
    pub waiting: Vec<usize>,
}

/// The best matches of `teams` teams of `team_size` for `players` (both at least 1 and 2; the
/// caller checks), or [`Error::Cancelled`] once `cancel` is set.
pub fn matchmake(
    players: &[Waiting],
    team_size: usize,
    teams: usize,
    relaxation: &Relaxation,
    cancel: &AtomicBool,
) -> Result<Matching, Error> {
    let mut order: Vec<usize> = (0..players.len()).collect();
    order.sort_by(|&a, &b| {
        players[a]
            .performance
            .mean
            .total_cmp(&players[b].performance.mean)
            .then(a.cmp(&b))
    });
    let floors: Vec<f64> = order
        .iter()
        .map(|&i| relaxation.floor(players[i].waited))
        .collect();
    let sorted: Vec<Performance> = order.iter().map(|&i| players[i].performance).collect();
    let matches = best_matches(&sorted, &floors, team_size, teams, cancel)?;
    let mut matched = vec![false; players.len()];
    let matches: Vec<Match> = matches
        .into_iter()
        .map(|m| Match {
            teams: m
                .teams
                .into_iter()
                .map(|team| {
                    team.into_iter()
                        .map(|place| {
                            matched[order[place]] = true;
                            order[place]
                        })
                        .collect()
                })
                .collect(),
            quality: m.quality,
        })
        .collect();
    let waiting = (0..players.len()).filter(|&i| !matched[i]).collect();
    Ok(Matching { matches, waiting })
}

/// [`Error::Cancelled`] once `cancel` is set: what a long computation on the compute pool
/// looks at between batches of its work.
///
/// # Errors
/// [`Error::Cancelled`] when `cancel` is set.
pub fn check(cancel: &AtomicBool) -> Result<(), Error> {
    if cancel.load(Ordering::Relaxed) {
        Err(Error::Cancelled)
    } else {
        Ok(())
    }
}

/// The match quality of `sides`; two sides by the closed form, which allocates nothing.
fn quality(sides: &[Performance]) -> f64 {
    match sides {
        [a, b] => match_quality_two(a, b),
        _ => match_quality(sides).unwrap_or(0.0),
    }
}

/// The quality of a match of `sides`, if it reaches `floor`.
fn allowed(sides: &[Performance], floor: f64) -> Option<f64> {
    let quality = quality(sides);
    (quality >= floor).then_some(quality)
}

/// Team performances: the sums of their members'.
fn team(members: impl Iterator<Item = Performance>) -> Performance {
    members.fold(
        Performance {
            mean: 0.0,
            variance: 0.0,
            skill_variance: 0.0,
            noise_variance: 0.0,
        },
        |sum, p| Performance {
            mean: sum.mean + p.mean,
            variance: sum.variance + p.variance,
            skill_variance: sum.skill_variance + p.skill_variance,
            noise_variance: sum.noise_variance + p.noise_variance,
        },
    )
}

/// Every way of splitting places `0..team_size × teams` into `teams` unordered teams of
/// `team_size`, each team listed in increasing order and the teams by their first place.
fn splits(team_size: usize, teams: usize) -> Vec<Vec<Vec<usize>>> {
    fn extend(
        left: &mut Vec<usize>,
        team_size: usize,
        current: &mut Vec<Vec<usize>>,
        out: &mut Vec<Vec<Vec<usize>>>,
    ) {
        let Some(&first) = left.first() else {
            out.push(current.clone());
            return;
        };
        // The lowest place left leads the next team; choose its other members.
        let rest: Vec<usize> = left[1..].to_vec();
        let mut chosen = Vec::with_capacity(team_size);
        combinations(&rest, team_size - 1, 0, &mut chosen, &mut |members| {
            let mut group = vec![first];
            group.extend_from_slice(members);
            left.retain(|p| !group.contains(p));
            current.push(group.clone());
            extend(left, team_size, current, out);
            current.pop();
            left.extend_from_slice(&group);
            left.sort_unstable();
        });
    }
    let mut out = Vec::new();
    let mut left: Vec<usize> = (0..team_size * teams).collect();
    extend(&mut left, team_size, &mut Vec::new(), &mut out);
    out
}

/// Calls `each` with every choice of `count` of `from` (in order) after those in `chosen`,
/// taking elements from index `start` on.
fn combinations(
    from: &[usize],
    count: usize,
    start: usize,
    chosen: &mut Vec<usize>,
    each: &mut dyn FnMut(&[usize]),
) {
    if chosen.len() == count {
        each(chosen);
        return;
    }
    for k in start..from.len() {
        chosen.push(from[k]);
        combinations(from, count, k + 1, chosen, each);
        chosen.pop();
    }
}

/// `n` choose `k`, saturating.
fn binomial(n: u64, k: u64) -> u64 {
    // C(n, j + 1) = C(n, j) · (n − j) / (j + 1): every step is a whole number.
    (0..k).fold(1u64, |c, j| c.saturating_mul(n - j) / (j + 1))
}

/// How many ways [`splits`] lists: `(s·t)! / ((s!)^t · t!)`, saturating.
fn split_count(team_size: usize, teams: usize) -> u64 {
    // The lowest place left leads the next team; choose its team-mates among the others.
    (0..teams as u64)
        .map(|t| {
            binomial(
                (team_size * teams) as u64 - t * team_size as u64 - 1,
                team_size as u64 - 1,
            )
        })
        .fold(1u64, u64::saturating_mul)
}

/// How many places before a match's last member its other members may come from: 7, so that
/// every matching of up to 8 players is searched, or `size − 1` for larger matches (the state
/// has `2^reach` values).
fn reach(size: usize) -> usize {
    (size - 1).max(7)
}

/// The team splits the search scores per waiting player for a format: the groups of earlier
/// players a match may take, times the ways to split a match into teams. Callers bound it by
/// [`MAX_WORK_PER_PLAYER`].
#[must_use]
pub fn work_per_player(team_size: usize, teams: usize) -> u64 {
    let size = team_size * teams;
    binomial(reach(size) as u64, size as u64 - 1).saturating_mul(split_count(team_size, teams))
}

/// Writes into `places` the places of a match formed at player `i` with the earlier places of
/// `group` (bit `k`: `k + 1` places back), in increasing order; false if one lies before the
/// first player.
fn places(i: usize, group: usize, reach: usize, places: &mut Vec<usize>) -> bool {
    places.clear();
    for k in (0..reach).rev().filter(|k| group & (1 << k) != 0) {
        let Some(place) = i.checked_sub(k + 1) else {
            return false;
        };
        places.push(place);
    }
    places.push(i);
    true
}

/// The split of the players at `places` into teams of the best quality, as an index into
/// `ways` with that quality, if it reaches `floor`.
fn best_split(
    sorted: &[Performance],
    places: &[usize],
    ways: &[Vec<Vec<usize>>],
    floor: f64,
    sides: &mut [Performance],
) -> Option<(u16, f64)> {
    let mut chosen: Option<(u16, f64)> = None;
    for (w, split) in ways.iter().enumerate() {
        for (side, members) in sides.iter_mut().zip(split) {
            *side = team(members.iter().map(|&p| sorted[places[p]]));
        }
        if let Some(quality) = allowed(sides, floor) {
            if chosen.is_none_or(|(_, q)| quality > q) {
                chosen = Some((w as u16, quality));
            }
        }
    }
    chosen
}

/// What the search did at one player to reach one state (6 bytes: a 10,000-player search
/// keeps 1.3 million of them for one against one).
#[derive(Debug, Clone, Copy)]
struct Step {
    /// The state before.
    from: u16,
    /// The group taken with the player, or [`Step::NONE`] if no match was formed at it.
    group: u16,
    /// The split of the match formed.
    split: u16,
}

impl Step {
    const NONE: u16 = u16::MAX;
}

/// The best set of disjoint matches among `sorted` players (by rating) whose members all lie
/// within `reach(size) + 1` consecutive places. A match is formed at its last member, with
/// `size − 1` players not yet matched among the `reach` before it;
/// the state is which of those `reach` places are already matched (bit `k`: `k + 1` places
/// back), and a player who leaves the reach unmatched stays waiting.
fn best_matches(
    sorted: &[Performance],
    floors: &[f64],
    team_size: usize,
    teams: usize,
    cancel: &AtomicBool,
) -> Result<Vec<Match>, Error> {
    let size = team_size * teams;
    let reach = reach(size);
    debug_assert!(reach <= 16, "states are kept in 16 bits");
    let states = 1usize << reach;
    let full = states - 1;
    let ways = splits(team_size, teams);
    // The sets of earlier places a match may take besides its last member, as bit masks.
    let groups: Vec<usize> = (0..states)
        .filter(|g| g.count_ones() as usize == size - 1)
        .collect();
    let mut best = vec![f64::NEG_INFINITY; states];
    best[0] = 0.0;
    let mut next = vec![f64::NEG_INFINITY; states];
    // Player i's steps are `trail[i × states ..][state]`.
    let none = Step {
        from: 0,
        group: Step::NONE,
        split: 0,
    };
    let mut trail = vec![none; sorted.len() * states];
    let mut sides = vec![team(std::iter::empty()); teams];
    let mut members = Vec::with_capacity(size);
    // The groups that may form a match with the current player: mask, index, split, quality.
    let mut options: Vec<(usize, u16, u16, f64)> = Vec::with_capacity(groups.len());
    for i in 0..sorted.len() {
        if i % 256 == 0 {
            check(cancel)?;
        }
        options.clear();
        for (g, &group) in groups.iter().enumerate() {
            if !places(i, group, reach, &mut members) {
                continue;
            }
            let floor = members.iter().map(|&p| floors[p]).fold(f64::MIN, f64::max);
            if let Some((w, quality)) = best_split(sorted, &members, &ways, floor, &mut sides) {
                options.push((group, g as u16, w, quality));
            }
        }
        next.fill(f64::NEG_INFINITY);
        let step = &mut trail[i * states..(i + 1) * states];
        for (mask, &value) in best.iter().enumerate() {
            if value == f64::NEG_INFINITY {
                continue;
            }
            let mut offer = |state: usize, total: f64, group: u16, split: u16| {
                if total > next[state] {
                    next[state] = total;
                    step[state] = Step {
                        from: mask as u16,
                        group,
                        split,
                    };
                }
            };
            offer((mask << 1) & full, value, Step::NONE, 0);
            for &(group, g, w, quality) in &options {
                if mask & group == 0 {
                    offer(((mask | group) << 1 | 1) & full, value + quality, g, w);
                }
            }
        }
        std::mem::swap(&mut best, &mut next);
    }
    let (mut state, _) =
        best.iter().enumerate().fold(
            (0, f64::NEG_INFINITY),
            |(s, v), (t, &w)| if w > v { (t, w) } else { (s, v) },
        );
    let mut matches = Vec::new();
    for i in (0..sorted.len()).rev() {
        let Step { from, group, split } = trail[i * states + state];
        if group != Step::NONE {
            places(i, groups[usize::from(group)], reach, &mut members);
            let teams: Vec<Vec<usize>> = ways[usize::from(split)]
                .iter()
                .map(|t| t.iter().map(|&p| members[p]).collect())
                .collect();
            let sides: Vec<Performance> = teams
                .iter()
                .map(|t| team(t.iter().map(|&p| sorted[p])))
                .collect();
            matches.push(Match {
                quality: quality(&sides),
                teams,
            });
        }
        state = usize::from(from);
    }
    matches.reverse();
    Ok(matches)
}

/// The `limit` best opponents for `player` among `candidates` by match quality, best first
/// (ties by index): `(index, quality)`. O(n) to select, O(limit log limit) to sort.
#[must_use]
pub fn best_opponents(
    player: &Performance,
    candidates: &[Performance],
    limit: usize,
) -> Vec<(usize, f64)> {
    let mut scored: Vec<(usize, f64)> = candidates
        .iter()
        .enumerate()
        .map(|(i, c)| (i, match_quality_two(player, c)))
        .collect();
    let better = |a: &(usize, f64), b: &(usize, f64)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
    if limit < scored.len() {
        scored.select_nth_unstable_by(limit, better);
        scored.truncate(limit);
    }
    scored.sort_unstable_by(better);
    scored
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    const BETA: f64 = 200.0;

    fn player(mu: f64, sigma: f64, waited: f64) -> Waiting {
        Waiting {
            performance: Performance {
                mean: mu,
                variance: sigma * sigma + BETA * BETA,
                skill_variance: sigma * sigma,
                noise_variance: BETA * BETA,
            },
            waited,
        }
    }

    fn run(players: &[Waiting], team_size: usize, teams: usize, relax: &Relaxation) -> Matching {
        matchmake(players, team_size, teams, relax, &AtomicBool::new(false)).expect("not cancelled")
    }

    fn total(matching: &Matching) -> f64 {
        matching.matches.iter().map(|m| m.quality).sum()
    }

    /// The best total quality over every way to form disjoint matches, by exhaustion.
    fn optimum(players: &[Waiting], team_size: usize, teams: usize, relax: &Relaxation) -> f64 {
        fn best(
            left: &[usize],
            players: &[Waiting],
            ways: &[Vec<Vec<usize>>],
            size: usize,
            relax: &Relaxation,
        ) -> f64 {
            let Some((&first, rest)) = left.split_first() else {
                return 0.0;
            };
            let mut top = best(rest, players, ways, size, relax);
            let mut chosen = Vec::new();
            let mut others = |group: &[usize]| {
                let members: Vec<usize> = std::iter::once(first)
                    .chain(group.iter().copied())
                    .collect();
                let floor = members
                    .iter()
                    .map(|&i| relax.floor(players[i].waited))
                    .fold(f64::MIN, f64::max);
                let quality = ways
                    .iter()
                    .filter_map(|split| {
                        let sides: Vec<Performance> = split
                            .iter()
                            .map(|t| team(t.iter().map(|&p| players[members[p]].performance)))
                            .collect();
                        allowed(&sides, floor)
                    })
                    .fold(f64::NEG_INFINITY, f64::max);
                if quality > f64::NEG_INFINITY {
                    let remaining: Vec<usize> = rest
                        .iter()
                        .copied()
                        .filter(|i| !group.contains(i))
                        .collect();
                    top = top.max(quality + best(&remaining, players, ways, size, relax));
                }
            };
            combinations(rest, size - 1, 0, &mut chosen, &mut others);
            top
        }
        let left: Vec<usize> = (0..players.len()).collect();
        best(
            &left,
            players,
            &splits(team_size, teams),
            team_size * teams,
            relax,
        )
    }

    fn anyone() -> Relaxation {
        Relaxation {
            start: 0.0,
            per_second: 0.0,
            min: 0.0,
        }
    }

    #[test]
    fn every_split_of_a_window_into_teams_is_listed_once() {
        for (team_size, teams) in [(1, 2), (2, 2), (1, 4), (3, 2), (5, 2), (3, 3), (2, 4)] {
            let ways = splits(team_size, teams);
            assert_eq!(
                ways.len() as u64,
                split_count(team_size, teams),
                "{team_size}×{teams}"
            );
            let mut seen = std::collections::BTreeSet::new();
            for split in &ways {
                let mut places: Vec<usize> = split.concat();
                places.sort_unstable();
                assert_eq!(places, (0..team_size * teams).collect::<Vec<_>>());
                assert!(split.iter().all(|t| t.len() == team_size));
                assert!(seen.insert(split.clone()), "{split:?} twice");
            }
        }
        assert_eq!(split_count(5, 2), 126);
        assert_eq!(split_count(2, 5), 945);
        assert_eq!(
            [(1, 2), (2, 2), (5, 2), (2, 5)].map(|(s, t)| work_per_player(s, t)),
            [7, 105, 126, 945]
        );
    }

    #[test]
    fn a_floor_keeps_an_uneven_pair_apart_until_both_have_waited() {
        let relax = Relaxation {
            start: 0.6,
            per_second: 0.01,
            min: 0.1,
        };
        let quality = match_quality_two(
            &player(1500.0, 50.0, 0.0).performance,
            &player(1900.0, 50.0, 0.0).performance,
        );
        assert!((0.3..0.5).contains(&quality), "{quality}");
        let fresh = [player(1500.0, 50.0, 0.0), player(1900.0, 50.0, 30.0)];
        assert_eq!(run(&fresh, 1, 2, &relax).waiting, [0, 1]);
        let waited = [player(1500.0, 50.0, 30.0), player(1900.0, 50.0, 30.0)];
        let matched = run(&waited, 1, 2, &relax);
        assert_eq!(matched.matches.len(), 1);
        assert_eq!(matched.matches[0].teams, [vec![0], vec![1]]);
        assert_eq!(matched.matches[0].quality, quality);
        assert!(matched.waiting.is_empty());
    }

    #[test]
    fn a_cancelled_matchmaking_stops() {
        let players: Vec<Waiting> = (0..5000).map(|i| player(f64::from(i), 80.0, 0.0)).collect();
        let cancelled = AtomicBool::new(true);
        assert!(matches!(
            matchmake(&players, 1, 2, &anyone(), &cancelled),
            Err(Error::Cancelled)
        ));
    }

    fn small_pool(max: usize) -> impl Strategy<Value = Vec<Waiting>> {
        prop::collection::vec((1000.0f64..2000.0, 30.0f64..350.0, 0.0f64..120.0), 2..=max)
            .prop_map(|v| v.into_iter().map(|(mu, s, w)| player(mu, s, w)).collect())
    }

    fn relaxation() -> impl Strategy<Value = Relaxation> {
        (0.0f64..0.9, 0.0f64..0.02).prop_map(|(start, per_second)| Relaxation {
            start,
            per_second,
            min: 0.0,
        })
    }

    #[test]
    fn the_best_opponents_are_the_highest_qualities_in_order() {
        let me = player(1500.0, 80.0, 0.0).performance;
        let others: Vec<Performance> = [1900.0, 1510.0, 1490.0, 1500.0, 1200.0, 1510.0]
            .iter()
            .map(|&mu| player(mu, 80.0, 0.0).performance)
            .collect();
        let best = best_opponents(&me, &others, 3);
        let order: Vec<usize> = best.iter().map(|b| b.0).collect();
        assert_eq!(
            order,
            [3, 1, 2],
            "equal rating first; 1510 and 1490 tie, by index"
        );
        assert_eq!(best[1].1, best[2].1);
        assert_eq!(best_opponents(&me, &others, 10).len(), 6);
    }

    proptest! {
        #[test]
        fn one_against_one_is_exactly_optimal_for_up_to_eight_players(
            players in small_pool(8),
            relax in relaxation(),
        ) {
            let matching = run(&players, 1, 2, &relax);
            let best = optimum(&players, 1, 2, &relax);
            prop_assert!((total(&matching) - best).abs() <= 1e-12, "{} vs {}", total(&matching), best);
            let mut everyone: Vec<usize> = matching.waiting.clone();
            for m in &matching.matches {
                everyone.extend(m.teams.concat());
                prop_assert!(m.quality >= m.teams.concat().iter().map(|&i| relax.floor(players[i].waited)).fold(0.0, f64::max));
            }
            everyone.sort_unstable();
            prop_assert_eq!(everyone, (0..players.len()).collect::<Vec<_>>());
            prop_assert_eq!(run(&players, 1, 2, &relax), matching, "deterministic");
        }

        #[test]
        fn teams_are_exactly_optimal_on_waiting_lists_within_reach(
            players in small_pool(12),
            relax in relaxation(),
            format in prop::sample::select(vec![(2usize, 2usize), (3, 2), (1, 3), (5, 2)]),
        ) {
            let (team_size, teams) = format;
            // Exhausting every way for 5 against 5 among 12 players takes long: 10 at most.
            let players = if team_size == 5 { &players[..players.len().min(10)] } else { &players[..players.len().min(8)] };
            let matching = run(players, team_size, teams, &relax);
            let best = optimum(players, team_size, teams, &relax);
            prop_assert!((total(&matching) - best).abs() <= 1e-12, "{:?} {} vs {}", format, total(&matching), best);
        }
    }
}
