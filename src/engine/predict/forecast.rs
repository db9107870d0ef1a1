//! Predictions for players named by id, as the service asks for them: ids resolved against a
//! [`Beliefs`] (unknown players predicted as newcomers and reported as such), the request
//! validated, and the figures asked for a set of entrants computed in one call.

use std::collections::HashMap;
use std::sync::atomic::AtomicBool;

use super::super::any::{SystemParams, SystemState};
use super::super::population::Beliefs;
use super::super::round::{Layout, Round};
use super::super::system::Performance;
use super::super::{Error, PredictionPath, PredictionProblem};
use super::{expected_ranks, first_place_probabilities, match_quality, pairwise_matrix};

/// A player id resolved against the pool's beliefs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Member<'a> {
    /// The player's state, or a newcomer's if they have not played.
    pub state: &'a SystemState,
    /// Whether the player has played in the pool.
    pub known: bool,
}

/// Resolves each id to its player's state, or to a newcomer's for an id
/// the pool has not seen; the result is aligned with `ids`.
#[must_use]
pub fn resolve<'a, B, S>(beliefs: &'a B, ids: &[S]) -> Vec<Member<'a>>
where
    B: Beliefs + ?Sized,
    S: AsRef<str>,
{
    ids.iter()
        .map(|id| match beliefs.belief(id.as_ref()) {
            Some(state) => Member { state, known: true },
            None => Member {
                state: beliefs.newcomer(),
                known: false,
            },
        })
        .collect()
}

/// The prediction for one entrant of a [`Forecast`].
#[derive(Debug, Clone, PartialEq)]
pub struct EntrantForecast {
    /// Whether each member (in the order given) has played in the pool.
    pub known: Vec<bool>,
    /// Mean of the entrant's performance: the sum of its members' ratings.
    pub mean: f64,
    /// Variance of the entrant's performance (Elo-MMR: `Σ (σ² + β²)` over its members).
    pub variance: f64,
    /// P(the entrant finishes first).
    pub p_first: f64,
    /// Expected rank, 1 being first, if asked for.
    pub expected_rank: Option<f64>,
}

/// Which figures beyond P(first) and match quality a [`forecast`] computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Figures {
    /// Each entrant's expected rank: O(k) per quadrature node.
    pub expected_ranks: bool,
    /// The pairwise matrix: O(k²) per quadrature node, so only on request.
    pub pairwise: bool,
}

/// Everything predicted about one set of entrants.
#[derive(Debug, Clone, PartialEq)]
pub struct Forecast {
    /// One per entrant, in the order given.
    pub entrants: Vec<EntrantForecast>,
    /// `[i][j]` = P(entrant `i` finishes ahead of entrant `j`); the diagonal is ½. Only if
    /// asked for.
    pub pairwise: Option<Vec<Vec<f64>>>,
    /// Match quality of the entrants as sides ([`match_quality`]).
    pub quality: f64,
}

/// P(`a` beats `b`) head to head, with whether each has played in the pool.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HeadToHead {
    /// P(`a` finishes ahead of `b`), exact in the pool's model (as in [`Forecast::pairwise`]).
    pub probability: f64,
    /// Whether `a` has played in the pool.
    pub a_known: bool,
    /// Whether `b` has played in the pool.
    pub b_known: bool,
}

/// P(player `a` beats player `b`), unknown players predicted as newcomers. An empty id is an
/// error naming `a` or `b`; the same player twice names `b`.
pub fn head_to_head<B: Beliefs + ?Sized>(
    beliefs: &B,
    a: &str,
    b: &str,
) -> Result<HeadToHead, Error> {
    for (at, id) in [(PredictionPath::A, a), (PredictionPath::B, b)] {
        if id.is_empty() {
            return Err(Error::prediction(at, PredictionProblem::EmptyId));
        }
    }
    if a == b {
        return Err(Error::prediction(
            PredictionPath::B,
            PredictionProblem::SamePlayer,
        ));
    }
    let members = resolve(beliefs, &[a, b]);
    let system = beliefs.system();
    let (a, b) = (
        system.performance(&[members[0].state])?,
        system.performance(&[members[1].state])?,
    );
    let entrants = [(a.mean, a.variance), (b.mean, b.variance)];
    // Two entrants: P(a first) is P(a ahead of b). Nobody can cancel so small a request.
    let p_first = first_place_probabilities(system.model(), &entrants, &AtomicBool::new(false))?;
    Ok(HeadToHead {
        probability: p_first[0],
        a_known: members[0].known,
        b_known: members[1].known,
    })
}

