//! A round's results as the engine takes them, their validation, and the canonical layout the
//! solvers work on: entrants (a team or a lone player) sorted by rank and name, grouped by
//! tied rank. Sorting by name makes every result independent of the order entries were listed.

use std::collections::HashMap;
use std::ops::Range;

use serde::{Deserialize, Serialize};
use smallvec::SmallVec;

use super::Error;
use crate::bounds::{MAX_ABS_RATING, MAX_ROUND_WEIGHT, MIN_ROUND_WEIGHT};

/// One round's results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Round {
    /// When the round took place, in seconds since the Unix epoch (used by `drift_per_day`).
    pub time: Option<i64>,
    /// Round weight ω: performances spread by `beta / sqrt(ω)`. 1 is a normal round.
    pub weight: f64,
    /// Highest performance any entrant can be credited with, if the round has a ceiling.
    pub perf_ceiling: Option<f64>,
    /// Who took part and where they finished.
    pub standings: Vec<Standing>,
}

/// One player's result in a round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Standing {
    /// The player's id.
    pub player: String,
    /// Place, 1 is best; equal ranks tie, and only their order matters.
    pub rank: u64,
    /// The team the player played for; all members of a team share its rank.
    pub team: Option<String>,
    /// The share of the round the player took part in, in (0, 1]; only TrueSkill reads it
    /// (its partial play), every other system refuses it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partial_play: Option<f64>,
}

impl Round {
    /// A round of weight 1 with no time and no ceiling.
    #[must_use]
    pub fn new(standings: Vec<Standing>) -> Self {
        Self {
            time: None,
            weight: 1.0,
            perf_ceiling: None,
            standings,
        }
    }

    /// Checks what every rating system requires of a round (its weight and ceiling, and its
    /// standings: players, teams and ranks), the checks rating it would make first.
    ///
    /// # Errors
    /// [`Error::InvalidRound`] naming the first field that fails.
    pub fn validate(&self) -> Result<(), Error> {
        Layout::of(self).map(drop)
    }
}

impl Standing {
    /// A player playing alone.
    #[must_use]
    pub fn solo(player: impl Into<String>, rank: u64) -> Self {
        Self {
            player: player.into(),
            rank,
            team: None,
            partial_play: None,
        }
    }

    /// A player playing for `team`.
    #[must_use]
    pub fn member(player: impl Into<String>, rank: u64, team: impl Into<String>) -> Self {
        Self {
            team: Some(team.into()),
            ..Self::solo(player, rank)
        }
    }
}

impl Round {
    /// Refuses a round with a weight other than 1 or a performance ceiling, for a system
    /// (named in the reason) that has neither.
    pub(crate) fn refuse_weight_and_ceiling(&self, system: &str) -> Result<(), Error> {
        if self.weight != 1.0 {
            return Err(Error::round(
                "weight",
                format!("must be 1 (or left out): {system} has no round weight"),
            ));
        }
        self.refuse_ceiling(system)
    }

    /// Refuses a round with a performance ceiling, for a system (named in the reason) that
    /// has none.
    pub(crate) fn refuse_ceiling(&self, system: &str) -> Result<(), Error> {
        match self.perf_ceiling {
            Some(_) => Err(Error::round(
                "perf_ceiling",
                format!("must be left out: {system} has no performance to cap"),
            )),
            None => Ok(()),
        }
    }

    /// Refuses a round with a performance ceiling, a team or a partial play, for a system
    /// (named in the reason) that rates whole players by their ranks only.
    pub(crate) fn refuse_all_but_ranks(&self, system: &str) -> Result<(), Error> {
        self.refuse_ceiling(system)?;
        self.refuse_partial_play(system)?;
        self.refuse_teams(system)
    }

    /// Refuses a round with a team, for a system (named in the reason) that rates players only.
    pub(crate) fn refuse_teams(&self, system: &str) -> Result<(), Error> {
        match self.standings.iter().position(|s| s.team.is_some()) {
            Some(i) => Err(Error::round(
                format!("standings[{i}].team"),
                format!("must be left out: {system} rates players, not teams"),
            )),
            None => Ok(()),
        }
    }

    /// Refuses a round that gives any standing a `partial_play`, for a system (named in the
    /// reason) that has none.
    pub(crate) fn refuse_partial_play(&self, system: &str) -> Result<(), Error> {
        match self.standings.iter().position(|s| s.partial_play.is_some()) {
            Some(i) => Err(Error::round(
                format!("standings[{i}].partial_play"),
                format!("must be left out: {system} has no partial play"),
            )),
            None => Ok(()),
        }
    }
}

