//! Rows as either backend returns them (`FromRow` decodes both), their conversion to the
//! storage types, and the encodings of values (enum names, beliefs as rows, content hashes,
//! unsigned numbers). Both backends use these; nothing here talks to a database.

use std::collections::{HashMap, VecDeque};

use sha2::{Digest, Sha256};

use super::enqueue::{Now, Tail};
use super::{
    AppliedPage, AppliedRecord, AuditEntry, EntryKind, Error, HistoryEntry, HistoryPage, LeagueRow,
    Peak, PoolInfo, PoolProgress, RatedAsOf, RoundRecord, RoundResult, RoundStatus, SeasonRecord,
    StoredKey, StoredPlayer,
};
use crate::audit::Action;
use crate::config::Role;
use crate::display::{Display, LeagueMove, Placement};
use crate::engine::{
    CodeforcesState, EloMmrState, EloState, Factor, Glicko2State, Rating, RatingChange,
    SystemParams, SystemState, TopcoderState, TrueSkillState, Variant, WengLinState,
};
use crate::scope::Scope;

/// A pool's rating system and its parameters as stored in `pools`: the system's name and its
/// parameters as a JSON object ([`SystemParams`] in text form, split in two).
#[derive(Debug, sqlx::FromRow)]
pub(super) struct ParamsRow {
    system: String,
    params: String,
}

impl ParamsRow {
    /// The system and its parameters as stored, as the audit log keeps them ([`audited_params`]).
    pub(super) fn audited(&self) -> String {
        audited_params(&self.system, &self.params)
    }

    /// The system and its parameters, or [`Error::Corrupt`] for an unknown system or
    /// parameters that do not decode.
    pub(super) fn into_params(self) -> Result<SystemParams, Error> {
        let corrupt = |e: serde_json::Error| {
            Error::Corrupt(format!("parameters of system `{}`: {e}", self.system))
        };
        let params: serde_json::Value = serde_json::from_str(&self.params).map_err(corrupt)?;
        serde_json::from_value(serde_json::json!({"system": self.system, "params": params}))
            .map_err(corrupt)
    }
}

/// A system's name and its encoded parameters (the columns of [`ParamsRow`]) as the audit log
/// keeps them: `{"system": …, "params": …}`.
pub(super) fn audited_params(system: &str, params: &str) -> String {
    format!(
        r#"{{"system":{},"params":{params}}}"#,
        serde_json::Value::String(system.to_owned())
    )
}

/// The columns `system` and `params` of [`ParamsRow`] for `system`: `$2` and `$3` of
/// `sql::INSERT_POOL` and `sql::UPDATE_POOL`.
pub(super) fn params_columns(system: &SystemParams) -> Result<(String, String), Error> {
    let encoded = serde_json::to_value(system)
        .map_err(|e| Error::Corrupt(format!("parameters that do not encode: {e}")))?;
    match (&encoded["system"], &encoded["params"]) {
        (serde_json::Value::String(name), params) if params.is_object() => {
            Ok((name.clone(), params.to_string()))
        }
        _ => Err(Error::Corrupt(format!("unexpected parameters {encoded}"))),
    }
}

/// A pool's display settings as stored, or [`Error::Corrupt`].
pub(super) fn decode_display(text: &str) -> Result<Display, Error> {
    let display: Display =
        serde_json::from_str(text).map_err(|e| Error::Corrupt(format!("display settings: {e}")))?;
    display
        .validate()
        .map_err(|e| Error::Corrupt(format!("display settings: {e}")))?;
    Ok(display)
}

/// The `display` column for `display`.
pub(super) fn display_column(display: &Display) -> Result<String, Error> {
    serde_json::to_string(display)
        .map_err(|e| Error::Corrupt(format!("display settings that do not encode: {e}")))
}

/// A league, division and points as stored: league and division both NULL for a player
/// outside every league, points NULL where the pool keeps none.
fn placement(
    league: Option<String>,
    division: Option<i64>,
    points: Option<f64>,
) -> Result<Option<Placement>, Error> {
    match (league, division) {
        (None, None) => Ok(None),
        (Some(league), Some(division)) => Ok(Some(Placement {
            league: league.into(),
            division: u32::try_from(division)
                .map_err(|_| Error::Corrupt(format!("division {division}")))?,
            points,
        })),
        (league, division) => Err(Error::Corrupt(format!(
            "league {league:?} with division {division:?}"
        ))),
    }
}