/// For entrants given as lists of player ids (a lone player is a list of one): each one's
/// P(first), the match quality, and the [`Figures`] asked for. Unknown players are predicted
/// as newcomers and marked. Errors name the field: `entrants` (fewer than two),
/// `entrants[i].players` (empty, or listing a player twice or one already in another entrant),
/// `entrants[i].players[j]` (an empty id). Setting `cancel` stops the computation with
/// [`Error::Cancelled`].
pub fn forecast<B, E, S>(
    beliefs: &B,
    entrants: &[E],
    figures: Figures,
    cancel: &AtomicBool,
) -> Result<Forecast, Error>
where
    B: Beliefs + ?Sized,
    E: AsRef<[S]>,
    S: AsRef<str>,
{
    check_entrants(entrants)?;
    let system = beliefs.system();
    let model = system.model();
    let sides: Vec<Vec<Member<'_>>> = entrants
        .iter()
        .map(|ids| resolve(beliefs, ids.as_ref()))
        .collect();
    let distributions: Vec<Performance> = sides
        .iter()
        .map(|side| {
            let members: Vec<&SystemState> = side.iter().map(|m| m.state).collect();
            system.performance(&members)
        })
        .collect::<Result<_, _>>()?;
    let performances: Vec<(f64, f64)> =
        distributions.iter().map(|p| (p.mean, p.variance)).collect();
    let quality = match_quality(&distributions)?;
    let p_first = first_place_probabilities(model, &performances, cancel)?;
    let ranks: Vec<Option<f64>> = if figures.expected_ranks {
        expected_ranks(model, &performances, cancel)?
            .into_iter()
            .map(Some)
            .collect()
    } else {
        vec![None; performances.len()]
    };
    let pairwise = if figures.pairwise {
        Some(pairwise_matrix(model, &performances, cancel)?)
    } else {
        None
    };
    let entrants = sides
        .iter()
        .zip(&performances)
        .zip(p_first.into_iter().zip(ranks))
        .map(
            |((side, &(mean, variance)), (p_first, expected_rank))| EntrantForecast {
                known: side.iter().map(|m| m.known).collect(),
                mean,
                variance,
                p_first,
                expected_rank,
            },
        )
        .collect();
    Ok(Forecast {
        entrants,
        pairwise,
        quality,
    })
}

/// Each standing's expected place in `round` before it was played, from `priors` (aligned
/// with `round.standings`, as [`SystemParams::apply`] takes them): the place its entrant (a
/// team or a lone player) would take on average among the round's entrants, `1 + Σ P(another
/// entrant finishes ahead)`, between 1 and the number of entrants. What "7th was expected"
/// means beside a round's result.
pub fn expected_places(
    system: &SystemParams,
    round: &Round,
    priors: &[&SystemState],
) -> Result<Vec<f64>, Error> {
    let layout = Layout::of(round)?;
    let performances: Vec<(f64, f64)> = layout
        .entrants
        .iter()
        .map(|members| {
            let states: Vec<&SystemState> = members.iter().map(|&i| priors[i]).collect();
            let p = system.performance(&states)?;
            Ok((p.mean, p.variance))
        })
        .collect::<Result<_, Error>>()?;
    // Nobody cancels the worker's rating of a round.
    let places = expected_ranks(system.model(), &performances, &AtomicBool::new(false))?;
    let mut by_standing = vec![1.0; round.standings.len()];
    for (members, place) in layout.entrants.iter().zip(places) {
        for &i in members {
            by_standing[i] = place;
        }
    }
    Ok(by_standing)
}

