//! The JSON form of a round, as `replay` reads it (one per line) and as the HTTP API takes it
//! (its schema in the API document derived here), and its conversion into an
//! [`engine::Round`]. Every error names the offending field
//! by its path (`time`, `standings[3].rank`), so the types are read from a parsed JSON value
//! by hand rather than by a derived `Deserialize`, whose messages name no path. Nothing here
//! rates anything.
//!
//! ```json
//! {"id": "cf-1", "time": "2010-02-19T15:00:00Z", "weight": 1.0, "perf_ceiling": 3000.0,
//!  "standings": [{"player": "tourist", "rank": 1, "team": "optional", "partial_play": 0.5}]}
//! ```
//! `time` (RFC 3339), `weight`, `perf_ceiling`, `team` and `partial_play` are optional (absent
//! or `null`); unknown fields are rejected.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};
use time::format_description::well_known::Rfc3339;
use time::{OffsetDateTime, UtcOffset};
use utoipa::ToSchema;

use crate::display::Display;
use crate::engine;

/// A round as it travels on the wire: the body of `POST /v1/pools/{pool}/rounds`, and a line of
/// the round stream (`replay`, export, import).
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
// Read by hand ([`RoundRequest::from_value`]), which refuses unknown fields; this tells the API
// document so (`additionalProperties: false`).
#[serde(deny_unknown_fields)]
pub struct RoundRequest {
    /// The caller's id for the round, unique in the pool: 1–256 bytes, no NUL.
    #[schema(min_length = 1, max_length = 256)]
    pub id: String,
    /// When the round took place (RFC 3339).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(format = DateTime)]
    pub time: Option<String>,
    /// Round weight ω in [1e-6, 1e6]; the performance spread is β/√ω. Default 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 1e-6, maximum = 1e6)]
    pub weight: Option<f64>,
    /// No performance is credited above this.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub perf_ceiling: Option<f64>,
    /// At least two entrants; a player appears once.
    #[schema(min_items = 2)]
    pub standings: Vec<StandingRequest>,
}

/// One player's result on the wire.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
// Unknown fields are refused: see [`RoundRequest`].
#[serde(deny_unknown_fields)]
pub struct StandingRequest {
    /// The player's id: 1–256 bytes, no NUL.
    #[schema(min_length = 1, max_length = 256)]
    pub player: String,
    /// Place, 1 is best; equal ranks tie.
    #[schema(minimum = 1)]
    pub rank: u64,
    /// Team name (1–256 bytes, no NUL); members of a team share its rank and are rated as one
    /// entrant.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(min_length = 1, max_length = 256)]
    pub team: Option<String>,
    /// TrueSkill pools only: the share of the round the player took part in, in (0, 1];
    /// default 1. A pool of another system answers 422 naming the field.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(exclusive_minimum = 0.0, maximum = 1.0)]
    pub partial_play: Option<f64>,
}

/// A new season on the wire: the body of `POST /v1/pools/{pool}/seasons`, and, wrapped as
/// `{"season": {…}}`, a line of the round stream (`replay`, export, import) that starts a
/// season between two rounds (docs/seasons.md).
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct SeasonRequest {
    /// The start's id, unique among the pool's rounds and season starts: 1–256 bytes, no NUL.
    #[schema(min_length = 1, max_length = 256, example = "2027-spring")]
    pub id: String,
    /// How far every μ moves back toward a newcomer's μ₀: 0 (keep, the default) to 1.
    #[schema(
        minimum = 0.0,
        maximum = 1.0,
        example = 0.2,
        required = false,
        nullable
    )]
    pub mu_reset: f64,
    /// How far every σ moves back toward a newcomer's σ₀: 0 (keep, the default) to 1.
    #[schema(
        minimum = 0.0,
        maximum = 1.0,
        example = 0.5,
        required = false,
        nullable
    )]
    pub sigma_reset: f64,
}

/// A correction of a pool's applied rounds (docs/corrections.md), as stored in its round
/// stream: `{"correction": {"id": …, "action": …, …}}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CorrectionRequest {
    /// The correction's id, unique among the pool's rounds, season starts and corrections.
    pub id: String,
    /// What it corrects.
    #[serde(flatten)]
    pub action: Correction,
}

