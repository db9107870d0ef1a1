//! One pool's readable state at one moment ([`PoolState`]): its rating system, every rated
//! player's belief and last round, the leaderboards and leagues, all consistent with each
//! other; what the worker derives round by round and readers share without a lock.

use std::ops::Bound;
use std::sync::Arc;

use imbl::{OrdMap, OrdSet};

use super::as_of::{AsOfBoard, AsOfPlayers, Then};
use super::leaderboard::{self, Filter, Kept, Leaderboard, Move, Order, Standing};
use crate::display::leagues::Entrant;
use crate::display::{Display, LeagueMove, LeagueTable, Placement, Resolved, Shown, Spread};
use crate::engine::{self, Beliefs, SoftReset, SystemParams, SystemState};
use crate::storage::{LoadedPool, RatedAsOf, StoredPlayer};

/// Why stored players could not be loaded into a pool.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The pool's parameters are out of range.
    #[error(transparent)]
    Params(#[from] engine::Error),
    /// A stored league or division does not fit the pool's leagues.
    #[error("{0}")]
    Leagues(String),
}

/// One round's entrants as a snapshot holds them ([`PoolState::entrants`]): each one's name
/// and state, `None` for a player not rated yet.
#[derive(Debug)]
pub struct Entrants(Vec<Option<(Arc<str>, Arc<Rated>)>>);

impl Entrants {
    /// Each entrant's state before the round, in order, from `state` (the snapshot these were
    /// looked up on): its newcomer's for the players it has not rated.
    #[must_use]
    pub fn priors<'a>(&'a self, state: &'a PoolState) -> Vec<&'a SystemState> {
        self.0
            .iter()
            .map(|e| {
                e.as_ref()
                    .map_or(&state.newcomer, |(_, rated)| &rated.state)
            })
            .collect()
    }
}

/// One player's part in a committed round.
#[derive(Debug, Clone)]
pub struct Played {
    /// The player.
    pub player: String,
    /// Their rank in the round.
    pub rank: u64,
    /// Their rating before it.
    pub before: engine::Rating,
    /// Their state after it.
    pub state: SystemState,
    /// The round.
    pub last_round: LastRound,
}

/// The round a player last played: one allocation shared by every player whose last round it
/// is, so a player holds a pointer to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LastRound(Arc<RoundOf>);

/// What [`LastRound`] says of the round.
#[derive(Debug, PartialEq, Eq)]
pub struct RoundOf {
    /// Its id.
    pub id: Arc<str>,
    /// Its time (seconds since the Unix epoch), if it had one.
    pub time: Option<i64>,
    /// Its seq (0 for none: a player stored without any history row, which only a database
    /// written before history rows were chained can hold).
    pub seq: i64,
}

impl LastRound {
    /// Round `id` at `seq`, played at `time`.
    #[must_use]
    pub fn new(id: Arc<str>, time: Option<i64>, seq: i64) -> Self {
        Self(Arc::new(RoundOf { id, time, seq }))
    }
}

impl std::ops::Deref for LastRound {
    type Target = RoundOf;

    fn deref(&self) -> &RoundOf {
        &self.0
    }
}

/// What a round did to one of its players besides their state.
#[derive(Debug, Clone, PartialEq)]
pub struct Entered {
    /// Their league before and after.
    pub league: LeagueMove,
    /// The seq of the round they played before this one (none for their first).
    pub previous: Option<i64>,
}

/// A player as a leaderboard row shows them, now or on a past board.
#[derive(Debug, Clone, PartialEq)]
pub struct Listed {
    /// Their rating.
    pub rating: engine::Rating,
    /// What the pool's display settings derive from it.
    pub shown: Shown,
    /// Rounds played.
    pub rounds: u64,
    /// The last round played.
    pub last_round: LastRound,
    /// The player's league and division, if the pool has leagues and has placed them.
    pub league: Option<Placement>,
    /// What their last round did to the rating: `None` before any round, and once a season
    /// start has reset the rating since.
    pub last_change: Option<LastChange>,
}