/// Refuses a request that is not a set of at least two disjoint, non-empty entrants.
fn check_entrants<E: AsRef<[S]>, S: AsRef<str>>(entrants: &[E]) -> Result<(), Error> {
    if entrants.len() < 2 {
        return Err(Error::prediction(
            PredictionPath::Entrants,
            PredictionProblem::TooFewEntrants,
        ));
    }
    let mut owner: HashMap<&str, usize> = HashMap::new();
    for (i, ids) in entrants.iter().enumerate() {
        let ids = ids.as_ref();
        if ids.is_empty() {
            return Err(Error::prediction(
                PredictionPath::Entrant(i),
                PredictionProblem::NoPlayers,
            ));
        }
        for (j, id) in ids.iter().enumerate() {
            let id = id.as_ref();
            if id.is_empty() {
                return Err(Error::prediction(
                    PredictionPath::Member(i, j),
                    PredictionProblem::EmptyId,
                ));
            }
            if let Some(previous) = owner.insert(id, i) {
                let problem = PredictionProblem::Repeated {
                    player: id.to_owned(),
                    first: (previous != i).then_some(previous),
                };
                return Err(Error::prediction(PredictionPath::Entrant(i), problem));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::super::super::population::Population;
    use super::super::super::round::{Round, Standing};
    use super::super::match_quality_two;
    use super::*;
    use crate::elo_mmr::params::EloMmrParams;

    /// Every figure.
    const ALL: Figures = Figures {
        expected_ranks: true,
        pairwise: true,
    };

    /// A cancel flag nobody sets.
    static GO: AtomicBool = AtomicBool::new(false);

    /// Agreement expected between two routes to the same number.
    const AGREEMENT: f64 = 1e-12;

    /// A pool where `alice` beat `bob` once; nobody else has played.
    fn pool() -> Population {
        let mut population = match Population::new(EloMmrParams::default()) {
            Ok(p) => p,
            Err(e) => panic!("default parameters refused: {e}"),
        };
        let round = Round::new(vec![Standing::solo("alice", 1), Standing::solo("bob", 2)]);
        if let Err(e) = population.apply(&round) {
            panic!("round refused: {e}");
        }
        population
    }

    fn forecast_of(population: &Population, entrants: &[&[&str]]) -> Forecast {
        match forecast(population, entrants, ALL, &GO) {
            Ok(f) => f,
            Err(e) => panic!("valid request refused: {e}"),
        }
    }

    #[test]
    fn unknown_players_are_predicted_as_newcomers_and_marked_unknown() {
        let population = pool();
        let members = resolve(&population, &["alice", "carol"]);
        assert!(members[0].known && !members[1].known);
        assert_eq!(members[1].state, &population.system().newcomer());
        let f = forecast_of(&population, &[&["alice", "carol"], &["bob"], &["dave"]]);
        let known: Vec<&[bool]> = f.entrants.iter().map(|e| e.known.as_slice()).collect();
        assert_eq!(known, [&[true, false][..], &[true], &[false]]);
    }

    #[test]
    fn a_bad_request_is_refused_with_the_field_at_fault() {
        let population = pool();
        let cases: [(&[&[&str]], &str, &str); 6] = [
            (&[], "entrants", "no entrants"),
            (&[&["alice"]], "entrants", "one entrant"),
            (
                &[&["alice"], &[]],
                "entrants[1].players",
                "an empty entrant",
            ),
            (
                &[&["alice"], &["bob"], &["carol", "alice"]],
                "entrants[2].players",
                "a player in two entrants",
            ),
            (
                &[&["alice", "alice"], &["bob"]],
                "entrants[0].players",
                "a player twice in one entrant",
            ),
            (
                &[&["alice"], &["bob", ""]],
                "entrants[1].players[1]",
                "an empty id",
            ),
        ];
        for (entrants, field, case) in cases {
            let error = forecast(&population, entrants, ALL, &GO).err();
            assert!(
                matches!(error, Some(Error::InvalidPrediction { .. })),
                "{case}: {error:?}"
            );
            assert_eq!(
                error.as_ref().and_then(Error::field).as_deref(),
                Some(field),
                "{case}"
            );
        }
    }

    #[test]
    fn a_head_to_head_of_one_player_against_themself_is_refused() {
        let population = pool();
        let error = head_to_head(&population, "alice", "alice").err();
        assert_eq!(error.as_ref().and_then(Error::field).as_deref(), Some("b"));
        let error = head_to_head(&population, "", "bob").err();
        assert_eq!(error.as_ref().and_then(Error::field).as_deref(), Some("a"));
    }

    #[test]
    fn the_winner_of_the_only_round_is_favoured_over_the_loser_and_a_newcomer() {
        let population = pool();
        let f = forecast_of(&population, &[&["alice"], &["bob"], &["carol"]]);
        assert!(f.entrants[0].p_first > f.entrants[2].p_first);
        assert!(f.entrants[2].p_first > f.entrants[1].p_first);
        assert!(f.entrants[0].expected_rank < f.entrants[2].expected_rank);
        let lean = forecast(
            &population,
            &[&["alice"], &["bob"]],
            Figures::default(),
            &GO,
        );
        let lean = lean.expect("a valid request");
        assert!(lean.pairwise.is_none() && lean.entrants[0].expected_rank.is_none());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]

        #[test]
        fn two_entrants_agree_with_head_to_head_and_the_two_side_quality(
            a in prop::sample::select(vec!["alice", "bob", "carol"]),
            b in prop::sample::select(vec!["dave", "bob", "alice"]),
        ) {
            prop_assume!(a != b);
            let population = pool();
            let f = forecast_of(&population, &[&[a], &[b]]);
            let h2h = head_to_head(&population, a, b);
            let pairwise = f.pairwise.expect("asked for");
            prop_assert!(matches!(h2h, Ok(h) if (h.probability - pairwise[0][1]).abs() < 1e-9));
            prop_assert!((f.entrants[0].p_first - pairwise[0][1]).abs() < 1e-9);
            let members = resolve(&population, &[a, b]);
            let system = population.system();
            let performance = |m: Member<'_>| system.performance(&[m.state]).expect("one system");
            let two = match_quality_two(&performance(members[0]), &performance(members[1]));
            prop_assert!((two - f.quality).abs() < AGREEMENT);
        }

        #[test]
        fn a_forecast_of_teams_is_consistent(split in 1..4usize) {
            let population = pool();
            let players = ["alice", "bob", "carol", "dave"];
            let (left, right) = players.split_at(split);
            let f = forecast_of(&population, &[left, right, &["erin"]]);
            let p_sum: f64 = f.entrants.iter().map(|e| e.p_first).sum();
            let rank_sum: f64 = f.entrants.iter().filter_map(|e| e.expected_rank).sum();
            prop_assert!((p_sum - 1.0).abs() < AGREEMENT);
            prop_assert!((rank_sum - 6.0).abs() < 1e-9);
            prop_assert!(f.quality > 0.0 && f.quality <= 1.0);
            let beta2 = EloMmrParams::default().beta.powi(2);
            prop_assert!(f.entrants[0].variance > split as f64 * beta2);
        }
    }

    proptest! {
        #[test]
        fn expected_places_are_the_entrants_expected_ranks_shared_by_team_members(
            mus in prop::collection::vec(1000.0f64..2000.0, 3..9),
            teamed in any::<bool>(),
        ) {
            let system = SystemParams::EloMmr(EloMmrParams::default());
            let newcomer = system.newcomer();
            let states: Vec<SystemState> = mus
                .iter()
                .map(|&mu| {
                    let SystemState::EloMmr(mut state) = newcomer.clone() else {
                        unreachable!("an Elo-MMR pool")
                    };
                    state.mu = mu;
                    SystemState::EloMmr(state)
                })
                .collect();
            // With `teamed`, players 0 and 1 form one team; the others play alone.
            let standings: Vec<Standing> = (0..mus.len())
                .map(|i| match i {
                    0 | 1 if teamed => Standing::member(format!("p{i}"), 1, "duo"),
                    _ => Standing::solo(format!("p{i}"), i as u64 + 1),
                })
                .collect();
            let round = Round::new(standings);
            let priors: Vec<&SystemState> = states.iter().collect();
            let places = expected_places(&system, &round, &priors).expect("a valid round");
            let entrants = if teamed { mus.len() - 1 } else { mus.len() };
            let mut distinct: Vec<f64> = places.clone();
            if teamed {
                prop_assert_eq!(places[0], places[1]);
                distinct.remove(1);
            }
            let sum: f64 = distinct.iter().sum();
            let n = entrants as f64;
            prop_assert!((sum - n * (n + 1.0) / 2.0).abs() < 1e-6, "{:?}", places);
            prop_assert!(places.iter().all(|&p| (1.0..=n).contains(&p)));
            // A stronger lone player is expected to finish ahead of a weaker one.
            for i in 2..mus.len() {
                for j in 2..mus.len() {
                    if mus[i] > mus[j] + 1e-6 {
                        prop_assert!(places[i] < places[j]);
                    }
                }
            }
        }
    }
}