/// The columns of a [`Placement`] as written (league, division, points): NULLs for none.
pub(super) fn placement_columns(
    placement: Option<&Placement>,
) -> (Option<&str>, Option<i64>, Option<f64>) {
    placement.map_or((None, None, None), |p| {
        (Some(&*p.league), Some(i64::from(p.division)), p.points)
    })
}

/// A history row's leagues before and after.
#[derive(Debug, sqlx::FromRow)]
pub(super) struct LeagueColumns {
    league_before: Option<String>,
    division_before: Option<i64>,
    league_after: Option<String>,
    division_after: Option<i64>,
    points_before: Option<f64>,
    points_after: Option<f64>,
}

impl LeagueColumns {
    fn into_move(self) -> Result<LeagueMove, Error> {
        Ok(LeagueMove {
            before: placement(self.league_before, self.division_before, self.points_before)?,
            after: placement(self.league_after, self.division_after, self.points_after)?,
        })
    }
}

/// A row of `sql::SELECT_LEAGUE_ROWS`.
#[derive(Debug, sqlx::FromRow)]
pub(super) struct LeagueHistoryRow {
    seq: i64,
    player: String,
    rank: i64,
    mu_before: f64,
    mu_after: f64,
    sigma_after: Option<f64>,
    round_time: Option<i64>,
}

impl LeagueHistoryRow {
    /// The row as leagues see it.
    pub(super) fn into_row(self) -> Result<LeagueRow, Error> {
        Ok(LeagueRow {
            seq: self.seq,
            player: self.player,
            rank: to_u64(self.rank, "rank")?,
            rating: Rating {
                mu: self.mu_after,
                sigma: self.sigma_after,
            },
            prior: self.mu_before,
            time: self.round_time,
        })
    }
}

/// A row of `sql::SELECT_RATINGS_AS_OF`.
#[derive(Debug, sqlx::FromRow)]
pub(super) struct AsOfRow {
    player: String,
    seq: i64,
    mu_before: f64,
    sigma_before: Option<f64>,
    mu_after: f64,
    sigma_after: Option<f64>,
    rounds: i64,
    round_id: String,
    round_time: Option<i64>,
    league: Option<String>,
    division: Option<i64>,
    points: Option<f64>,
}

impl AsOfRow {
    /// The player as they stood.
    pub(super) fn into_rated(self) -> Result<RatedAsOf, Error> {
        Ok(RatedAsOf {
            player: self.player,
            seq: self.seq,
            rating: Rating {
                mu: self.mu_after,
                sigma: self.sigma_after,
            },
            before: Rating {
                mu: self.mu_before,
                sigma: self.sigma_before,
            },
            rounds: to_u64(self.rounds, "rounds")?,
            last_round_id: self.round_id,
            last_round_time: self.round_time,
            league: placement(self.league, self.division, self.points)?,
        })
    }
}

/// A row of `sql::SELECT_QUEUE_STATE`.
#[derive(Debug, sqlx::FromRow)]
pub(super) struct QueueStateRow {
    #[sqlx(flatten)]
    params: ParamsRow,
    correction: Option<i64>,
    last_seq: i64,
    first_queued: Option<i64>,
}

impl QueueStateRow {
    /// The queue's tail.
    pub(super) fn tail(&self) -> Result<Tail, Error> {
        let queued = self
            .first_queued
            .map_or(0, |first| self.last_seq - first + 1);
        Ok(Tail {
            last_seq: self.last_seq,
            queued: to_u64(queued, "queued")?,
        })
    }

    /// The pool's system and parameters as the audit log keeps them ([`ParamsRow::audited`]).
    pub(super) fn audited_params(&self) -> String {
        self.params.audited()
    }

    /// What the pool is now.
    pub(super) fn into_now(self) -> Result<Now, Error> {
        Ok(Now {
            params: self.params.into_params()?,
            correction: self.correction,
        })
    }
}