/// How far one round moved a player's rating, as the pool's display settings show it now
/// (those of the moment the read is answered, as every shown value is).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LastChange {
    /// Of μ.
    pub mu: f64,
    /// Of μ − kσ.
    pub conservative: f64,
    /// Of the fixed-range rating, if the pool shows one.
    pub display_rating: Option<f64>,
}

impl LastChange {
    /// From `before` to `after` (what `after` shows), shown by `display` with `range`.
    pub(super) fn between(
        display: &Display,
        range: Option<Resolved>,
        before: engine::Rating,
        after: &Shown,
        mu: f64,
    ) -> Self {
        Self {
            mu: mu - before.mu,
            conservative: after.conservative - display.conservative(before),
            display_rating: range
                .zip(after.display_rating)
                .map(|(range, after)| after - range.display(before.mu)),
        }
    }
}

/// A player's rating as the API shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct PlayerRating {
    /// The player's id.
    pub player: Arc<str>,
    /// Their rating, what it shows, their rounds, last round, league and last change.
    pub listed: Listed,
    /// 1-based place on the leaderboard asked for (the pool's default one, unless the request
    /// named another); `None` when it does not list the player (a provisional player, when it
    /// lists established players only).
    pub position: Option<usize>,
    /// Players on that leaderboard.
    pub total: usize,
}

/// What a snapshot holds for one rated player. Shared between snapshots until the player
/// plays again: an Elo-MMR belief holds up to `history_limit` factors, too many to copy.
#[derive(Debug)]
struct Rated {
    state: SystemState,
    last_round: LastRound,
    /// Rounds played when the current season started: placement counts the rounds since.
    season_base: u64,
    /// The rating before the last round ([`Listed::before`]).
    before: Option<engine::Rating>,
}

/// One pool's readable state at one moment: rating system, every rated player and both
/// leaderboard orders, all consistent with each other. Cloning is O(1).
#[derive(Debug, Clone)]
pub struct PoolState {
    system: SystemParams,
    display: Display,
    newcomer: SystemState,
    players: OrdMap<Arc<str>, Arc<Rated>>,
    /// Every rated player's id by its lowercase form, then as written: where a search by
    /// prefix that ignores case looks. An id in lowercase already shares its allocation.
    folded: OrdSet<(Arc<str>, Arc<str>)>,
    leaderboard: Leaderboard,
    /// The rated players' μ, for the fixed-range rating's automatic center and scale.
    spread: Spread,
    /// Every placed player's league and division.
    leagues: LeagueTable,
    applied: u64,
    /// The seq of the last line of the pool's stream applied here (0 before the first): a
    /// process that does not own the pool reads on from it.
    last_seq: i64,
}

/// `id`'s entry in [`PoolState::folded`].
fn folded(id: &Arc<str>) -> (Arc<str>, Arc<str>) {
    let lower = id.to_lowercase();
    if *lower == **id {
        (Arc::clone(id), Arc::clone(id))
    } else {
        (Arc::from(lower), Arc::clone(id))
    }
}

/// The leaderboard lists `display` needs.
fn kept(display: &Display) -> Kept {
    Kept {
        established: display.has_provisional(),
        leagues: display.leagues.as_ref().map_or(0, |l| l.tiers.len()),
    }
}

impl PoolState {
    /// A pool nobody has played in yet, shown as `display` says (validated by the caller).
    pub fn new(system: SystemParams, display: Display) -> Result<Self, engine::Error> {
        system.validate()?;
        Ok(Self {
            newcomer: system.newcomer(),
            system,
            leaderboard: Leaderboard::new(display.conservative_k, kept(&display)),
            leagues: LeagueTable::new(display.leagues.as_ref()),
            display,
            players: OrdMap::new(),
            folded: OrdSet::new(),
            spread: Spread::default(),
            applied: 0,
            last_seq: 0,
        })
    }