/// What a correction does to the rounds applied before it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum Correction {
    /// Round `round` never happened.
    Void {
        /// The round's id.
        round: String,
    },
    /// `player`'s standing is taken out of round `round`; the others keep their order.
    Disqualify {
        /// The round's id.
        round: String,
        /// The player.
        player: String,
    },
    /// `player` is called `to` in every round so far.
    Rename {
        /// The player's id now.
        player: String,
        /// Their new id, which no player has.
        to: String,
    },
    /// `player`'s rounds become `into`'s.
    Merge {
        /// The player whose rounds move.
        player: String,
        /// The player who takes them.
        into: String,
    },
    /// The pool is rated with these parameters, from its first round.
    Params {
        /// The new system and parameters.
        system: engine::SystemParams,
    },
}

/// One line of a pool's round stream: a round, the start of a season, or a correction.
#[derive(Debug, Clone, PartialEq)]
pub enum Entry {
    /// A round's results.
    Round(RoundRequest),
    /// A new season.
    Season(SeasonRequest),
    /// A correction of the rounds before it.
    Correction(CorrectionRequest),
}

/// A field of a round that is missing, of the wrong type or out of range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    /// Path of the field, e.g. `standings[2].rank`; empty for the round itself.
    pub field: String,
    /// What is wrong with it.
    pub reason: String,
}

impl std::fmt::Display for FieldError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.field.is_empty() {
            write!(f, "{}", self.reason)
        } else {
            write!(f, "{}: {}", self.field, self.reason)
        }
    }
}

impl std::error::Error for FieldError {}

impl FieldError {
    /// An error about the field at `field` (a path such as `standings[2].rank`).
    #[must_use]
    pub fn new(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            reason: reason.into(),
        }
    }
}

impl From<engine::Error> for FieldError {
    fn from(error: engine::Error) -> Self {
        match error {
            engine::Error::InvalidRound { field, reason } => Self { field, reason },
            other => Self::new(other.field().unwrap_or_default(), other.to_string()),
        }
    }
}

/// How far after the clock a posted round's time may be: a day of clock skew. A mistyped
/// year would otherwise give the round's players the diffusion of the years in between and
/// make everyone else look inactive to matchmaking (which measures from the latest round's
/// time), until a correction.
pub const MAX_SECONDS_AHEAD: i64 = 86_400;

/// Refuses `round` if it is timed more than [`MAX_SECONDS_AHEAD`] after this machine's clock:
/// the service's check of a posted round, and `import`'s of the rounds it will post. Replays
/// of a file take any time.
///
/// # Errors
/// A [`FieldError`] naming `time`.
pub fn not_ahead(round: &engine::Round) -> Result<(), FieldError> {
    let latest = OffsetDateTime::now_utc().unix_timestamp() + MAX_SECONDS_AHEAD;
    match round.time {
        Some(time) if time > latest => Err(FieldError::new(
            "time",
            "is more than a day after the service's clock: a round is posted once it is played",
        )),
        _ => Ok(()),
    }
}

/// Largest rank: both databases store ranks as signed 64-bit integers, so a larger one would
/// be accepted and then never commit, holding up its pool's queue for good.
pub const MAX_RANK: u64 = i64::MAX as u64;

const ROUND_FIELDS: [&str; 5] = ["id", "time", "weight", "perf_ceiling", "standings"];
const STANDING_FIELDS: [&str; 4] = ["player", "rank", "team", "partial_play"];

impl RoundRequest {
    /// Reads a round from parsed JSON, checking every field's presence and type, and that
    /// ranks are integers >= 1.
    pub fn from_value(value: &Value) -> Result<Self, FieldError> {
        let object = as_object(value, "", &ROUND_FIELDS)?;
        let standings = match object.get("standings") {
            Some(Value::Array(entries)) => entries
                .iter()
                .enumerate()
                .map(|(i, entry)| StandingRequest::from_value(entry, &StandingAt(i)))
                .collect::<Result<_, _>>()?,
            Some(_) => return Err(FieldError::new("standings", "must be an array")),
            None => return Err(FieldError::new("standings", "is missing")),
        };
        Ok(Self {
            id: required_string(object, "", "id")?,
            time: optional_string(object, "", "time")?,
            weight: optional_number(object, "", "weight")?,
            perf_ceiling: optional_number(object, "", "perf_ceiling")?,
            standings,
        })
    }

