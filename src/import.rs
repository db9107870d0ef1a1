//! `mmr-service import`: posts a file of rounds to a pool of a running service in order, as a
//! platform posting its history would: the rounds between two season starts go in batches
//! (`POST …/round-batches`, one transaction each), a season start alone. Every round is
//! checked before the first is sent, so a bad line stops the import before anything changed.
//! Answers of 429 and 503 (and 502/504 from a proxy, and lost connections) are retried after a
//! pause that doubles, never shorter than the `Retry-After` the service asks for. Posting is
//! idempotent by round id, so an import that was stopped can be run again: it first finds, by
//! binary search over the file, the first round the service does not know, and goes on from
//! there.

use std::path::PathBuf;
use std::thread::sleep;
use std::time::Duration;

use anyhow::{bail, Context};
use indicatif::{ProgressBar, ProgressStyle};
use percent_encoding::{utf8_percent_encode, NON_ALPHANUMERIC};
use reqwest::blocking::{Client, RequestBuilder, Response};
use reqwest::StatusCode;
use serde::Serialize;
use serde_json::{json, Value};
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;
use unicode_normalization::UnicodeNormalization;

use crate::engine::{Round, SystemParams};
use crate::replay::{self, InputFormat, Line};
use crate::wire::{Entry, PoolLine, RoundRequest};

/// The longest pause between two tries when the service gives no `Retry-After`.
const MOST_BACKOFF: Duration = Duration::from_secs(30);

/// How long one request may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// Most characters of round bodies in one batch: well under the service's default body limit
/// (32 MiB), so that a batch is neither refused nor slow to send again after a retry.
const BATCH_CHARS: usize = 8 << 20;

/// What to import, and where.
#[derive(Debug, Clone)]
pub struct Options {
    /// The service, e.g. `http://127.0.0.1:8080`.
    pub url: String,
    /// The pool the rounds go to: it must exist, unless the input opens with an export's pool line, which creates it.
    pub pool: String,
    /// The rounds.
    pub input: PathBuf,
    /// How they are laid out.
    pub format: InputFormat,
    /// A key with the `write` role (`admin` if the input starts seasons).
    pub key: Option<String>,
    /// Post every round, even those the service already has (they are answered 200).
    pub from_start: bool,
    /// Write player and team ids in NFC rather than refuse a line with an id that is not.
    pub nfc: bool,
    /// Tries per request before giving up (429, 503 and lost connections are retried).
    pub attempts: u32,
    /// Most rounds per request.
    pub batch_rounds: usize,
    /// Draw a progress bar.
    pub progress: bool,
}

/// What an import did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// Rounds and season starts in the input.
    pub rounds: usize,
    /// Rounds (and season starts) skipped because the service had them from an earlier
    /// import.
    pub skipped: usize,
    /// Rounds the service accepted now (202).
    pub accepted: usize,
    /// Rounds posted that the service already had, with the same content (200).
    pub known: usize,
    /// Answers of 429 or 503, and lost connections, that were retried.
    pub retries: usize,
}

/// One line ready to post: where it came from, its id, the round (none for a season start)
/// and the body to post.
struct Outgoing {
    location: String,
    id: String,
    round: Option<Round>,
    body: String,
}

impl Outgoing {
    /// The route the line is posted to, under the pool's URL.
    fn route(&self) -> &'static str {
        if self.round.is_some() {
            "rounds"
        } else {
            "seasons"
        }
    }
}

/// The id and round of a body, checked as the service checks every round.
fn checked(body: &Value, location: &str) -> anyhow::Result<(String, Round)> {
    let request =
        RoundRequest::from_value(body).map_err(|error| anyhow::anyhow!("{location}: {error}"))?;
    let round = request
        .checked_round()
        .and_then(|round| crate::wire::not_ahead(&round).map(|()| round))
        .map_err(|error| anyhow::anyhow!("{location}: {error}"))?;
    Ok((request.id, round))
}

