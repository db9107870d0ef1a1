//! `/v1/pools/{pool}/seasons`: start a season (admin key) as a line of the pool's round
//! stream, list the seasons, and page through a season's standings (docs/seasons.md). A pool
//! is in season 1 until its first start; each start, once the worker reaches it in the
//! pool's order, begins the next.

use std::sync::Arc;

use axum::extract::{Path, Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::auth::{Admin, Authorized, Read};
use super::boards::{
    answered, past_board, reset_of, LeaderboardQuery, LeaderboardResponse, PastPlayers,
};
use super::error::{Error, ErrorResponse, Resource};
use super::json::json_bytes;
use super::query::QueryParams;
use super::queueing::{located, round_url, Queued, RoundStatusResponse};
use super::waiting::{settle, WaitQuery};
use super::{pool_of, reads};
use crate::audit::Action;
use crate::pools::past::PastKey;
use crate::pools::Pool;
use crate::state::AppState;
use crate::storage::{EntryKind, NewEntry, RoundStatus, SeasonRecord, Storage};
use crate::wire::{Entry, SeasonRequest};

/// The routes of this module.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(start_season, list_seasons))
        .routes(routes!(season_leaderboard))
}

/// One season of a pool.
#[derive(Debug, Serialize, ToSchema)]
pub struct SeasonResponse {
    /// 1 for the pool's first season; each start begins the next (`null` for a start that
    /// failed, which begins none).
    pub number: Option<u32>,
    /// The id of the start that begins it; `null` for season 1.
    pub id: Option<String>,
    /// `queued` until the worker reaches the start in the pool's order, then `applied`;
    /// `applied` for season 1.
    #[schema(example = "applied")]
    pub status: &'static str,
    /// The soft reset's share of the way back for μ (0 for season 1).
    pub mu_reset: f64,
    /// The soft reset's share of the way back for σ (0 for season 1).
    pub sigma_reset: f64,
    /// 1 for the next line the worker applies; present on a 202.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub position: Option<u64>,
}

/// A pool's seasons.
#[derive(Debug, Serialize, ToSchema)]
pub struct SeasonsResponse {
    /// The season the pool's ratings are in now: the last whose start was applied.
    pub current: u32,
    /// Every season, the first one first, queued starts included.
    pub seasons: Vec<SeasonResponse>,
}

/// Starts a new season after every round accepted so far: once the worker reaches it, every
/// rating is soft-reset (μ and σ each moved the given share of the way back toward a
/// newcomer's) and every player leaves their league, to be placed again. Posting the same id
/// with the same content again returns its status (200); with other content, 409. With
/// `?wait=applied`, answers 200 once the start is applied, as a round's post does.
#[utoipa::path(post, path = "/v1/pools/{pool}/seasons", tag = "rounds",
    params(WaitQuery),
    request_body = SeasonRequest,
    responses(
        (status = 202, body = SeasonResponse, description = "Queued after every round accepted so far",
            headers(("Location" = String, description = "The start's round URL"))),
        (status = 200, body = SeasonResponse, description = "Posted before with the same content"), (status = 404, body = ErrorResponse),
        (status = 409, body = ErrorResponse), (status = 422, body = ErrorResponse),
        (status = 503, body = ErrorResponse, description = "Queue full or database unavailable",
            headers(("Retry-After" = u64, description = "Seconds to wait")))),
    security(("bearer" = [])))]
async fn start_season(
    auth: Authorized<Admin>,
    State(state): State<AppState>,
    Path(pool): Path<String>,
    QueryParams(wait): QueryParams<WaitQuery>,
    request: Request,
) -> Result<Response, Error> {
    let deadline = wait.deadline(&state)?;
    let pool = pool_of(&state, auth.client(), &pool).await?;
    let body = json_bytes(request, &state).await?;
    let value: serde_json::Value =
        serde_json::from_slice(&body).map_err(|e| Error::MalformedJson(e.to_string()))?;
    let season = SeasonRequest::from_value(&value, "")
        .map_err(|e| Error::invalid("invalid_season", e.field, e.reason))?;
    let canonical = Entry::Season(season.clone()).canonical().map_err(|e| {
        tracing::error!(error = %e, "season serialization failed");
        Error::Internal
    })?;
    let actor = auth.actor()?;
    let entry = NewEntry::by_body(&season.id, EntryKind::Season, &canonical)
        .audited(&actor, Action::SeasonStart);
    let outcome = state.enqueue(&pool, entry, None).await?;
    let queued = Queued::of(outcome, &season.id)?;
    let mut status = queued.status;
    let mut position = queued.position;
    if let Some(deadline) = deadline {
        let mut answer = [RoundStatusResponse {
            id: season.id.clone(),
            status: queued.stored.as_str(),
            position,
            error: None,
        }];
        if settle(&state, auth.client(), &pool, &mut answer, deadline).await? {
            status = StatusCode::OK;
            position = None;
        }
    }
    let seasons = seasons_of(state.storage.as_ref(), &pool).await?;
    let mut shown = seasons
        .seasons
        .into_iter()
        .find(|s| s.id.as_deref() == Some(season.id.as_str()))
        .unwrap_or(SeasonResponse {
            number: None,
            id: Some(season.id.clone()),
            status: RoundStatus::Failed.as_str(),
            mu_reset: season.mu_reset,
            sigma_reset: season.sigma_reset,
            position: None,
        });
    shown.position = position;
    let headers = located(&round_url(pool.name(), &season.id));
    Ok((status, headers, Json(shown)).into_response())
}