    /// Every check a round must pass in any pool: its id ([`crate::names::id_problem`]), its
    /// players' and teams' ids ([`crate::names::written_id_problem`]: in NFC too) and the round
    /// itself ([`Self::to_round`]). What only a pool's rating system refuses is `check_round`'s.
    pub fn checked_round(&self) -> Result<engine::Round, FieldError> {
        if let Some(problem) = crate::names::id_problem(&self.id) {
            return Err(FieldError::new("id", problem));
        }
        for (i, standing) in self.standings.iter().enumerate() {
            let ids = std::iter::once(("player", standing.player.as_str()))
                .chain(standing.team.as_deref().map(|team| ("team", team)));
            for (key, id) in ids {
                if let Some(problem) = crate::names::written_id_problem(id) {
                    return Err(FieldError::new(StandingAt(i).field(key), problem));
                }
            }
        }
        self.to_round()
    }

    /// The engine's round: `time` becomes Unix seconds, an absent weight 1. The engine's own
    /// checks (duplicate players, team ranks, weight range, …) run here too, so a round that
    /// converts is one the engine accepts.
    pub fn to_round(&self) -> Result<engine::Round, FieldError> {
        self.clone().into_round()
    }

    /// What a re-post of this round is compared by: its canonical JSON with what does not
    /// change its meaning evened out. The standings sorted by rank, team and player (their
    /// order in the list changes no rating), an explicit weight of 1 left out like an absent
    /// one, and the time as the same instant in UTC. A round already written that way gives
    /// its canonical JSON itself. For a round [`Self::checked_round`] accepted.
    pub fn comparison_key(&self) -> Result<String, serde_json::Error> {
        /// [`RoundRequest`]'s fields, in its order, borrowed.
        #[derive(Serialize)]
        struct Key<'a> {
            id: &'a str,
            #[serde(skip_serializing_if = "Option::is_none")]
            time: Option<String>,
            #[serde(skip_serializing_if = "Option::is_none")]
            weight: Option<f64>,
            #[serde(skip_serializing_if = "Option::is_none")]
            perf_ceiling: Option<f64>,
            standings: Vec<&'a StandingRequest>,
        }
        let mut standings: Vec<&StandingRequest> = self.standings.iter().collect();
        standings.sort_by(|a, b| (a.rank, &a.team, &a.player).cmp(&(b.rank, &b.team, &b.player)));
        let time = self.time.as_deref().map(|text| {
            OffsetDateTime::parse(text, &Rfc3339)
                .ok()
                .and_then(|time| time.checked_to_offset(UtcOffset::UTC))
                .and_then(|time| time.format(&Rfc3339).ok())
                .unwrap_or_else(|| text.to_owned())
        });
        serde_json::to_string(&Key {
            id: &self.id,
            time,
            weight: self.weight.filter(|&weight| weight != 1.0),
            perf_ceiling: self.perf_ceiling,
            standings,
        })
    }

    /// [`Self::to_round`], moving the ids instead of copying them.
    pub fn into_round(self) -> Result<engine::Round, FieldError> {
        if self.id.is_empty() {
            return Err(FieldError::new("id", "must not be empty"));
        }
        let time = self
            .time
            .as_deref()
            .map(|text| {
                OffsetDateTime::parse(text, &Rfc3339)
                    .map(OffsetDateTime::unix_timestamp)
                    .map_err(|e| FieldError::new("time", format!("not an RFC 3339 time: {e}")))
            })
            .transpose()?;
        let round = engine::Round {
            time,
            weight: self.weight.unwrap_or(1.0),
            perf_ceiling: self.perf_ceiling,
            standings: self
                .standings
                .into_iter()
                .map(|s| engine::Standing {
                    player: s.player,
                    rank: s.rank,
                    team: s.team,
                    partial_play: s.partial_play,
                })
                .collect(),
        };
        round.validate()?;
        Ok(round)
    }
}

const SEASON_FIELDS: [&str; 3] = ["id", "mu_reset", "sigma_reset"];

impl SeasonRequest {
    /// Reads a season start from parsed JSON whose fields sit under `path` (empty for a
    /// request body, `season` inside a stream line), checking every field.
    pub fn from_value(value: &Value, path: &str) -> Result<Self, FieldError> {
        let object = as_object(value, path, &SEASON_FIELDS)?;
        let id = required_string(object, path, "id")?;
        if let Some(problem) = crate::names::id_problem(&id) {
            return Err(FieldError::new(path.field("id"), problem));
        }
        let fraction = |key: &str| match optional_number(object, path, key)? {
            None => Ok(0.0),
            Some(f) if (0.0..=1.0).contains(&f) => Ok(f),
            Some(_) => Err(FieldError::new(path.field(key), "must be between 0 and 1")),
        };
        Ok(Self {
            id,
            mu_reset: fraction("mu_reset")?,
            sigma_reset: fraction("sigma_reset")?,
        })
    }