/// The round rearranged for the solvers.
#[derive(Debug)]
pub(crate) struct Layout {
    /// Indices into `standings` of each entrant's members (sorted by player id); entrants are
    /// sorted best rank first, then by name.
    pub entrants: Vec<Members>,
    /// Ranges of `entrants` that share a rank, best first.
    pub groups: Vec<Range<usize>>,
}

/// An entrant's members: one index held inline, as most entrants are lone players, so that
/// laying out a round allocates nothing per entrant.
pub(crate) type Members = SmallVec<[usize; 1]>;

/// Orders entrants: by rank, then lone players before teams, then by name.
type EntrantKey<'a> = (u64, bool, &'a str);

impl Layout {
    /// For each standing of a round of lone players, the number of players who finished ahead
    /// of it and the size of its tie group (itself included).
    pub(crate) fn placings(&self) -> Vec<(usize, usize)> {
        let mut placings = vec![(0, 0); self.entrants.len()];
        for range in &self.groups {
            for members in &self.entrants[range.clone()] {
                placings[members[0]] = (range.start, range.len());
            }
        }
        placings
    }

    /// The index in `groups` of each entrant's tie group.
    pub(crate) fn group_of_entrants(&self) -> Vec<usize> {
        let mut group_of = vec![0; self.entrants.len()];
        for (g, range) in self.groups.iter().enumerate() {
            group_of[range.clone()].fill(g);
        }
        group_of
    }