/// A line of JSON Lines input as it will be posted: a round, or a season start
/// (`{"season": {…}}`, posted to the seasons route); with `nfc`, its player and team ids in
/// NFC.
fn outgoing(line: &str, location: String, nfc: bool) -> anyhow::Result<Outgoing> {
    let mut value: Value =
        serde_json::from_str(line).with_context(|| format!("{location}: invalid JSON"))?;
    if PoolLine::from_value(&value).is_some() {
        bail!(
            "{location}: a pool line opens a file (a pool's export) and is not read further down"
        );
    }
    let normalized = nfc && in_nfc(&mut value);
    match Entry::from_value(&value) {
        Ok(Entry::Season(season)) => Ok(Outgoing {
            location,
            id: season.id.clone(),
            round: None,
            body: serde_json::to_string(&season).context("a season start's body")?,
        }),
        Ok(Entry::Correction(_)) => bail!(
            "{location}: a correction: corrections are applied where they were made; an export \
             holds the corrected rounds"
        ),
        Err(error) if value.get("season").is_some() => bail!("{location}: {error}"),
        Ok(Entry::Round(_)) | Err(_) => {
            let (id, round) = checked(&value, &location).map_err(|error| {
                if error.to_string().contains("(NFC)") {
                    anyhow::anyhow!("{error} (`--nfc` writes such ids in NFC)")
                } else {
                    error
                }
            })?;
            Ok(Outgoing {
                location,
                id,
                round: Some(round),
                body: if normalized {
                    value.to_string()
                } else {
                    line.trim().to_owned()
                },
            })
        }
    }
}

/// Rewrites the player and team ids of a round's standings in NFC; says whether any changed.
fn in_nfc(round: &mut Value) -> bool {
    let mut changed = false;
    let standings = round.get_mut("standings").and_then(Value::as_array_mut);
    for standing in standings.into_iter().flatten() {
        for field in ["player", "team"] {
            if let Some(Value::String(id)) = standing.get_mut(field) {
                if !unicode_normalization::is_nfc(id) {
                    *id = id.nfc().collect();
                    changed = true;
                }
            }
        }
    }
    changed
}

/// Imports the input, and says what it did.
pub fn run(options: &Options) -> anyhow::Result<Summary> {
    if !["http://", "https://"]
        .iter()
        .any(|scheme| options.url.starts_with(scheme))
    {
        bail!(
            "--url `{}` names no service: give its base URL, such as http://127.0.0.1:8080",
            options.url
        );
    }
    let (pool_line, rounds) = read(options)?;
    let client = Client::builder()
        .timeout(REQUEST_TIMEOUT)
        .build()
        .context("starting the HTTP client")?;
    let api = Api {
        client,
        base: format!(
            "{}/v1/pools/{}",
            options.url.trim_end_matches('/'),
            utf8_percent_encode(&options.pool, NON_ALPHANUMERIC)
        ),
        key: options.key.clone(),
        attempts: options.attempts.max(1),
    };
    let mut summary = Summary {
        rounds: rounds.len(),
        ..Summary::default()
    };
    // What only the pool's rating system refuses (teams in a Topcoder pool, say), checked
    // before anything is posted too.
    let system = match (api.system(&mut summary)?, pool_line) {
        (Some(system), Some(line)) if system != line.system => bail!(
            "pool `{}` rates with other parameters than the pool line of the input (exported \
             from `{}`): the ratings would differ from that pool's; import into a new pool",
            options.pool,
            line.name
        ),
        (Some(system), _) => system,
        (None, Some(line)) => {
            api.create(&line, &mut summary)?;
            line.system
        }
        (None, None) => bail!(
            "there is no pool `{0}`: create it first (PUT /v1/pools/{0}), or import a pool's \
             export, whose first line creates it",
            options.pool
        ),
    };
    for outgoing in &rounds {
        if let Some(round) = &outgoing.round {
            system
                .check_round(round)
                .map_err(|error| anyhow::anyhow!("{}: {error}", outgoing.location))?;
        }
    }
    let start = if options.from_start {
        0
    } else {
        api.first_unknown(&rounds, &mut summary)?
    };
    if let Some(last) = start.checked_sub(1).map(|i| &rounds[i]) {
        // The service knows the id; the same round must be behind it, or this is another file.
        let response = api.post(last, &mut summary)?;
        match response.status() {
            StatusCode::OK => {}
            StatusCode::CONFLICT => bail!(
                "{}: the pool's round `{}` is not this one (409): the pool did not come from an \
                 earlier import of this input",
                last.location,
                last.id
            ),
            _ => return Err(refused(last, response)),
        }
    }
    summary.skipped = start;
    let bar = if options.progress {
        ProgressBar::new(rounds.len() as u64)
    } else {
        ProgressBar::hidden()
    };
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} rounds, {per_sec}, {eta} left")
            .context("the progress bar's template")?,
    );
    bar.set_position(start as u64);
    let mut at = start;
    while at < rounds.len() {
        let batch = next_batch(&rounds[at..], options.batch_rounds.max(1));
        post_batch(&api, batch, &mut summary)?;
        bar.inc(batch.len() as u64);
        at += batch.len();
    }
    bar.finish_and_clear();
    Ok(summary)
}