    /// The engine's soft reset.
    #[must_use]
    pub fn reset(&self) -> engine::SoftReset {
        engine::SoftReset {
            mu: self.mu_reset,
            sigma: self.sigma_reset,
        }
    }
}

impl CorrectionRequest {
    /// Reads a correction from parsed JSON whose fields sit under `path` (empty for a request
    /// body, `correction` inside a stream line), checking every field and every id. Parameters
    /// (`"action": "params"`) are read as stored: `{"system": NAME, "params": {…}}`.
    pub fn from_value(value: &Value, path: &str) -> Result<Self, FieldError> {
        let object = value
            .as_object()
            .ok_or_else(|| FieldError::new(path, "must be a JSON object"))?;
        let action = required_string(object, path, "action")?;
        let fields: &[&str] = match action.as_str() {
            "void" => &["id", "action", "round"],
            "disqualify" => &["id", "action", "round", "player"],
            "rename" => &["id", "action", "player", "to"],
            "merge" => &["id", "action", "player", "into"],
            "params" => &["id", "action", "system"],
            _ => {
                return Err(FieldError::new(
                    path.field("action"),
                    "must be `void`, `disqualify`, `rename`, `merge` or `params`",
                ))
            }
        };
        as_object(value, path, fields)?;
        let id = |key: &str| {
            let text = required_string(object, path, key)?;
            match crate::names::id_problem(&text) {
                Some(problem) => Err(FieldError::new(path.field(key), problem)),
                None => Ok(text),
            }
        };
        let action = match action.as_str() {
            "void" => Correction::Void {
                round: id("round")?,
            },
            "disqualify" => Correction::Disqualify {
                round: id("round")?,
                player: id("player")?,
            },
            "rename" => Correction::Rename {
                player: id("player")?,
                to: id("to")?,
            },
            "merge" => Correction::Merge {
                player: id("player")?,
                into: id("into")?,
            },
            _ => {
                let system = object
                    .get("system")
                    .ok_or_else(|| FieldError::new(path.field("system"), "is missing"))?;
                Correction::Params {
                    system: serde_json::from_value(system.clone())
                        .map_err(|e| FieldError::new(path.field("system"), e.to_string()))?,
                }
            }
        };
        match &action {
            Correction::Rename { player, to: other }
            | Correction::Merge {
                player,
                into: other,
            } if player == other => {
                let key = if matches!(action, Correction::Rename { .. }) {
                    "to"
                } else {
                    "into"
                };
                return Err(FieldError::new(
                    path.field(key),
                    "must differ from `player`",
                ));
            }
            _ => {}
        }
        Ok(Self {
            id: id("id")?,
            action,
        })
    }
}

impl Entry {
    /// Reads one line of a round stream: `{"season": {…}}` starts a season,
    /// `{"correction": {…}}` corrects the rounds before it, anything else is read as a round.
    pub fn from_value(value: &Value) -> Result<Self, FieldError> {
        let object = value.as_object();
        if let Some(season) = object.and_then(|o| o.get("season")) {
            as_object(value, "", &["season"])?;
            return SeasonRequest::from_value(season, "season").map(Self::Season);
        }
        if let Some(correction) = object.and_then(|o| o.get("correction")) {
            as_object(value, "", &["correction"])?;
            return CorrectionRequest::from_value(correction, "correction").map(Self::Correction);
        }
        RoundRequest::from_value(value).map(Self::Round)
    }

    /// The line in canonical JSON: what is stored and exported, and for a season start or a
    /// correction what a re-post is compared by (a round's is [`RoundRequest::comparison_key`]).
    pub fn canonical(&self) -> Result<String, serde_json::Error> {
        #[derive(Serialize)]
        struct SeasonLine<'a> {
            season: &'a SeasonRequest,
        }
        #[derive(Serialize)]
        struct CorrectionLine<'a> {
            correction: &'a CorrectionRequest,
        }
        match self {
            Self::Round(round) => serde_json::to_string(round),
            Self::Season(season) => serde_json::to_string(&SeasonLine { season }),
            Self::Correction(correction) => serde_json::to_string(&CorrectionLine { correction }),
        }
    }
}

/// The line that opens a pool's export (`{"pool": {…}}`): the pool's name, rating system,
/// parameters and display settings when it was exported, so that `replay` rates the lines after
/// it as the pool did and `import` can create the pool. Read only as a file's first line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PoolLine {
    /// The pool's name.
    pub name: String,
    /// Its rating system and parameters (`"system"` and `"params"`).
    #[serde(flatten)]
    pub system: engine::SystemParams,
    /// How it shows ratings, as `PUT …/display` takes them.
    pub display: Display,
}