    /// A pool rebuilt from its stored players, after `applied` lines, the last at `last_seq`.
    pub fn load(
        system: SystemParams,
        display: Display,
        stored: Vec<StoredPlayer>,
        applied: u64,
        last_seq: i64,
    ) -> Result<Self, LoadError> {
        let mut state = Self::new(system, display)?;
        let mut placements = Vec::new();
        let mut rounds: std::collections::HashMap<i64, LastRound> =
            std::collections::HashMap::new();
        let players: Vec<(Arc<str>, Arc<Rated>)> = stored
            .into_iter()
            .map(|p| {
                let round =
                    || LastRound::new(Arc::from(p.last_round_id), p.last_round_time, p.last_seq);
                // Players whose last round is the same share it (0: no round to share).
                let last_round = if p.last_seq > 0 {
                    rounds.entry(p.last_seq).or_insert_with(round).clone()
                } else {
                    round()
                };
                let rated = Rated {
                    state: p.state,
                    last_round,
                    season_base: p.season_base,
                    before: p.before,
                };
                let player: Arc<str> = Arc::from(p.player);
                if p.league.is_some() || p.bonus_spent != 0.0 {
                    placements.push((Arc::clone(&player), p.league, p.bonus_spent));
                }
                (player, Arc::new(rated))
            })
            .collect();
        state.leagues = LeagueTable::from_placements(
            state.display.leagues.as_ref(),
            placements
                .iter()
                .map(|(player, placement, spent)| (player, placement.as_ref(), *spent)),
        )
        .map_err(LoadError::Leagues)?;
        for (_, rated) in &players {
            state.spread.add(rated.state.rating().mu);
        }
        state.folded = players.iter().map(|(id, _)| folded(id)).collect();
        state.players = players.into_iter().collect();
        state.leaderboard = state.rebuilt_leaderboard();
        state.applied = applied;
        state.last_seq = last_seq;
        Ok(state)
    }

    /// A pool as one snapshot of the database holds it.
    pub fn from_loaded(loaded: LoadedPool) -> Result<Self, LoadError> {
        let LoadedPool {
            progress,
            players,
            last_seq,
        } = loaded;
        Self::load(
            progress.params,
            progress.display,
            players,
            progress.applied,
            last_seq,
        )
    }

    /// This snapshot shown with `display` instead (validated by the caller), whose leagues
    /// must be this snapshot's: the same players, the leaderboards sorted again. O(n log n).
    #[must_use]
    pub fn with_display(&self, display: Display) -> Self {
        debug_assert_eq!(display.leagues, self.display.leagues);
        let mut state = Self {
            display,
            ..self.clone()
        };
        state.leaderboard = state.rebuilt_leaderboard();
        state
    }

    /// This snapshot shown with `display`, its players placed as `leagues` says (recomputed
    /// for `display`'s leagues). O(n log n).
    #[must_use]
    pub fn with_leagues(&self, display: Display, leagues: LeagueTable) -> Self {
        let mut state = Self {
            display,
            leagues,
            ..self.clone()
        };
        state.leaderboard = state.rebuilt_leaderboard();
        state
    }

    fn rebuilt_leaderboard(&self) -> Leaderboard {
        Leaderboard::from_players(
            self.display.conservative_k,
            kept(&self.display),
            self.players.iter().map(|(id, rated)| {
                let standing = self.standing(id, &rated.state, &rated.last_round);
                (Arc::clone(id), standing)
            }),
        )
    }

    fn standing(&self, player: &str, state: &SystemState, last: &LastRound) -> Standing {
        self.standing_of(
            state.rating(),
            state.rounds(),
            self.leagues.league_of(player),
            last,
        )
    }

    fn standing_of(
        &self,
        rating: engine::Rating,
        rounds: u64,
        league: Option<u16>,
        last: &LastRound,
    ) -> Standing {
        Standing {
            rating,
            established: !self.display.provisional(rounds, rating),
            league,
            last: leaderboard::minute(last.time),
        }
    }

    /// The pool's display settings.
    #[must_use]
    pub fn display(&self) -> &Display {
        &self.display
    }

    /// The fixed-range rating's center and scale now; `None` if the pool shows none (or its
    /// center is automatic and nobody is rated).
    #[must_use]
    pub fn fixed_range(&self) -> Option<Resolved> {
        self.display
            .resolve(&self.spread, self.leaderboard.extremes())
    }