/// The lines posted next: a season start alone, or the rounds up to the next season start,
/// at most `most` of them and [`BATCH_CHARS`] of bodies (always one).
fn next_batch(lines: &[Outgoing], most: usize) -> &[Outgoing] {
    if lines.first().is_some_and(|line| line.round.is_none()) {
        return &lines[..1];
    }
    let mut chars = 0;
    let end = lines
        .iter()
        .take(most)
        .take_while(|line| {
            chars += line.body.len();
            line.round.is_some() && (chars <= BATCH_CHARS)
        })
        .count();
    &lines[..end.max(1)]
}

/// Posts one line to its route and counts the answer.
fn post_one(api: &Api, line: &Outgoing, summary: &mut Summary) -> anyhow::Result<()> {
    let response = api.post(line, summary)?;
    match response.status() {
        StatusCode::ACCEPTED => summary.accepted += 1,
        StatusCode::OK => summary.known += 1,
        _ => return Err(refused(line, response)),
    }
    Ok(())
}

/// The error of a line the service refused, with the service's answer.
fn refused(line: &Outgoing, response: Response) -> anyhow::Error {
    let status = response.status();
    anyhow::anyhow!(
        "{}: round `{}` refused with {status}: {}",
        line.location,
        line.id,
        response.text().unwrap_or_default()
    )
}