impl PoolLine {
    /// The pool line `value` holds, if it is one (an object whose one field is `pool`).
    pub fn from_value(value: &Value) -> Option<Result<Self, FieldError>> {
        let object = value.as_object().filter(|o| o.len() == 1)?;
        let pool = object.get("pool")?;
        Some(serde_path_to_error::deserialize(pool).map_err(|error| {
            let at = error.path().to_string();
            let field = if at == "." {
                "pool".to_owned()
            } else {
                format!("pool.{at}")
            };
            FieldError::new(field, error.into_inner().to_string())
        }))
    }

    /// Whether the text of a line is a pool line (valid or not).
    #[must_use]
    pub fn is_line(line: &str) -> bool {
        serde_json::from_str::<Value>(line).is_ok_and(|value| Self::from_value(&value).is_some())
    }

    /// The line in JSON, as an export opens with it.
    pub fn to_line(&self) -> Result<String, serde_json::Error> {
        #[derive(Serialize)]
        struct Line<'a> {
            pool: &'a PoolLine,
        }
        serde_json::to_string(&Line { pool: self })
    }
}

impl StandingRequest {
    fn from_value(value: &Value, at: &StandingAt) -> Result<Self, FieldError> {
        let object = as_object(value, at, &STANDING_FIELDS)?;
        let rank = match object.get("rank") {
            Some(rank) => match rank.as_u64() {
                Some(rank @ 1..=MAX_RANK) => rank,
                Some(0) | None => {
                    return Err(FieldError::new(
                        at.field("rank"),
                        "must be a positive integer",
                    ))
                }
                Some(_) => {
                    return Err(FieldError::new(
                        at.field("rank"),
                        format!("must be at most {MAX_RANK}"),
                    ))
                }
            },
            None => return Err(FieldError::new(at.field("rank"), "is missing")),
        };
        Ok(Self {
            player: required_string(object, at, "player")?,
            rank,
            team: optional_string(object, at, "team")?,
            partial_play: optional_number(object, at, "partial_play")?,
        })
    }
}

impl<'de> Deserialize<'de> for RoundRequest {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Self::from_value(&value).map_err(serde::de::Error::custom)
    }
}

/// Where a JSON object sits in the document, spelled out only when an error names it or one
/// of its fields: a round carries thousands of standings, and formatting every field's path
/// up front cost more than parsing the JSON.
trait Place {
    /// The object's own path, empty for the document itself.
    fn path(&self) -> String;

    /// The path of the object's field `key`.
    fn field(&self, key: &str) -> String {
        let path = self.path();
        if path.is_empty() {
            key.to_owned()
        } else {
            format!("{path}.{key}")
        }
    }
}

impl Place for str {
    fn path(&self) -> String {
        self.to_owned()
    }
}

/// The place of `standings[i]`.
struct StandingAt(usize);

impl Place for StandingAt {
    fn path(&self) -> String {
        format!("standings[{}]", self.0)
    }
}

fn as_object<'a>(
    value: &'a Value,
    at: &(impl Place + ?Sized),
    known: &[&str],
) -> Result<&'a Map<String, Value>, FieldError> {
    let object = value
        .as_object()
        .ok_or_else(|| FieldError::new(at.path(), "must be a JSON object"))?;
    if let Some(unknown) = object.keys().find(|k| !known.contains(&k.as_str())) {
        return Err(FieldError::new(at.field(unknown), "unknown field"));
    }
    Ok(object)
}

fn required_string(
    object: &Map<String, Value>,
    at: &(impl Place + ?Sized),
    key: &str,
) -> Result<String, FieldError> {
    optional_string(object, at, key)?.ok_or_else(|| FieldError::new(at.field(key), "is missing"))
}

fn optional_string(
    object: &Map<String, Value>,
    at: &(impl Place + ?Sized),
    key: &str,
) -> Result<Option<String>, FieldError> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.clone())),
        Some(_) => Err(FieldError::new(at.field(key), "must be a string")),
    }
}