    /// What the display settings derive from `state`.
    #[must_use]
    pub fn show(&self, state: &SystemState) -> Shown {
        self.display
            .show(self.fixed_range(), state.rating(), state.rounds())
    }

    /// The pool as it stood after some round, from `rated` (every player rated by then, as
    /// after their last round), shown with today's display settings. `seasons` are the
    /// season starts applied by then, by seq: each soft-reset the ratings of players who had
    /// not played since and took them out of their leagues. O(n log n).
    #[must_use]
    pub fn as_of(&self, rated: Vec<RatedAsOf>, seasons: &[(i64, SoftReset)]) -> AsOfBoard {
        let newcomer = self.newcomer.rating();
        self.board_of(
            rated
                .into_iter()
                .map(|mut r| {
                    for (_, reset) in seasons.iter().filter(|(seq, _)| *seq > r.seq) {
                        r.rating = reset.rating(r.rating, newcomer);
                        r.league = None;
                    }
                    let reset = seasons.iter().any(|(seq, _)| *seq > r.seq);
                    let then = Then {
                        rating: r.rating,
                        rounds: r.rounds,
                        last_round: LastRound::new(
                            Arc::from(r.last_round_id),
                            r.last_round_time,
                            r.seq,
                        ),
                        league: r.league,
                        before: (!reset).then_some(r.before),
                    };
                    (Arc::from(r.player), then)
                })
                .collect(),
        )
    }

    /// The standings of a season that started at seq `after` and is still open: every player
    /// whose last round came after it, as they stand now. O(n log n), sharing the players'
    /// ids and last rounds with this state rather than copying them (a board of a pool's
    /// every player is rebuilt after each applied line while someone reads it).
    #[must_use]
    pub fn season_board(&self, after: i64) -> AsOfBoard {
        self.board_of(
            self.players
                .iter()
                .filter(|(_, rated)| rated.last_round.seq > after)
                .map(|(id, rated)| {
                    let then = Then {
                        rating: rated.state.rating(),
                        rounds: rated.state.rounds(),
                        last_round: rated.last_round.clone(),
                        league: self.leagues.placement_of(id),
                        before: rated.before,
                    };
                    (Arc::clone(id), then)
                })
                .collect(),
        )
    }

    /// A board of `players`, shown with today's display settings.
    fn board_of(&self, players: Vec<(Arc<str>, Then)>) -> AsOfBoard {
        let mut spread = Spread::default();
        let mut standings = Vec::with_capacity(players.len());
        let mut map = AsOfPlayers::with_capacity_and_hasher(players.len(), Default::default());
        for (player, then) in players {
            spread.add(then.rating.mu);
            let league = then.league.as_ref().and_then(|placement| {
                let index = self.display.leagues.as_ref()?.index(&placement.league)?;
                u16::try_from(index).ok()
            });
            standings.push((
                Arc::clone(&player),
                self.standing_of(then.rating, then.rounds, league, &then.last_round),
            ));
            map.insert(player, then);
        }
        AsOfBoard {
            leaderboard: Leaderboard::from_players(
                self.display.conservative_k,
                kept(&self.display),
                standings.into_iter(),
            ),
            display: self.display.clone(),
            spread,
            players: map,
        }
    }

    /// Lines (rounds, season starts, corrections) whose effects this state holds.
    #[must_use]
    pub fn applied(&self) -> u64 {
        self.applied
    }

    /// The seq of the last line applied here (0 before the first).
    #[must_use]
    pub fn last_seq(&self) -> i64 {
        self.last_seq
    }