/// Posts `rounds` as one batch and counts each round's answer; a batch the service finds too
/// large (413) goes again in two halves. A refusal names the round the service's error points
/// at (`rounds[i]…`), or else the batch's first and last.
fn post_batch(api: &Api, rounds: &[Outgoing], summary: &mut Summary) -> anyhow::Result<()> {
    if rounds.len() == 1 {
        return post_one(api, &rounds[0], summary);
    }
    let mut body = String::from(r#"{"rounds":["#);
    for (i, round) in rounds.iter().enumerate() {
        if i > 0 {
            body.push(',');
        }
        body.push_str(&round.body);
    }
    body.push_str("]}");
    let url = format!("{}/round-batches", api.base);
    let response = api.call(|c| c.post(&url).body(body.clone()), summary)?;
    let status = response.status();
    if status == StatusCode::PAYLOAD_TOO_LARGE {
        let (first, second) = rounds.split_at(rounds.len() / 2);
        post_batch(api, first, summary)?;
        return post_batch(api, second, summary);
    }
    let text = response.text().unwrap_or_default();
    let answer: Value = serde_json::from_str(&text).unwrap_or_default();
    if !matches!(status, StatusCode::ACCEPTED | StatusCode::OK) {
        if answer["error"]["code"] == "route_not_found" {
            bail!(
                "the service has no POST …/round-batches (an older version?): use --batch-rounds 1"
            );
        }
        let culprit = answer["error"]["field"]
            .as_str()
            .and_then(|field| field.strip_prefix("rounds["))
            .and_then(|rest| rest.split(']').next())
            .and_then(|index| index.parse::<usize>().ok())
            .and_then(|index| rounds.get(index));
        match culprit {
            Some(round) => bail!(
                "{}: round `{}` refused with {status}: {text}",
                round.location,
                round.id
            ),
            None => bail!(
                "{} to {}: a batch of {} rounds refused with {status}: {text}",
                rounds[0].location,
                rounds[rounds.len() - 1].location,
                rounds.len()
            ),
        }
    }
    let answers = answer["rounds"].as_array().map_or(&[][..], Vec::as_slice);
    if answers.len() != rounds.len() {
        bail!(
            "the service answered a batch of {} rounds with {text}",
            rounds.len()
        );
    }
    for answer in answers {
        if answer["position"].is_u64() {
            summary.accepted += 1;
        } else {
            summary.known += 1;
        }
    }
    Ok(())
}

/// The pool line the input opens with, if any, and the input as bodies to post, every one
/// checked as the service will check it, ids unique.
fn read(options: &Options) -> anyhow::Result<(Option<PoolLine>, Vec<Outgoing>)> {
    let pool = replay::input::pool_line(&options.input, options.format)?;
    let rounds = parse(options)?;
    let mut seen = std::collections::HashMap::new();
    for round in &rounds {
        if let Some(first) = seen.insert(round.id.as_str(), round.location.as_str()) {
            bail!(
                "{}: round id `{}` is also the id of {first}: a pool keeps one round per id",
                round.location,
                round.id
            );
        }
    }
    Ok((pool, rounds))
}

/// The input as bodies to post.
fn parse(options: &Options) -> anyhow::Result<Vec<Outgoing>> {
    let path = &options.input;
    match options.format {
        InputFormat::Jsonl => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read {}", path.display()))?;
            let mut lines: Vec<(usize, &str)> = text
                .lines()
                .enumerate()
                .filter(|(_, line)| !line.trim().is_empty())
                .collect();
            // A pool line opens an export: `read` takes it apart.
            if lines
                .first()
                .is_some_and(|(_, line)| PoolLine::is_line(line))
            {
                lines.remove(0);
            }
            lines
                .into_iter()
                .map(|(index, line)| outgoing(line, format!("line {}", index + 1), options.nfc))
                .collect()
        }
        InputFormat::EloMmrDir => replay::input::read(path, options.format)?
            .into_iter()
            .enumerate()
            .map(|(index, sourced)| {
                let Line::Round(round) = sourced.line else {
                    bail!("{}: a directory holds rounds only", sourced.location);
                };
                let standings: Vec<Value> = round
                    .standings
                    .iter()
                    .map(|s| json!({"player": s.player, "rank": s.rank}))
                    .collect();
                // The file's index is the round's id: the same on every run, so a second
                // import of the directory finds its rounds.
                let mut body = json!({"id": index.to_string(), "standings": standings});
                if let Some(time) = round.time {
                    let time = OffsetDateTime::from_unix_timestamp(time)
                        .ok()
                        .and_then(|t| t.format(&Rfc3339).ok())
                        .with_context(|| format!("{}: time out of range", sourced.location))?;
                    body["time"] = time.into();
                }
                if round.weight != 1.0 {
                    body["weight"] = round.weight.into();
                }
                if options.nfc {
                    in_nfc(&mut body);
                }
                let (id, round) = checked(&body, &sourced.location)?;
                Ok(Outgoing {
                    location: sourced.location,
                    id,
                    round: Some(round),
                    body: body.to_string(),
                })
            })
            .collect(),
    }
}

/// The pool's rounds route, and how to call it.
struct Api {
    client: Client,
    base: String,
    key: Option<String>,
    attempts: u32,
}

impl Api {
    /// Sends the request `build` makes until it is answered with something other than 429,
    /// 502, 503 or 504, waiting between tries.
    fn call(
        &self,
        build: impl Fn(&Client) -> RequestBuilder,
        summary: &mut Summary,
    ) -> anyhow::Result<Response> {
        let mut pause = Duration::from_millis(250);
        for attempt in 1..=self.attempts {
            let mut request = build(&self.client).header("content-type", "application/json");
            if let Some(key) = &self.key {
                request = request.bearer_auth(key);
            }
            let wait = match request.send() {
                Ok(response)
                    if !matches!(
                        response.status(),
                        StatusCode::TOO_MANY_REQUESTS
                            | StatusCode::SERVICE_UNAVAILABLE
                            | StatusCode::BAD_GATEWAY
                            | StatusCode::GATEWAY_TIMEOUT
                    ) =>
                {
                    return Ok(response)
                }
                // Never sooner than the service asks, and longer as the tries go on.
                Ok(response) => retry_after(&response).map_or(pause, |asked| asked.max(pause)),
                Err(error) if attempt == self.attempts => {
                    return Err(error).context("the service did not answer")
                }
                Err(error) if error.is_builder() => return Err(error.into()),
                Err(_) => pause,
            };
            if attempt < self.attempts {
                summary.retries += 1;
                sleep(wait);
                pause = (pause * 2).min(MOST_BACKOFF);
            }
        }
        bail!("the service was still busy after {} tries", self.attempts)
    }