fn optional_number(
    object: &Map<String, Value>,
    at: &(impl Place + ?Sized),
    key: &str,
) -> Result<Option<f64>, FieldError> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(number) => number
            .as_f64()
            .map(Some)
            .ok_or_else(|| FieldError::new(at.field(key), "must be a number")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn convert(json: &str) -> Result<engine::Round, FieldError> {
        let value: Value = serde_json::from_str(json).expect("test JSON is well formed");
        RoundRequest::from_value(&value)?.to_round()
    }

    fn key(json: &str) -> String {
        let value: Value = serde_json::from_str(json).expect("test JSON is well formed");
        let request = RoundRequest::from_value(&value).expect("a round");
        request.comparison_key().expect("serializable")
    }

    #[test]
    fn the_comparison_key_evens_out_what_changes_no_rating_and_nothing_else() {
        let normal = r#"{"id":"r","time":"2024-05-01T12:00:00Z","standings":[{"player":"a","rank":1},{"player":"b","rank":2,"team":"x"},{"player":"c","rank":2,"team":"x"}]}"#;
        assert_eq!(key(normal), normal, "a round written evenly is its own key");
        for same in [
            r#"{"id":"r","time":"2024-05-01T12:00:00Z","standings":[{"player":"c","rank":2,"team":"x"},{"player":"a","rank":1},{"player":"b","rank":2,"team":"x"}]}"#,
            r#"{"id":"r","time":"2024-05-01T07:00:00-05:00","weight":1,"standings":[{"player":"a","rank":1},{"player":"b","rank":2,"team":"x"},{"player":"c","rank":2,"team":"x"}]}"#,
        ] {
            assert_eq!(key(same), normal, "{same}");
        }
        for other in [
            r#"{"id":"r","time":"2024-05-01T12:00:01Z","standings":[{"player":"a","rank":1},{"player":"b","rank":2,"team":"x"},{"player":"c","rank":2,"team":"x"}]}"#,
            r#"{"id":"r","time":"2024-05-01T12:00:00Z","weight":0.5,"standings":[{"player":"a","rank":1},{"player":"b","rank":2,"team":"x"},{"player":"c","rank":2,"team":"x"}]}"#,
            r#"{"id":"r","time":"2024-05-01T12:00:00Z","standings":[{"player":"a","rank":1},{"player":"b","rank":3,"team":"x"},{"player":"c","rank":3,"team":"x"}]}"#,
            r#"{"id":"r","time":"2024-05-01T12:00:00Z","standings":[{"player":"a","rank":2},{"player":"b","rank":1,"team":"x"},{"player":"c","rank":1,"team":"x"}]}"#,
            r#"{"id":"r","time":"2024-05-01T12:00:00Z","standings":[{"player":"a","rank":1},{"player":"b","rank":2,"team":"y"},{"player":"c","rank":2,"team":"y"}]}"#,
            r#"{"id":"r","time":"2024-05-01T12:00:00Z","standings":[{"player":"a","rank":1,"partial_play":0.5},{"player":"b","rank":2,"team":"x"},{"player":"c","rank":2,"team":"x"}]}"#,
            r#"{"id":"r","time":"2024-05-01T12:00:00Z","perf_ceiling":3000,"standings":[{"player":"a","rank":1},{"player":"b","rank":2,"team":"x"},{"player":"c","rank":2,"team":"x"}]}"#,
            r#"{"id":"r","standings":[{"player":"a","rank":1},{"player":"b","rank":2,"team":"x"},{"player":"c","rank":2,"team":"x"}]}"#,
        ] {
            assert_ne!(key(other), normal, "{other}");
        }
    }

    #[test]
    fn a_full_round_converts_with_its_time_in_unix_seconds() {
        let round = convert(
            r#"{"id": "cf-1", "time": "2010-02-19T15:00:00Z", "weight": 0.5,
                "perf_ceiling": 3000.0, "standings": [
                {"player": "tourist", "rank": 1},
                {"player": "Petr", "rank": 2, "team": "red"},
                {"player": "Egor", "rank": 2, "team": "red"}]}"#,
        )
        .expect("valid round");
        assert_eq!(round.time, Some(1_266_591_600));
        assert_eq!(round.weight, 0.5);
        assert_eq!(round.perf_ceiling, Some(3000.0));
        assert_eq!(round.standings[1].team.as_deref(), Some("red"));
    }

    #[test]
    fn optional_fields_may_be_absent_or_null() {
        let round = convert(
            r#"{"id": "r", "time": null, "standings": [
                {"player": "a", "rank": 1, "team": null}, {"player": "b", "rank": 2}]}"#,
        )
        .expect("valid round");
        assert_eq!(
            (round.time, round.weight, round.perf_ceiling),
            (None, 1.0, None)
        );
    }

    #[test]
    fn every_bad_field_is_named() {
        let two = r#"[{"player": "a", "rank": 1}, {"player": "b", "rank": 2}]"#;
        let cases = [
            ("[1, 2]".to_owned(), "", "a round must be an object"),
            (format!(r#"{{"standings": {two}}}"#), "id", "id is required"),
            (format!(r#"{{"id": "", "standings": {two}}}"#), "id", "id is not empty"),
            (format!(r#"{{"id": 7, "standings": {two}}}"#), "id", "id is a string"),
            (format!(r#"{{"id": "r", "colour": 1, "standings": {two}}}"#), "colour", "unknown fields are rejected"),
            (format!(r#"{{"id": "r", "time": "yesterday", "standings": {two}}}"#), "time", "time is RFC 3339"),
            (format!(r#"{{"id": "r", "weight": "1", "standings": {two}}}"#), "weight", "weight is a number"),
            (format!(r#"{{"id": "r", "weight": 0, "standings": {two}}}"#), "weight", "weight is positive"),
            (format!(r#"{{"id": "r", "perf_ceiling": [], "standings": {two}}}"#), "perf_ceiling", "ceiling is a number"),
            (r#"{"id": "r"}"#.to_owned(), "standings", "standings are required"),
            (r#"{"id": "r", "standings": {}}"#.to_owned(), "standings", "standings are an array"),
            (r#"{"id": "r", "standings": [{"player": "a", "rank": 1}]}"#.to_owned(), "standings", "one entrant is not a round"),
            (r#"{"id": "r", "standings": [{"player": "a", "rank": 1}, 3]}"#.to_owned(), "standings[1]", "a standing is an object"),
            (r#"{"id": "r", "standings": [{"player": "a", "rank": 1}, {"player": "b", "rank": 0}]}"#.to_owned(), "standings[1].rank", "rank 0 is rejected"),
            (r#"{"id": "r", "standings": [{"player": "a", "rank": 1}, {"player": "b", "rank": 1.5}]}"#.to_owned(), "standings[1].rank", "a fractional rank is rejected"),
            (r#"{"id": "r", "standings": [{"player": "a", "rank": 1}, {"player": "b", "rank": -2}]}"#.to_owned(), "standings[1].rank", "a negative rank is rejected"),
            (r#"{"id": "r", "standings": [{"player": "a", "rank": 1}, {"player": "b", "rank": 9223372036854775808}]}"#.to_owned(), "standings[1].rank", "a rank no database can store is rejected"),
            (r#"{"id": "r", "standings": [{"player": "a", "rank": 1}, {"player": "b"}]}"#.to_owned(), "standings[1].rank", "rank is required"),
            (r#"{"id": "r", "standings": [{"player": "a", "rank": 1}, {"rank": 2}]}"#.to_owned(), "standings[1].player", "player is required"),
            (r#"{"id": "r", "standings": [{"player": "a", "rank": 1}, {"player": "a", "rank": 2}]}"#.to_owned(), "standings[1].player", "a duplicate player is rejected"),
            (r#"{"id": "r", "standings": [{"player": "a", "rank": 1}, {"player": "b", "rank": 2, "seat": 1}]}"#.to_owned(), "standings[1].seat", "unknown standing fields are rejected"),
            (r#"{"id": "r", "standings": [{"player": "a", "rank": 1}, {"player": "b", "rank": 2, "team": 5}]}"#.to_owned(), "standings[1].team", "team is a string"),
            (r#"{"id": "r", "standings": [{"player": "a", "rank": 1}, {"player": "b", "rank": 2, "partial_play": "all"}]}"#.to_owned(), "standings[1].partial_play", "partial play is a number"),
            (r#"{"id": "r", "standings": [{"player": "a", "rank": 1}, {"player": "b", "rank": 2, "partial_play": 0}]}"#.to_owned(), "standings[1].partial_play", "partial play is positive"),
            (r#"{"id": "r", "standings": [{"player": "a", "rank": 1}, {"player": "b", "rank": 2, "partial_play": 1.5}]}"#.to_owned(), "standings[1].partial_play", "partial play is at most 1"),
        ];
        for (json, field, why) in cases {
            match convert(&json) {
                Err(error) => assert_eq!(error.field, field, "{why}: {error}"),
                Ok(round) => panic!("{why}: accepted {round:?}"),
            }
        }
    }

    #[test]
    fn the_largest_rank_a_database_can_store_is_accepted() {
        let json = format!(
            r#"{{"id": "r", "standings": [{{"player": "a", "rank": 1}}, {{"player": "b", "rank": {MAX_RANK}}}]}}"#
        );
        let round = convert(&json).expect("a valid round");
        assert_eq!(round.standings[1].rank, MAX_RANK);
    }

    #[test]
    fn serde_deserialization_reports_the_field_path() {
        let error = serde_json::from_str::<RoundRequest>(
            r#"{"id": "r", "standings": [{"player": "a", "rank": 0}]}"#,
        )
        .expect_err("rank 0 is rejected");
        assert!(error
            .to_string()
            .starts_with("standings[0].rank: must be a positive integer"));
    }

    #[test]
    fn a_season_line_is_read_checked_and_written_back_canonically() {
        let read = |json: &str| Entry::from_value(&serde_json::from_str(json).expect("JSON"));
        let line = read(r#"{"season": {"id": "s2", "mu_reset": 0.5}}"#).expect("valid");
        assert_eq!(
            line.canonical().expect("serializable"),
            r#"{"season":{"id":"s2","mu_reset":0.5,"sigma_reset":0.0}}"#
        );
        assert_eq!(read(&line.canonical().expect("serializable")), Ok(line));
        for (json, field) in [
            (
                r#"{"season": {"id": "s", "mu_reset": 1.5}}"#,
                "season.mu_reset",
            ),
            (
                r#"{"season": {"id": "s", "sigma_reset": -0.1}}"#,
                "season.sigma_reset",
            ),
            (
                r#"{"season": {"id": "s", "sigma_reset": "1"}}"#,
                "season.sigma_reset",
            ),
            (r#"{"season": {"mu_reset": 1}}"#, "season.id"),
            (r#"{"season": {"id": ""}}"#, "season.id"),
            (r#"{"season": {"id": "s", "colour": 1}}"#, "season.colour"),
            (r#"{"season": {"id": "s"}, "standings": []}"#, "standings"),
            (r#"{"season": 3}"#, "season"),
        ] {
            assert_eq!(read(json).expect_err(json).field, field, "{json}");
        }
        let round = read(r#"{"id": "r", "standings": []}"#).expect("a round line");
        assert!(matches!(round, Entry::Round(_)));
    }

    #[test]
    fn a_correction_line_is_read_checked_and_written_back_canonically() {
        let read = |json: &str| Entry::from_value(&serde_json::from_str(json).expect("JSON"));
        for json in [
            r#"{"correction":{"id":"c1","action":"void","round":"r1"}}"#,
            r#"{"correction":{"id":"c2","action":"disqualify","round":"r1","player":"bob"}}"#,
            r#"{"correction":{"id":"c3","action":"rename","player":"bob","to":"rob"}}"#,
            r#"{"correction":{"id":"c4","action":"merge","player":"bob2","into":"bob"}}"#,
        ] {
            let line = read(json).expect(json);
            assert_eq!(line.canonical().expect("serializable"), json);
        }
        let params = read(
            r#"{"correction":{"id":"c5","action":"params","system":{"system":"elo","params":{"mu_init":1500.0,"k":32.0,"temperature":400.0}}}}"#,
        );
        assert!(matches!(params, Ok(Entry::Correction(_))), "{params:?}");
        for (json, field) in [
            (
                r#"{"correction": {"id": "c", "action": "undo"}}"#,
                "correction.action",
            ),
            (r#"{"correction": {"id": "c"}}"#, "correction.action"),
            (
                r#"{"correction": {"id": "c", "action": "void"}}"#,
                "correction.round",
            ),
            (
                r#"{"correction": {"id": "c", "action": "void", "round": "r", "player": "p"}}"#,
                "correction.player",
            ),
            (
                r#"{"correction": {"action": "void", "round": "r"}}"#,
                "correction.id",
            ),
            (
                r#"{"correction": {"id": "c", "action": "rename", "player": "a", "to": "a"}}"#,
                "correction.to",
            ),
            (
                r#"{"correction": {"id": "c", "action": "merge", "player": "a", "into": ""}}"#,
                "correction.into",
            ),
            (
                r#"{"correction": {"id": "c", "action": "params", "system": {"system": "chess"}}}"#,
                "correction.system",
            ),
        ] {
            assert_eq!(read(json).expect_err(json).field, field, "{json}");
        }
    }

    #[test]
    fn a_round_survives_a_trip_through_json() {
        let json = r#"{"id":"r","weight":2.0,"standings":[{"player":"a","rank":1,"team":"t"},{"player":"b","rank":1,"team":"t","partial_play":0.5},{"player":"c","rank":3}]}"#;
        let request: RoundRequest = serde_json::from_str(json).expect("valid round");
        assert_eq!(serde_json::to_string(&request).expect("serializable"), json);
    }
}