    /// The players `ids` (one round's entrants) as this snapshot holds them, looked up once.
    /// O(k log n) for k players.
    #[must_use]
    pub fn entrants<'a>(&self, ids: impl Iterator<Item = &'a str>) -> Entrants {
        Entrants(
            ids.map(|id| {
                self.players
                    .get_key_value(id)
                    .map(|(name, rated)| (Arc::clone(name), Arc::clone(rated)))
            })
            .collect(),
        )
    }

    /// Records the round at `seq`: its players' states, and the leagues they move to, which
    /// it returns in the order given with the round each played before. O(k log n) for k
    /// players.
    pub fn apply(&mut self, seq: i64, players: Vec<Played>) -> Vec<Entered> {
        let entrants = self.entrants(players.iter().map(|p| p.player.as_str()));
        self.apply_entrants(seq, players, entrants)
    }

    /// [`Self::apply`] for `held`, which [`Self::entrants`] looked up on this snapshot,
    /// unchanged since, for `players` in their order: the worker looks a round's entrants up
    /// once, for their priors and for this.
    pub fn apply_entrants(
        &mut self,
        seq: i64,
        players: Vec<Played>,
        held: Entrants,
    ) -> Vec<Entered> {
        debug_assert!(
            players.len() == held.0.len()
                && held.0.iter().zip(&players).all(|(held, played)| {
                    held.as_ref()
                        .is_none_or(|(name, _)| **name == *played.player)
                })
        );
        // Each player's standing before the round, the rounds they had played when the season
        // started (0 for a newcomer) and the round they played before.
        let mut befores = Vec::with_capacity(players.len());
        let mut bases = Vec::with_capacity(players.len());
        let mut previous = Vec::with_capacity(players.len());
        for (p, old) in players.iter().zip(&held.0) {
            let old = old.as_ref().map(|(_, rated)| rated);
            befores.push(old.map(|old| self.standing(&p.player, &old.state, &old.last_round)));
            bases.push(old.map_or(0, |old| old.season_base));
            previous.push(old.map(|old| old.last_round.seq).filter(|&seq| seq > 0));
        }
        let entrants: Vec<Entrant<'_>> = players
            .iter()
            .zip(&bases)
            .map(|(p, &base)| Entrant {
                player: &p.player,
                rank: p.rank,
                rating: p.state.rating(),
                prior: p.before.mu,
                rounds: p.state.rounds().saturating_sub(base),
                time: p.last_round.time,
            })
            .collect();
        let league_moves = self.leagues.settle(&entrants);
        let moves: Vec<Move> = players
            .into_iter()
            .zip(held.0)
            .zip(befores)
            .zip(bases)
            .map(|(((played, old), before), season_base)| {
                let name = match old {
                    Some((name, _)) => name,
                    None => {
                        let name: Arc<str> = Arc::from(played.player);
                        self.folded.insert(folded(&name));
                        name
                    }
                };
                if let Some(before) = before {
                    self.spread.remove(before.rating.mu);
                }
                let after = self.standing(&name, &played.state, &played.last_round);
                self.spread.add(after.rating.mu);
                let m = Move {
                    player: Arc::clone(&name),
                    before,
                    after,
                };
                let rated = Rated {
                    state: played.state,
                    last_round: played.last_round,
                    season_base,
                    before: Some(played.before),
                };
                self.players.insert(name, Arc::new(rated));
                m
            })
            .collect();
        self.leaderboard.update(&moves);
        self.applied += 1;
        self.last_seq = seq;
        league_moves
            .into_iter()
            .zip(previous)
            .map(|(league, previous)| Entered { league, previous })
            .collect()
    }

    /// The pool after the season start at `seq`: every player's state after the soft
    /// `reset`, nobody in a league. O(n log n) for n players.
    #[must_use]
    pub fn new_season(&self, seq: i64, reset: SoftReset) -> Self {
        let mut next = Self {
            leagues: self.leagues.new_season(),
            spread: Spread::default(),
            ..self.clone()
        };
        next.players = self
            .players
            .iter()
            .map(|(id, rated)| {
                let rated = Rated {
                    state: self.system.soft_reset(&rated.state, reset),
                    last_round: rated.last_round.clone(),
                    season_base: rated.state.rounds(),
                    before: None,
                };
                next.spread.add(rated.state.rating().mu);
                (Arc::clone(id), Arc::new(rated))
            })
            .collect();
        next.leaderboard = next.rebuilt_leaderboard();
        next.applied += 1;
        next.last_seq = seq;
        next
    }

    /// Every placed player's league and division.
    #[must_use]
    pub fn leagues(&self) -> &LeagueTable {
        &self.leagues
    }

    /// Players rated so far.
    #[must_use]
    pub fn len(&self) -> usize {
        self.leaderboard.len()
    }

    /// Whether nobody is rated yet.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.leaderboard.is_empty()
    }

    /// A rated player, placed on the pool's default leaderboard.
    #[must_use]
    pub fn player(&self, id: &str) -> Option<PlayerRating> {
        let (order, filter) = Order::default_board(&self.display);
        self.player_on(id, order, filter)
    }

    /// A rated player, placed on the leaderboard of `order` that `filter` lists.
    #[must_use]
    pub fn player_on(&self, id: &str, order: Order, filter: Filter) -> Option<PlayerRating> {
        let (name, _) = self.players.get_key_value(id)?;
        let listed = self.listed(id)?;
        Some(PlayerRating {
            player: Arc::clone(name),
            position: self
                .leaderboard
                .position_of(order, filter, listed.rating, id)
                .map(|index| index + 1),
            total: self.leaderboard.count(filter),
            listed,
        })
    }

    /// A rated player as a leaderboard row shows them.
    #[must_use]
    pub fn listed(&self, id: &str) -> Option<Listed> {
        let rated = self.players.get(id)?;
        let range = self.fixed_range();
        let rating = rated.state.rating();
        let shown = self.display.show(range, rating, rated.state.rounds());
        Some(Listed {
            last_change: rated
                .before
                .map(|before| LastChange::between(&self.display, range, before, &shown, rating.mu)),
            rating,
            shown,
            rounds: rated.state.rounds(),
            last_round: rated.last_round.clone(),
            league: self.leagues.placement_of(id),
        })
    }

    /// Every rated player's state and last round, by id.
    pub fn rated(&self) -> impl Iterator<Item = (&str, &SystemState, &LastRound)> {
        self.players
            .iter()
            .map(|(id, rated)| (&**id, &rated.state, &rated.last_round))
    }

    /// Every rated player's state, by id.
    pub fn beliefs(&self) -> impl Iterator<Item = (&str, &SystemState)> {
        self.players.iter().map(|(id, rated)| (&**id, &rated.state))
    }

    /// The leaderboard itself.
    #[must_use]
    pub fn leaderboard(&self) -> &Leaderboard {
        &self.leaderboard
    }

    /// Up to `limit` rated players whose id starts with `prefix`, case ignored: by their id in
    /// lowercase, then as written (ids that differ only by case: capitals first, as Unicode
    /// orders them).
    #[must_use]
    pub fn with_prefix(&self, prefix: &str, limit: usize) -> Vec<PlayerRating> {
        let prefix: Arc<str> = Arc::from(prefix.to_lowercase());
        let from = (Arc::clone(&prefix), Arc::from(""));
        self.folded
            .range((Bound::Included(from), Bound::Unbounded))
            .take_while(|(lower, _)| lower.starts_with(&*prefix))
            .take(limit)
            .filter_map(|(_, id)| self.player(id))
            .collect()
    }
}

