//! The rounds the crash, fault and bound tests post, as the exact text sent: parsed from
//! `../shared/data` or made up from a seed, so that a test runs without the data set too.
//! Owns the seeded generator those tests draw their randomness from; posts nothing.

use serde_json::json;

/// A round as posted: its id, its body, and the history rows it must leave once applied.
#[derive(Debug, Clone)]
pub struct Round {
    /// The round's id.
    pub id: String,
    /// The JSON line as given to `replay`; for a round, exactly the body posted.
    pub body: String,
    /// Its standings, one per player (none for a season start).
    pub entrants: usize,
}

impl Round {
    /// The round, or season start (`{"season": {…}}`), whose JSON line is `body`.
    pub fn parse(body: String) -> Self {
        let value: serde_json::Value = serde_json::from_str(&body).expect("a round is JSON");
        if let Some(season) = value.get("season") {
            return Self {
                id: season["id"]
                    .as_str()
                    .expect("a season has an id")
                    .to_owned(),
                entrants: 0,
                body,
            };
        }
        Self {
            id: value["id"].as_str().expect("a round has an id").to_owned(),
            entrants: value["standings"].as_array().expect("standings").len(),
            body,
        }
    }

    /// The route under the pool's URL the line is posted to, and the body posted.
    pub fn posted(&self) -> (&'static str, String) {
        let value: serde_json::Value = serde_json::from_str(&self.body).expect("JSON");
        match value.get("season") {
            Some(season) => ("seasons", season.to_string()),
            None => ("rounds", self.body.clone()),
        }
    }
}

/// SplitMix64 (Steele, Lea and Flood 2014): a few lines with no dependency, and the same seed
/// gives the same draws, so a printed seed replays a failing schedule.
pub struct Rng(u64);

impl Rng {
    /// A generator starting from `seed`.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A draw from `0..n` (the modulo bias is irrelevant at these sizes).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// `count` rounds named `{prefix}-0`, `{prefix}-1`, …, each of `entrants` players drawn from
/// `players` named `{prefix}-p0`, … in a random order, with some ties.
pub fn synthetic(
    rng: &mut Rng,
    prefix: &str,
    count: usize,
    players: usize,
    entrants: usize,
) -> Vec<Round> {
    assert!(
        entrants <= players,
        "a round cannot hold more players than exist"
    );
    (0..count)
        .map(|i| {
            let mut pool: Vec<usize> = (0..players).collect();
            // A partial Fisher–Yates shuffle: the first `entrants` are a uniform draw.
            for j in 0..entrants {
                let k = j + rng.below((players - j) as u64) as usize;
                pool.swap(j, k);
            }
            let mut rank = 0;
            let standings: Vec<serde_json::Value> = pool[..entrants]
                .iter()
                .enumerate()
                .map(|(place, player)| {
                    let ties_previous = place > 0 && rng.below(8) == 0;
                    if !ties_previous {
                        rank = place + 1;
                    }
                    json!({"player": format!("{prefix}-p{player}"), "rank": rank})
                })
                .collect();
            Round::parse(json!({"id": format!("{prefix}-{i}"), "standings": standings}).to_string())
        })
        .collect()
}

/// One round `id` of `entrants` players named `{id}-p0`, …, ranked in that order with every
/// third place tied: large enough to keep the worker busy for a while.
pub fn wide(id: &str, entrants: usize) -> Round {
    let standings: Vec<serde_json::Value> = (0..entrants)
        .map(|i| json!({"player": format!("{id}-p{i}"), "rank": i / 3 + 1}))
        .collect();
    Round::parse(json!({"id": id, "standings": standings}).to_string())
}