/// A row of `sql::SELECT_POOL_PROGRESS`.
#[derive(Debug, sqlx::FromRow)]
pub(super) struct ProgressRow {
    #[sqlx(flatten)]
    params: ParamsRow,
    display: String,
    applied: i64,
}

impl ProgressRow {
    /// The pool's parameters, display settings and applied rounds.
    pub(super) fn into_progress(self) -> Result<PoolProgress, Error> {
        Ok(PoolProgress {
            params: self.params.into_params()?,
            display: decode_display(&self.display)?,
            applied: to_u64(self.applied, "applied")?,
        })
    }
}

/// A row of `sql::SELECT_POOLS`.
#[derive(Debug, sqlx::FromRow)]
pub(super) struct PoolRow {
    name: String,
    #[sqlx(flatten)]
    params: ParamsRow,
    display: String,
    applied: i64,
    queued: i64,
    failed: i64,
}

impl PoolRow {
    /// The pool with its counts.
    pub(super) fn into_info(self) -> Result<PoolInfo, Error> {
        Ok(PoolInfo {
            name: self.name,
            params: self.params.into_params()?,
            display: decode_display(&self.display)?,
            applied: to_u64(self.applied, "applied")?,
            queued: to_u64(self.queued, "queued")?,
            failed: to_u64(self.failed, "failed")?,
        })
    }
}

/// A row of `sql::COUNT_POOL_ROUNDS`.
#[derive(Debug, sqlx::FromRow)]
pub(super) struct PoolRoundsRow {
    applied: i64,
    queued: i64,
}

impl PoolRoundsRow {
    /// Refuses a parameter change when rounds were or are about to be rated.
    pub(super) fn check_unlocked(&self, pool: &str) -> Result<(), Error> {
        if self.applied == 0 && self.queued == 0 {
            return Ok(());
        }
        Err(Error::ParamsLocked {
            pool: pool.to_owned(),
            applied: to_u64(self.applied, "applied")?,
            queued: to_u64(self.queued, "queued")?,
        })
    }
}

/// A row of `sql::SELECT_ROUND`.
#[derive(Debug, sqlx::FromRow)]
pub(super) struct RoundRow {
    id: String,
    pub(super) seq: i64,
    status: String,
    kind: String,
    error: Option<String>,
    round_time: Option<i64>,
    entrants: Option<i64>,
}

impl RoundRow {
    /// The round's status.
    pub(super) fn status(&self) -> Result<RoundStatus, Error> {
        parse_status(&self.status)
    }

    /// How many entrants an applied round had.
    pub(super) fn entrants(&self) -> Option<u64> {
        self.entrants.and_then(|n| u64::try_from(n).ok())
    }

    /// Whether the line is a round (not a season start or a correction).
    pub(super) fn is_round(&self) -> bool {
        self.kind == "round"
    }

    /// The round with a page of its `results` (present only when it was applied), after which
    /// `more_results` follow or not.
    pub(super) fn into_record(
        self,
        results: Option<Vec<RoundResult>>,
        more_results: bool,
    ) -> Result<RoundRecord, Error> {
        Ok(RoundRecord {
            status: self.status()?,
            kind: parse_kind(&self.kind)?,
            id: self.id,
            seq: self.seq,
            error: self.error,
            time: self.round_time,
            entrants: self.entrants.and_then(|n| u64::try_from(n).ok()),
            results,
            more_results,
        })
    }
}

/// A row of `sql::SELECT_RESULTS`.
#[derive(Debug, sqlx::FromRow)]
pub(super) struct ResultRow {
    player: String,
    rank: i64,
    performance: f64,
    mu_before: f64,
    sigma_before: Option<f64>,
    mu_after: f64,
    sigma_after: Option<f64>,
    #[sqlx(flatten)]
    league: LeagueColumns,
    expected_rank: Option<f64>,
}

impl ResultRow {
    /// One entrant's result.
    pub(super) fn into_result(self) -> Result<RoundResult, Error> {
        Ok(RoundResult {
            player: self.player,
            rank: to_u64(self.rank, "rank")?,
            change: change(
                self.performance,
                (self.mu_before, self.sigma_before),
                (self.mu_after, self.sigma_after),
            ),
            league: self.league.into_move()?,
            expected_rank: self.expected_rank,
        })
    }
}