impl Beliefs for PoolState {
    fn system(&self) -> &SystemParams {
        &self.system
    }

    fn belief(&self, id: &str) -> Option<&SystemState> {
        self.players.get(id).map(|rated| &rated.state)
    }

    fn newcomer(&self) -> &SystemState {
        &self.newcomer
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::display::DefaultOrder;
    use crate::engine::{EloMmrParams, EloMmrState};
    use crate::pools::leaderboard::Filter;

    fn last(id: &str, seq: i64) -> LastRound {
        LastRound::new(Arc::from(id), None, seq)
    }

    fn played(player: &str, rank: u64, state: SystemState, round: &str) -> Played {
        Played {
            player: player.to_owned(),
            rank,
            before: engine::Rating {
                mu: 1500.0,
                sigma: Some(350.0),
            },
            state,
            last_round: last(round, 0),
        }
    }

    #[test]
    fn committed_players_are_found_by_id_position_and_prefix() {
        let params = EloMmrParams::default();
        let mut state =
            PoolState::new(params.into(), Display::default()).expect("default parameters");
        let mut strong = EloMmrState::new(&params);
        strong.mu = 1800.0;
        let newcomer = || SystemState::EloMmr(EloMmrState::new(&params));
        state.apply(
            1,
            vec![
                played("bob", 2, newcomer(), "r1"),
                played("bea", 1, SystemState::EloMmr(strong), "r1"),
                played("al", 2, newcomer(), "r1"),
            ],
        );
        let bea = state.player("bea").expect("rated");
        assert_eq!(
            (bea.position, bea.total, bea.listed.rating.mu),
            (None, 0, 1800.0),
            "one round"
        );
        let everyone = Display {
            default_order: DefaultOrder::Mu,
            list_provisional: true,
            ..Display::default()
        };
        let state = state.with_display(everyone);
        let bea = state.player("bea").expect("rated");
        assert_eq!((bea.position, bea.total), (Some(1), 3));
        assert_eq!(state.player("al").expect("rated").position, Some(2));
        assert_eq!(state.player("nobody"), None);
        let found: Vec<_> = state
            .with_prefix("b", 10)
            .into_iter()
            .map(|p| p.player.to_string())
            .collect();
        assert_eq!(found, ["bea", "bob"]);
        assert_eq!(state.with_prefix("b", 1).len(), 1);
        assert_eq!(state.len(), 3);
    }

    #[test]
    fn a_player_keeps_the_rating_their_last_round_started_from_until_a_season_resets_it() {
        let params = EloMmrParams::default();
        let mut state = PoolState::new(params.into(), Display::default()).expect("valid");
        let newcomer = || SystemState::EloMmr(EloMmrState::new(&params));
        state.apply(1, vec![played("al", 1, newcomer(), "r1")]);
        let change = |state: &PoolState| state.listed("al").expect("rated").last_change;
        // A newcomer's state is 1500 ± 350; `played` says they came from 1500 ± 350.
        let same = LastChange {
            mu: 0.0,
            conservative: 0.0,
            display_rating: None,
        };
        assert_eq!(change(&state), Some(same));
        let mut next = played("al", 1, newcomer(), "r2");
        next.before = engine::Rating {
            mu: 1480.0,
            sigma: Some(360.0),
        };
        next.last_round = last("r2", 2);
        state.apply(2, vec![next]);
        let moved = LastChange {
            mu: 20.0,
            conservative: 50.0,
            display_rating: None,
        };
        assert_eq!(change(&state), Some(moved));
        assert_eq!(
            state
                .season_board(0)
                .listed("al")
                .expect("listed")
                .last_change,
            Some(moved)
        );
        let state = state.new_season(
            3,
            SoftReset {
                mu: 0.5,
                sigma: 0.5,
            },
        );
        assert_eq!(change(&state), None, "reset since");
    }

    #[test]
    fn a_prefix_finds_players_whatever_the_case_of_either() {
        let params = EloMmrParams::default();
        let mut state = PoolState::new(params.into(), Display::default()).expect("valid");
        let newcomer = || SystemState::EloMmr(EloMmrState::new(&params));
        state.apply(
            1,
            [
                "hamilton", "Hamada", "HAM", "ham", "Ölund", "öberg", "bottas",
            ]
            .into_iter()
            .map(|id| played(id, 1, newcomer(), "r1"))
            .collect(),
        );
        let found = |prefix: &str| -> Vec<String> {
            state
                .with_prefix(prefix, 10)
                .into_iter()
                .map(|p| p.player.to_string())
                .collect()
        };
        // By the id in lowercase, then as written: `HAM` before `ham`.
        assert_eq!(found("Ham"), ["HAM", "ham", "Hamada", "hamilton"]);
        assert_eq!(found("HAMI"), ["hamilton"]);
        assert_eq!(found("ö"), ["öberg", "Ölund"]);
        assert_eq!(found("x"), Vec::<String>::new());
        assert_eq!(found("").len(), 7);
    }

    proptest::proptest! {
        #[test]
        fn a_pool_updated_round_by_round_shows_what_a_fresh_load_of_it_shows(
            rounds in proptest::collection::vec(
                proptest::collection::vec((0u8..12, 1_000i32..2_000, 50u8..200), 1..6), 1..12),
            seasons in proptest::collection::btree_set(0usize..12, 0..3),
        ) {
            let params = EloMmrParams::default();
            let display: Display = serde_json::from_str(
                r#"{"conservative_k": 1.5, "fixed_range": {"max": 1000},
                    "provisional": {"min_rounds": 2, "max_sigma": 150},
                    "leagues": {"k": 1, "placement_rounds": 1, "division_size": 2, "tiers": [
                        {"name": "low"}, {"name": "mid", "threshold": 1300},
                        {"name": "high", "threshold": 1600}]}}"#,
            )
            .expect("valid settings");
            let mut state = PoolState::new(params.into(), display.clone()).expect("valid");
            let mut played = std::collections::BTreeMap::new();
            let mut seq = 1;
            for (r, round) in rounds.iter().enumerate() {
                if seasons.contains(&r) {
                    state = state.new_season(seq, SoftReset { mu: 0.3, sigma: 0.5 });
                    seq += 1;
                    proptest::prop_assert!(state.leagues().counts().iter().all(|c| c.players == 0));
                }
                let mut seen = std::collections::HashSet::new();
                let entrants = round
                    .iter()
                    .filter(|(p, _, _)| seen.insert(*p))
                    .enumerate()
                    .map(|(rank, &(p, mu, sigma))| {
                        let rounds = played.entry(p).or_insert(0u64);
                        *rounds += 1;
                        let mut belief = EloMmrState::new(&params);
                        belief.mu = f64::from(mu);
                        belief.sigma = f64::from(sigma);
                        belief.rounds = *rounds;
                        super::Played {
                            player: format!("p{p}"),
                            rank: rank as u64,
                            before: engine::Rating {
                                mu: f64::from(mu) - 30.0,
                                sigma: Some(f64::from(sigma) + 10.0),
                            },
                            state: SystemState::EloMmr(belief),
                            last_round: last(&format!("r{r}"), seq),
                        }
                    })
                    .collect();
                state.apply(seq, entrants);
                seq += 1;
            }
            let stored = state
                .beliefs()
                .map(|(id, belief)| StoredPlayer {
                    player: id.to_owned(),
                    state: belief.clone(),
                    last_round_id: "r".into(),
                    last_round_time: None,
                    last_seq: state.players[id].last_round.seq,
                    league: state.leagues().placement_of(id),
                    bonus_spent: state.leagues().bonus_spent(id),
                    season_base: state.players[id].season_base,
                    before: state.players[id].before,
                })
                .collect();
            let fresh = PoolState::load(
                params.into(), display, stored, state.applied(), state.last_seq())
                .expect("valid");
            proptest::prop_assert_eq!(state.spread, fresh.spread);
            proptest::prop_assert_eq!(&state.folded, &fresh.folded);
            proptest::prop_assert_eq!(state.fixed_range(), fresh.fixed_range());
            for order in [Order::Mu, Order::Conservative] {
                for filter in [Filter::All, Filter::Established, Filter::League(0), Filter::League(2)] {
                    let page = |s: &PoolState| -> Vec<(f64, String)> {
                        s.leaderboard()
                            .page(order, filter, 0, usize::MAX)
                            .map(|p| (p.key, p.player.to_string()))
                            .collect()
                    };
                    proptest::prop_assert_eq!(page(&state), page(&fresh));
                }
            }
            proptest::prop_assert_eq!(state.leagues(), fresh.leagues());
            let nobody_provisional = Display { provisional: None, ..Display::default() };
            let plain = state.with_leagues(nobody_provisional, LeagueTable::default());
            proptest::prop_assert_eq!(plain.leaderboard().count(Filter::Established), plain.len());
            proptest::prop_assert_eq!(plain.fixed_range(), None);
        }
    }
}