    /// Posts `line` to its route.
    fn post(&self, line: &Outgoing, summary: &mut Summary) -> anyhow::Result<Response> {
        let url = format!("{}/{}", self.base, line.route());
        self.call(|c| c.post(&url).body(line.body.clone()), summary)
    }

    /// The pool's rating system, as `GET /v1/pools/{pool}` states it; `None` if there is no
    /// such pool.
    fn system(&self, summary: &mut Summary) -> anyhow::Result<Option<SystemParams>> {
        let response = self.call(|c| c.get(&self.base), summary)?;
        let status = response.status();
        let body: Value = response.json().unwrap_or_default();
        if status == StatusCode::NOT_FOUND && body["error"]["code"] == "pool_not_found" {
            return Ok(None);
        }
        if status != StatusCode::OK {
            bail!("reading {}: {status}: {body}", self.base);
        }
        serde_json::from_value(json!({"system": body["system"], "params": body["params"]}))
            .with_context(|| format!("{}: a system this version does not know", self.base))
            .map(Some)
    }

    /// Creates the pool `line` describes: its system and parameters, then its display
    /// settings (an admin key's work).
    fn create(&self, line: &PoolLine, summary: &mut Summary) -> anyhow::Result<()> {
        let mut body = serde_json::to_value(&line.system).context("the pool line's system")?;
        let mut params = body["params"].take();
        if let Some(object) = params.as_object_mut() {
            object.insert("system".to_owned(), body["system"].take());
        }
        let display = serde_json::to_string(&line.display).context("the pool line's display")?;
        let display_url = format!("{}/display", self.base);
        for (url, body) in [(&self.base, params.to_string()), (&display_url, display)] {
            let response = self.call(|c| c.put(url).body(body.clone()), summary)?;
            let status = response.status();
            if !status.is_success() {
                let body: Value = response.json().unwrap_or_default();
                bail!("creating the pool from the input's pool line: PUT {url}: {status}: {body}");
            }
        }
        Ok(())
    }

    /// Whether the service knows round `id` (queued, applied or failed): its status, and of
    /// its results one at most.
    fn knows(&self, id: &str, summary: &mut Summary) -> anyhow::Result<bool> {
        let url = format!(
            "{}/rounds/{}?limit=1",
            self.base,
            utf8_percent_encode(id, NON_ALPHANUMERIC)
        );
        let response = self.call(|c| c.get(&url), summary)?;
        match response.status() {
            StatusCode::OK => Ok(true),
            StatusCode::NOT_FOUND => {
                let body: Value = response.json().unwrap_or_default();
                if body["error"]["code"] == "round_not_found" {
                    Ok(false)
                } else {
                    bail!("{}: {body}", self.base)
                }
            }
            status => bail!(
                "reading round `{id}`: {status}: {}",
                response.text().unwrap_or_default()
            ),
        }
    }

    /// The index of the first round the service does not know. Rounds are posted in order, so
    /// the ones it knows from an earlier import are a prefix of the input: found with
    /// O(log N) reads.
    fn first_unknown(&self, rounds: &[Outgoing], summary: &mut Summary) -> anyhow::Result<usize> {
        let (mut known, mut unknown) = (0, rounds.len());
        while known < unknown {
            let mid = known + (unknown - known) / 2;
            if self.knows(&rounds[mid].id, summary)? {
                known = mid + 1;
            } else {
                unknown = mid;
            }
        }
        Ok(known)
    }
}

/// The `Retry-After` of an answer, in seconds.
fn retry_after(response: &Response) -> Option<Duration> {
    let seconds: u64 = response
        .headers()
        .get("retry-after")?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()?;
    Some(Duration::from_secs(seconds.min(MOST_BACKOFF.as_secs())))
}