/// A row of `sql::SELECT_PLAYERS`: a state without its factors. `p0`, `w0` and `log_decay`
/// are Elo-MMR's and `volatility` Glicko-2's, NULL for the players of other systems.
#[derive(Debug, sqlx::FromRow)]
pub(super) struct PlayerRow {
    player: String,
    mu: f64,
    sigma: Option<f64>,
    rounds: i64,
    p0: Option<f64>,
    w0: Option<f64>,
    log_decay: Option<f64>,
    last_time: Option<i64>,
    volatility: Option<f64>,
    last_round_id: String,
    last_round_time: Option<i64>,
    last_seq: i64,
    /// The rating before the last round; NULL before any, and once a season start reset it.
    mu_before: Option<f64>,
    sigma_before: Option<f64>,
    league: Option<String>,
    division: Option<i64>,
    points: Option<f64>,
    bonus_spent: f64,
    season_base: i64,
    /// How many of the player's latest history rows hold the factors their belief keeps.
    factors: i64,
}

/// A row of `sql::SELECT_FACTORS`: the factor round `seq` added to a player's belief, if any.
#[derive(Debug, sqlx::FromRow)]
pub(super) struct FactorRow {
    player: String,
    seq: i64,
    perf: Option<f64>,
    weight: Option<f64>,
    beta: Option<f64>,
    log_decay: Option<f64>,
}

impl FactorRow {
    /// The factor the row holds, if it holds one whole.
    fn factor(&self) -> Option<Factor> {
        Some(Factor {
            perf: self.perf?,
            weight: self.weight?,
            beta: self.beta?,
            log_decay: self.log_decay?,
        })
    }
}

/// Whether players of a pool of `system` keep factors: only Elo-MMR's logistic variant's do.
pub(super) fn keeps_factors(system: &SystemParams) -> bool {
    matches!(system, SystemParams::EloMmr(params) if params.variant == Variant::Logistic)
}

/// The factors each of `players` keeps, in their order: those of their last `factors` history
/// rows, oldest first. Every row goes into one vector, sorted once: no list per player to
/// build and free beside the million beliefs a large pool loads.
fn kept_factors(
    players: &[PlayerRow],
    history: Vec<FactorRow>,
) -> Result<Vec<VecDeque<Factor>>, Error> {
    let keeping: HashMap<&str, usize> = players
        .iter()
        .enumerate()
        .filter(|(_, row)| row.factors > 0)
        .map(|(i, row)| (row.player.as_str(), i))
        .collect();
    let mut rows: Vec<(usize, i64, Option<Factor>)> = history
        .iter()
        .filter_map(|row| Some((*keeping.get(row.player.as_str())?, row.seq, row.factor())))
        .collect();
    drop(history);
    rows.sort_unstable_by_key(|&(player, seq, _)| (player, seq));
    let mut rest = rows.as_slice();
    let mut kept = Vec::with_capacity(players.len());
    for (i, row) in players.iter().enumerate() {
        let own = rest
            .iter()
            .take_while(|&&(player, _, _)| player == i)
            .count();
        let (history, after) = rest.split_at(own);
        rest = after;
        kept.push(last_factors(history, row.factors).ok_or_else(|| {
            Error::Corrupt(format!(
                "player `{}` keeps {} factors: their last {} history rows (of {} read) do not \
                 each hold one",
                row.player, row.factors, row.factors, own
            ))
        })?);
    }
    Ok(kept)
}

/// The factors of the last `count` of `history` (a player's history rows by seq), oldest
/// first; `None` when there are fewer rows, or one of them holds no factor.
fn last_factors(history: &[(usize, i64, Option<Factor>)], count: i64) -> Option<VecDeque<Factor>> {
    let first = history.len().checked_sub(usize::try_from(count).ok()?)?;
    // Sized exactly: a collected deque would keep room for several factors in every belief.
    let mut kept = VecDeque::with_capacity(history.len() - first);
    for &(_, _, factor) in &history[first..] {
        kept.push_back(factor?);
    }
    Some(kept)
}

