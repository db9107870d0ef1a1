//! `/v1/pools/{pool}/display`: how a pool shows its ratings (docs/display.md). Any reader may
//! see the settings and what they resolve to now; an admin changes them, at any time.
//! `/v1/pools/{pool}/leagues`: the pool's leagues with their players and divisions.

use axum::extract::{Path, State};
use axum::Json;
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::auth::{Admin, Authorized, Read};
use super::error::{Error, ErrorResponse};
use super::json::{from_object, JsonBody};
use super::pool_of;
use crate::display::{Display, Leagues};
use crate::pools::leaderboard::Filter;
use crate::pools::PoolState;
use crate::state::AppState;

/// The routes of this module.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(get_display, put_display, patch_display))
        .routes(routes!(get_leagues))
}

/// The fixed-range rating's center and scale as derived now.
#[derive(Debug, Serialize, ToSchema)]
pub struct FixedRangeNow {
    /// The top of the range.
    pub max: f64,
    /// The rating shown as `max / 2`.
    pub center: f64,
    /// The Fermi function's temperature (0 when every rated player has the same μ).
    pub scale: f64,
}

/// A pool's display settings and what they give now.
#[derive(Debug, Serialize, ToSchema)]
pub struct DisplayResponse {
    /// The pool.
    pub pool: String,
    /// The settings, defaults filled in.
    pub settings: Display,
    /// The fixed-range rating's center and scale now; `null` if the pool shows none, or its
    /// center is `"auto"` and nobody is rated yet.
    pub fixed_range: Option<FixedRangeNow>,
    /// Players rated.
    pub players: u64,
    /// Of them, those not provisional.
    pub established: u64,
}

fn response(pool: String, state: &PoolState) -> DisplayResponse {
    DisplayResponse {
        pool,
        settings: state.display().clone(),
        fixed_range: state.fixed_range().map(|range| FixedRangeNow {
            max: range.max,
            center: range.center,
            scale: range.scale,
        }),
        players: state.len() as u64,
        established: state.leaderboard().count(Filter::Established) as u64,
    }
}

/// A pool's display settings, with the fixed-range rating's current center and scale.
#[utoipa::path(get, path = "/v1/pools/{pool}/display", tag = "pools",
    responses((status = 200, body = DisplayResponse), (status = 404, body = ErrorResponse)),
    security((), ("bearer" = [])))]
async fn get_display(
    auth: Authorized<Read>,
    State(state): State<AppState>,
    Path(pool): Path<String>,
) -> Result<Json<DisplayResponse>, Error> {
    let found = pool_of(&state, auth.client(), &pool).await?;
    Ok(Json(response(pool, &found.read())))
}

/// Replaces a pool's display settings (settings left out take their defaults; `PATCH` changes
/// some and keeps the rest). Allowed at any time, rounds or not: reads derive what they show
/// from the stored ratings.
#[utoipa::path(put, path = "/v1/pools/{pool}/display", tag = "pools",
    request_body = Display,
    responses((status = 200, body = DisplayResponse),
        (status = 404, body = ErrorResponse), (status = 422, body = ErrorResponse)),
    security(("bearer" = [])))]
async fn put_display(
    auth: Authorized<Admin>,
    State(state): State<AppState>,
    Path(pool): Path<String>,
    JsonBody(display): JsonBody<Display>,
) -> Result<Json<DisplayResponse>, Error> {
    checked(&display)?;
    let found = pool_of(&state, auth.client(), &pool).await?;
    let published = state
        .put_display(&found, |_| Ok::<_, Error>(display), &auth.actor()?)
        .await?;
    Ok(Json(response(pool, &published)))
}

/// Changes some of a pool's display settings and keeps the others: the body is a JSON merge
/// patch (RFC 7396) of the settings `GET …/display` shows. A member replaces that setting, an
/// object is merged into the setting's object, and `null` removes a setting, which then takes
/// its default (for `provisional`, the default rule: `{"min_rounds": 0}` lists nobody as
/// provisional). Two patches of different settings both land.
#[utoipa::path(patch, path = "/v1/pools/{pool}/display", tag = "pools",
    request_body(content = Object, content_type = "application/merge-patch+json",
        description = "Settings to change, as `PUT` takes them; others are kept",
        example = json!({"fixed_range": {"max": 3000}, "default_order": "display_rating"})),
    responses((status = 200, body = DisplayResponse),
        (status = 404, body = ErrorResponse), (status = 422, body = ErrorResponse)),
    security(("bearer" = [])))]
async fn patch_display(
    auth: Authorized<Admin>,
    State(state): State<AppState>,
    Path(pool): Path<String>,
    JsonBody(patch): JsonBody<Value>,
) -> Result<Json<DisplayResponse>, Error> {
    let found = pool_of(&state, auth.client(), &pool).await?;
    let published = state
        .put_display(
            &found,
            |current| {
                let mut merged = serde_json::to_value(current).map_err(|_| Error::Internal)?;
                json_patch::merge(&mut merged, &patch);
                let display: Display = from_object(merged).map_err(|error| match error {
                    Error::Invalid { field, message, .. } => {
                        Error::invalid("invalid_display", field, message)
                    }
                    other => other,
                })?;
                checked(&display)?;
                Ok::<_, Error>(display)
            },
            &auth.actor()?,
        )
        .await?;
    Ok(Json(response(pool, &published)))
}

/// `display` if every setting is in range; 422 naming the first that is not.
fn checked(display: &Display) -> Result<(), Error> {
    display
        .validate()
        .map_err(|e| Error::invalid("invalid_display", e.field.clone(), e.to_string()))
}

/// One league and how many players it holds now.
#[derive(Debug, Serialize, ToSchema)]
pub struct LeagueResponse {
    /// Its name.
    pub name: String,
    /// Its lowest rating; `null` for the lowest league.
    pub threshold: Option<f64>,
    /// Players placed in it.
    pub players: u64,
    /// Its divisions: the highest division number holding a player (a lower one may have
    /// emptied since).
    pub divisions: u64,
}

/// A pool's leagues, lowest first, with their counts.
#[derive(Debug, Serialize, ToSchema)]
pub struct LeaguesResponse {
    /// The pool.
    pub pool: String,
    /// The league settings; `null` if the pool has none.
    pub settings: Option<Leagues>,
    /// Each league, lowest first; empty if the pool has none.
    pub leagues: Vec<LeagueResponse>,
    /// Rated players not placed yet (still in their placement rounds, or no leagues).
    pub unplaced: u64,
}

/// A pool's leagues with the players and divisions of each.
#[utoipa::path(get, path = "/v1/pools/{pool}/leagues", tag = "pools",
    responses((status = 200, body = LeaguesResponse), (status = 404, body = ErrorResponse)),
    security((), ("bearer" = [])))]
async fn get_leagues(
    auth: Authorized<Read>,
    State(state): State<AppState>,
    Path(pool): Path<String>,
) -> Result<Json<LeaguesResponse>, Error> {
    let current = pool_of(&state, auth.client(), &pool).await?.read();
    let settings = current.display().leagues.clone();
    let leagues: Vec<LeagueResponse> = settings
        .iter()
        .flat_map(|s| &s.tiers)
        .zip(current.leagues().counts())
        .map(|(tier, count)| LeagueResponse {
            name: tier.name.clone(),
            threshold: tier.threshold,
            players: count.players,
            divisions: count.divisions,
        })
        .collect();
    let placed: u64 = leagues.iter().map(|l| l.players).sum();
    Ok(Json(LeaguesResponse {
        pool,
        settings,
        leagues,
        unplaced: (current.len() as u64).saturating_sub(placed),
    }))
}