/// Every season of the pool, and the current one.
#[utoipa::path(get, path = "/v1/pools/{pool}/seasons", tag = "players",
    responses((status = 200, body = SeasonsResponse), (status = 404, body = ErrorResponse)),
    security((), ("bearer" = [])))]
async fn list_seasons(
    auth: Authorized<Read>,
    State(state): State<AppState>,
    Path(pool): Path<String>,
) -> Result<Json<SeasonsResponse>, Error> {
    let pool = pool_of(&state, auth.client(), &pool).await?;
    let reads = reads(&state, auth.client()).await;
    Ok(Json(seasons_of(&*reads, &pool).await?))
}

/// A season's standings: every player who played in it, as they stood after their last round
/// of it (the final standings of a season that has ended), paged like the leaderboard.
#[utoipa::path(get, path = "/v1/pools/{pool}/seasons/{number}/leaderboard", tag = "players",
    params(("number" = u32, Path, description = "The season, from 1"), LeaderboardQuery),
    responses((status = 200, body = LeaderboardResponse),
        (status = 404, body = ErrorResponse)),
    security((), ("bearer" = [])))]
async fn season_leaderboard(
    auth: Authorized<Read>,
    State(state): State<AppState>,
    Path((pool, number)): Path<(String, String)>,
    QueryParams(query): QueryParams<LeaderboardQuery>,
) -> Result<Json<LeaderboardResponse>, Error> {
    let pool = pool_of(&state, auth.client(), &pool).await?;
    if query.as_of.is_some() {
        return Err(Error::query(
            "as_of",
            "a season's standings are as of its end: leave `as_of` out",
        ));
    }
    let unknown = || Error::NotFound {
        what: Resource::Season,
        id: number.clone(),
    };
    let number: usize = number.parse().map_err(|_| unknown())?;
    let starts = started(&*reads(&state, auth.client()).await, &pool).await?;
    // Season n runs from the start of season n (none for season 1) to the next start.
    let after = match number {
        0 => return Err(unknown()),
        1 => 0,
        n => match starts.get(n - 2) {
            Some(start) if start.status == RoundStatus::Applied => start.seq,
            _ => return Err(unknown()),
        },
    };
    // A season ends once the next one's start is applied: as the starts read above say, or
    // as the snapshot says, which is taken after them and may have applied it since. Until
    // then it takes in the lines the snapshot holds, so that its standings move with the
    // snapshot and a board of them is kept only until the next line.
    let snapshot = pool.read();
    let before = starts
        .get(number - 1)
        .filter(|start| start.status == RoundStatus::Applied || snapshot.last_seq() >= start.seq)
        .map(|start| start.seq);
    // A season still open holds what the snapshot holds: every player whose last round is
    // past its start, as they stand now. Read from memory, not from the history rows (a
    // grouped read of all of them, 1.5-3.5 s on ctftime's 347,299 rows, BENCHMARKS.md), since
    // its board is built again after every applied line.
    let through = before.map_or(snapshot.last_seq(), |_| 0);
    let storage = Arc::clone(&state.reads);
    let name = pool.name().to_owned();
    let rated = async move {
        Ok(match before {
            None => PastPlayers::Since(after),
            Some(_) => PastPlayers::Rows(
                storage.standings_between(&name, after, before).await?,
                Vec::new(),
            ),
        })
    };
    let key = PastKey::Season { after, before };
    let board = past_board(&state, auth.client(), &pool, snapshot, key, through, rated).await?;
    answered(&state, auth.client(), pool.read(), Some(board), query).await
}

/// The pool's season starts that were not refused, in order: start `i` begins season `i + 2`.
async fn started(storage: &dyn Storage, pool: &Pool) -> Result<Vec<SeasonRecord>, Error> {
    let mut starts = storage.seasons(pool.name()).await?;
    starts.retain(|start| start.status != RoundStatus::Failed);
    Ok(starts)
}

async fn seasons_of(storage: &dyn Storage, pool: &Pool) -> Result<SeasonsResponse, Error> {
    let starts = started(storage, pool).await?;
    let mut seasons = vec![SeasonResponse {
        number: Some(1),
        id: None,
        status: RoundStatus::Applied.as_str(),
        mu_reset: 0.0,
        sigma_reset: 0.0,
        position: None,
    }];
    for (start, number) in starts.iter().zip(2..) {
        let reset = reset_of(start)?;
        seasons.push(SeasonResponse {
            number: Some(number),
            id: Some(start.id.clone()),
            status: start.status.as_str(),
            mu_reset: reset.mu,
            sigma_reset: reset.sigma,
            position: None,
        });
    }
    let current = seasons
        .iter()
        .filter(|s| s.status == RoundStatus::Applied.as_str())
        .filter_map(|s| s.number)
        .max()
        .unwrap_or(1);
    Ok(SeasonsResponse { current, seasons })
}