/// Joins the rows of `sql::SELECT_PLAYERS` and `sql::SELECT_FACTORS` (the pool's history rows;
/// none where its system keeps no factors) into whole states of the pool's `system`, checking
/// that each player's last `factors` rounds each added the factor their belief keeps from it.
pub(super) fn join_players(
    system: &SystemParams,
    players: Vec<PlayerRow>,
    factors: Vec<FactorRow>,
) -> Result<Vec<StoredPlayer>, Error> {
    let kept = kept_factors(&players, factors)?;
    let stored = players
        .into_iter()
        .zip(kept)
        .map(|(row, kept)| {
            let rounds = to_u64(row.rounds, "rounds")?;
            let missing = || Error::Corrupt(format!("player `{}`: no posterior", row.player));
            // Every system but Elo keeps a σ.
            let sigma = || row.sigma.ok_or_else(missing);
            let state = match system {
                SystemParams::EloMmr(_) => SystemState::EloMmr(EloMmrState {
                    mu: row.mu,
                    sigma: sigma()?,
                    p0: row.p0.ok_or_else(missing)?,
                    w0: row.w0.ok_or_else(missing)?,
                    factors: kept,
                    log_decay: row.log_decay.ok_or_else(missing)?,
                    last_time: row.last_time,
                    rounds,
                }),
                SystemParams::WengLin(_) => SystemState::WengLin(WengLinState {
                    mu: row.mu,
                    sigma: sigma()?,
                    rounds,
                }),
                SystemParams::TrueSkill(_) => SystemState::TrueSkill(TrueSkillState {
                    mu: row.mu,
                    sigma: sigma()?,
                    rounds,
                }),
                SystemParams::Codeforces(_) => SystemState::Codeforces(CodeforcesState {
                    mu: row.mu,
                    sigma: sigma()?,
                    rounds,
                }),
                SystemParams::Elo(_) => SystemState::Elo(EloState { mu: row.mu, rounds }),
                SystemParams::Topcoder(_) => SystemState::Topcoder(TopcoderState {
                    mu: row.mu,
                    sigma: sigma()?,
                    rounds,
                }),
                SystemParams::Glicko2(_) => SystemState::Glicko2(Glicko2State {
                    mu: row.mu,
                    sigma: sigma()?,
                    volatility: row.volatility.ok_or_else(|| {
                        Error::Corrupt(format!("player `{}`: no volatility", row.player))
                    })?,
                    rounds,
                }),
            };
            Ok::<_, Error>(StoredPlayer {
                before: row.mu_before.map(|mu| Rating {
                    mu,
                    sigma: row.sigma_before,
                }),
                state,
                league: placement(row.league, row.division, row.points)?,
                bonus_spent: row.bonus_spent,
                season_base: to_u64(row.season_base, "season_base")?,
                player: row.player,
                last_round_id: row.last_round_id,
                last_round_time: row.last_round_time,
                last_seq: row.last_seq,
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(stored)
}

/// A state's columns of `players` besides `mu` and `sigma` (a state's rating, which the
/// entrant's [`RatingChange::after`] carries), and the factor columns of its history row.
pub(super) struct StateColumns<'a> {
    pub(super) rounds: i64,
    pub(super) p0: Option<f64>,
    pub(super) w0: Option<f64>,
    pub(super) log_decay: Option<f64>,
    pub(super) last_time: Option<i64>,
    pub(super) volatility: Option<f64>,
    /// How many factors the belief keeps: those its last rounds added, one each.
    pub(super) factors: i64,
    /// The factor the round just played added, the belief's newest (only Elo-MMR's logistic
    /// variant adds any).
    pub(super) added: Option<&'a Factor>,
}

impl<'a> StateColumns<'a> {
    /// The columns of `state`, a player's state after the round they just played.
    pub(super) fn of(state: &'a SystemState) -> Result<Self, Error> {
        Ok(match state {
            SystemState::EloMmr(belief) => Self {
                rounds: to_i64(belief.rounds, "rounds")?,
                p0: Some(belief.p0),
                w0: Some(belief.w0),
                log_decay: Some(belief.log_decay),
                last_time: belief.last_time,
                volatility: None,
                factors: to_i64(belief.factors.len() as u64, "factors")?,
                added: belief.factors.back(),
            },
            SystemState::WengLin(WengLinState { rounds, .. })
            | SystemState::TrueSkill(TrueSkillState { rounds, .. })
            | SystemState::Codeforces(CodeforcesState { rounds, .. })
            | SystemState::Topcoder(TopcoderState { rounds, .. })
            | SystemState::Elo(EloState { rounds, .. }) => Self {
                rounds: to_i64(*rounds, "rounds")?,
                p0: None,
                w0: None,
                log_decay: None,
                last_time: None,
                volatility: None,
                factors: 0,
                added: None,
            },
            SystemState::Glicko2(belief) => Self {
                rounds: to_i64(belief.rounds, "rounds")?,
                p0: None,
                w0: None,
                log_decay: None,
                last_time: None,
                volatility: Some(belief.volatility),
                factors: 0,
                added: None,
            },
        })
    }
}

/// A row of `sql::SELECT_PEAK`.
#[derive(Debug, sqlx::FromRow)]
pub(super) struct PeakRow {
    round_id: String,
    round_time: Option<i64>,
    mu: f64,
    sigma: Option<f64>,
}

impl PeakRow {
    /// The peak the row holds.
    pub(super) fn into_peak(self) -> Peak {
        Peak {
            round_id: self.round_id,
            time: self.round_time,
            rating: Rating {
                mu: self.mu,
                sigma: self.sigma,
            },
        }
    }
}

/// A row of `sql::SELECT_HISTORY`.
#[derive(Debug, sqlx::FromRow)]
pub(super) struct HistoryRow {
    seq: i64,
    round_id: String,
    round_time: Option<i64>,
    rank: i64,
    entrants: Option<i64>,
    performance: f64,
    mu_before: f64,
    sigma_before: Option<f64>,
    mu_after: f64,
    sigma_after: Option<f64>,
    #[sqlx(flatten)]
    league: LeagueColumns,
    expected_rank: Option<f64>,
}

impl HistoryRow {
    /// One history entry.
    pub(super) fn into_entry(self) -> Result<HistoryEntry, Error> {
        Ok(HistoryEntry {
            seq: self.seq,
            round_id: self.round_id,
            time: self.round_time,
            rank: to_u64(self.rank, "rank")?,
            // Set in the same transaction as the history rows, so never missing.
            entrants: to_u64(self.entrants.unwrap_or_default(), "entrants")?,
            change: change(
                self.performance,
                (self.mu_before, self.sigma_before),
                (self.mu_after, self.sigma_after),
            ),
            league: self.league.into_move()?,
            expected_rank: self.expected_rank,
        })
    }
}

/// A rating change as history rows store it.
fn change(performance: f64, before: (f64, Option<f64>), after: (f64, Option<f64>)) -> RatingChange {
    let rating = |(mu, sigma)| Rating { mu, sigma };
    RatingChange {
        performance,
        before: rating(before),
        after: rating(after),
    }
}

pub(super) fn parse_status(status: &str) -> Result<RoundStatus, Error> {
    match status {
        "queued" => Ok(RoundStatus::Queued),
        "applied" => Ok(RoundStatus::Applied),
        "failed" => Ok(RoundStatus::Failed),
        "voided" => Ok(RoundStatus::Voided),
        other => Err(Error::Corrupt(format!("unknown round status `{other}`"))),
    }
}

fn parse_kind(kind: &str) -> Result<EntryKind, Error> {
    match kind {
        "round" => Ok(EntryKind::Round),
        "season" => Ok(EntryKind::Season),
        "correction" => Ok(EntryKind::Correction),
        other => Err(Error::Corrupt(format!("unknown round kind `{other}`"))),
    }
}

/// A row of `sql::SELECT_SEASONS`.
#[derive(Debug, sqlx::FromRow)]
pub(super) struct SeasonRow {
    id: String,
    seq: i64,
    status: String,
    body: String,
}

impl SeasonRow {
    /// The season start as stored.
    pub(super) fn into_record(self) -> Result<SeasonRecord, Error> {
        Ok(SeasonRecord {
            status: parse_status(&self.status)?,
            id: self.id,
            seq: self.seq,
            body: self.body,
        })
    }
}

/// SHA-256 of a line's comparison key ([`super::NewEntry::key`]): what a re-post is compared
/// by.
pub(super) fn content_hash(body: &str) -> Vec<u8> {
    Sha256::digest(body.as_bytes()).to_vec()
}

/// `value` as the database's signed integer.
pub(super) fn to_i64(value: u64, what: &'static str) -> Result<i64, Error> {
    i64::try_from(value).map_err(|_| Error::OutOfRange { what })
}

/// A stored count or rank, which is never negative.
pub(super) fn to_u64(value: i64, what: &'static str) -> Result<u64, Error> {
    u64::try_from(value).map_err(|_| Error::Corrupt(format!("{what} is {value}")))
}

/// A page of at most `limit` entries from `entries`, which holds up to `limit + 1`: the
/// extra one, fetched only to learn whether older entries exist, is dropped.
pub(super) fn history_page(mut entries: Vec<HistoryEntry>, limit: u32) -> HistoryPage {
    let more = entries.len() > limit as usize;
    entries.truncate(limit as usize);
    HistoryPage {
        next_before: if more {
            entries.last().map(|entry| entry.seq)
        } else {
            None
        },
        entries,
    }
}

/// A row of `SELECT_APPLIED_ROUNDS`: a round of the page, or (without its body) the round
/// after the page.
#[derive(Debug, sqlx::FromRow)]
pub(super) struct AppliedRow {
    seq: i64,
    id: String,
    body: Option<String>,
}

/// The page that `rows` of `SELECT_APPLIED_ROUNDS` hold.
pub(super) fn applied_page(rows: Vec<AppliedRow>) -> AppliedPage {
    let more = rows.last().is_some_and(|row| row.body.is_none());
    let rounds = rows
        .into_iter()
        .map_while(|row| {
            Some(AppliedRecord {
                seq: row.seq,
                id: row.id,
                body: row.body?,
            })
        })
        .collect();
    AppliedPage { rounds, more }
}

/// A row of `sql::SELECT_KEYS`.
#[derive(Debug, sqlx::FromRow)]
pub(super) struct KeyRow {
    name: String,
    role: String,
    sha256: String,
    created_at: i64,
    revoked_at: Option<i64>,
    /// A JSON array of patterns; NULL for every pool.
    pools: Option<String>,
}

impl KeyRow {
    /// The key, or [`Error::Corrupt`] for an unknown role or patterns that do not read.
    pub(super) fn into_key(self) -> Result<StoredKey, Error> {
        let pools = match &self.pools {
            None => Scope::All,
            Some(json) => serde_json::from_str(json).map_err(|error| {
                Error::Corrupt(format!("key `{}`: pools `{json}`: {error}", self.name))
            })?,
        };
        Ok(StoredKey {
            pools,
            role: Role::parse(&self.role).ok_or_else(|| {
                Error::Corrupt(format!("key `{}`: role `{}`", self.name, self.role))
            })?,
            name: self.name,
            sha256: self.sha256,
            created_at: self.created_at,
            revoked_at: self.revoked_at,
        })
    }
}

/// What the audit log keeps of a key: its name, role and pools, never its hash.
pub(super) fn audited_key(key: &StoredKey) -> String {
    serde_json::json!({"name": key.name, "role": key.role.as_str(), "pools": key.pools.patterns()})
        .to_string()
}

/// A row of `sql::SELECT_AUDIT`.
#[derive(Debug, sqlx::FromRow)]
pub(super) struct AuditRow {
    id: i64,
    at: i64,
    actor: String,
    request_id: Option<String>,
    action: String,
    pool: Option<String>,
    subject: Option<String>,
    state_before: Option<String>,
    state_after: Option<String>,
}

impl AuditRow {
    /// The entry, or [`Error::Corrupt`] for an action this version does not know.
    pub(super) fn into_entry(self) -> Result<AuditEntry, Error> {
        Ok(AuditEntry {
            action: Action::named(&self.action).ok_or_else(|| {
                Error::Corrupt(format!("audit entry {}: action `{}`", self.id, self.action))
            })?,
            id: self.id,
            at: self.at,
            actor: self.actor,
            request_id: self.request_id,
            pool: self.pool,
            subject: self.subject,
            before: self.state_before,
            after: self.state_after,
        })
    }
}