    pub(crate) fn of(round: &Round) -> Result<Self, Error> {
        if !(round.weight.is_finite()
            && (MIN_ROUND_WEIGHT..=MAX_ROUND_WEIGHT).contains(&round.weight))
        {
            return Err(Error::round(
                "weight",
                format!("must be a number from {MIN_ROUND_WEIGHT} to {MAX_ROUND_WEIGHT}"),
            ));
        }
        if let Some(ceiling) = round.perf_ceiling {
            // A ceiling far below every rating drags the ratings there (a Gaussian belief moves
            // toward each performance in proportion): it is bounded like the ratings are.
            if !(-MAX_ABS_RATING..=MAX_ABS_RATING).contains(&ceiling) {
                return Err(Error::round(
                    "perf_ceiling",
                    format!(
                        "must be a number from {:e} to {MAX_ABS_RATING:e}",
                        -MAX_ABS_RATING
                    ),
                ));
            }
        }
        let mut seen: HashMap<&str, usize, foldhash::fast::RandomState> =
            HashMap::with_capacity_and_hasher(round.standings.len(), Default::default());
        let mut team_ranks: HashMap<&str, u64, foldhash::fast::RandomState> = HashMap::default();
        let mut keyed: Vec<(EntrantKey<'_>, usize)> = Vec::with_capacity(round.standings.len());
        for (i, standing) in round.standings.iter().enumerate() {
            if standing.player.is_empty() {
                return Err(Error::round(
                    format!("standings[{i}].player"),
                    "must not be empty",
                ));
            }
            if let Some(share) = standing.partial_play {
                if !(share > 0.0 && share <= 1.0) {
                    return Err(Error::round(
                        format!("standings[{i}].partial_play"),
                        "must be a number in (0, 1]",
                    ));
                }
            }
            if standing.rank == 0 {
                return Err(Error::round(
                    format!("standings[{i}].rank"),
                    "must be a positive integer",
                ));
            }
            if let Some(first) = seen.insert(&standing.player, i) {
                return Err(Error::round(
                    format!("standings[{i}].player"),
                    format!(
                        "player `{}` is listed twice (also at standings[{first}])",
                        standing.player
                    ),
                ));
            }
            let key = match &standing.team {
                Some(team) if team.is_empty() => {
                    return Err(Error::round(
                        format!("standings[{i}].team"),
                        "must not be empty",
                    ));
                }
                Some(team) => {
                    let rank = *team_ranks.entry(team).or_insert(standing.rank);
                    if rank != standing.rank {
                        return Err(Error::round(
                            format!("standings[{i}].rank"),
                            format!("members of team `{team}` must share one rank"),
                        ));
                    }
                    (standing.rank, true, team.as_str())
                }
                None => (standing.rank, false, standing.player.as_str()),
            };
            keyed.push((key, i));
        }
        // Entrants in key order, a team's members by name: names are unique, so the order is
        // total and an unstable sort gives the one order there is.
        keyed.sort_unstable_by(|(a, i), (b, j)| {
            a.cmp(b)
                .then_with(|| round.standings[*i].player.cmp(&round.standings[*j].player))
        });
        let entrants: Vec<&[(EntrantKey<'_>, usize)]> =
            keyed.chunk_by(|(a, _), (b, _)| a == b).collect();
        if entrants.len() < 2 {
            return Err(Error::round(
                "standings",
                "a round needs at least 2 entrants",
            ));
        }
        let mut groups: Vec<Range<usize>> = Vec::new();
        let mut previous_rank = None;
        let mut members: Vec<Members> = Vec::with_capacity(entrants.len());
        for (index, team) in entrants.into_iter().enumerate() {
            let ((rank, _, _), _) = team[0];
            members.push(team.iter().map(|&(_, i)| i).collect());
            match groups.last_mut() {
                Some(group) if previous_rank == Some(rank) => group.end = index + 1,
                _ => groups.push(index..index + 1),
            }
            previous_rank = Some(rank);
        }
        Ok(Self {
            entrants: members,
            groups,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn members(layout: &Layout) -> Vec<Vec<usize>> {
        layout.entrants.iter().map(|m| m.to_vec()).collect()
    }

    fn field_of(round: &Round) -> String {
        match Layout::of(round) {
            Err(Error::InvalidRound { field, .. }) => field,
            other => panic!("expected a round error, got {other:?}"),
        }
    }

    #[test]
    fn groups_follow_rank_and_ignore_listing_order() {
        let round = Round::new(vec![
            Standing::solo("c", 4),
            Standing::solo("a", 1),
            Standing::solo("d", 2),
            Standing::solo("b", 2),
        ]);
        let layout = Layout::of(&round).expect("valid round");
        assert_eq!(members(&layout), vec![vec![1], vec![3], vec![2], vec![0]]);
        assert_eq!(layout.groups, vec![0..1, 1..3, 3..4]);
    }

    #[test]
    fn teams_become_one_entrant() {
        let member = |p: &str, team: &str, rank| Standing::member(p, rank, team);
        let round = Round::new(vec![
            member("y", "red", 2),
            member("x", "red", 2),
            member("z", "blue", 1),
        ]);
        let layout = Layout::of(&round).expect("valid round");
        assert_eq!(members(&layout), vec![vec![2], vec![1, 0]]);
    }

    #[test]
    fn bad_rounds_name_the_field() {
        let two = |a: Standing, b: Standing| Round::new(vec![a, b]);
        let cases = [
            (Round::new(vec![]), "standings"),
            (Round::new(vec![Standing::solo("a", 1)]), "standings"),
            (
                two(Standing::solo("a", 1), Standing::solo("a", 2)),
                "standings[1].player",
            ),
            (
                two(Standing::solo("a", 0), Standing::solo("b", 2)),
                "standings[0].rank",
            ),
            (
                two(Standing::solo("", 1), Standing::solo("b", 2)),
                "standings[0].player",
            ),
            (
                Round {
                    weight: f64::NAN,
                    ..two(Standing::solo("a", 1), Standing::solo("b", 2))
                },
                "weight",
            ),
            (
                Round {
                    weight: 1e308,
                    ..two(Standing::solo("a", 1), Standing::solo("b", 2))
                },
                "weight",
            ),
            (
                Round {
                    perf_ceiling: Some(f64::INFINITY),
                    ..two(Standing::solo("a", 1), Standing::solo("b", 2))
                },
                "perf_ceiling",
            ),
            (
                Round {
                    perf_ceiling: Some(-1e308),
                    ..two(Standing::solo("a", 1), Standing::solo("b", 2))
                },
                "perf_ceiling",
            ),
        ];
        for (round, field) in cases {
            assert_eq!(field_of(&round), field, "{round:?}");
        }
    }

    #[test]
    fn a_team_with_two_ranks_and_a_lone_team_are_errors() {
        let member = |p: &str, rank| Standing::member(p, rank, "red");
        assert_eq!(
            field_of(&Round::new(vec![member("x", 1), member("y", 2)])),
            "standings[1].rank"
        );
        assert_eq!(
            field_of(&Round::new(vec![member("x", 1), member("y", 1)])),
            "standings"
        );
    }
}
