//! How a pool shows its ratings (docs/display.md): the conservative rating `μ − kσ`, a
//! fixed-range display rating on `0..max` through the Fermi function, and which players are
//! still provisional. Everything here is derived from the displayed [`Rating`] and the rounds a
//! player played, so it works the same for every rating system and a pool's display settings
//! can change at any time. Pure: no I/O, no HTTP.

use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use utoipa::openapi::schema::{ObjectBuilder, OneOfBuilder, Schema, Type};
use utoipa::ToSchema;

use crate::engine::Rating;

pub mod leagues;

pub use leagues::{LeagueMove, LeagueTable, Leagues, Placement};

/// `k` of the conservative rating `μ − kσ` when a pool sets none.
pub const DEFAULT_CONSERVATIVE_K: f64 = 3.0;

/// The largest `k` accepted: beyond it μ − kσ says nothing more, and a huge k would overflow.
pub const MAX_CONSERVATIVE_K: f64 = 100.0;

/// `max` of the fixed-range rating when a pool sets none: the article's 0..10,000.
pub const DEFAULT_MAX: f64 = 10_000.0;

/// Rounds a player must have played to be established when a pool's settings leave
/// `provisional` out: one or two results say little about anyone, and a leaderboard that lists
/// them puts lucky newcomers at the top (on the ctftime history, 45 of the top 100 by μ had
/// played one or two rounds).
pub const DEFAULT_MIN_ROUNDS: u64 = 3;

/// A pool's display settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Display {
    /// `k` of the conservative rating `μ − kσ` (leaderboards' `order=conservative`): 0 to 100,
    /// default 3.
    #[serde(default = "default_k")]
    #[schema(minimum = 0.0, maximum = 100.0, example = 3.0)]
    pub conservative_k: f64,
    /// The fixed-range rating `display_rating`; absent or `null` for none.
    #[serde(default)]
    pub fixed_range: Option<FixedRange>,
    /// When a player counts as provisional: absent for the default (fewer than 3 rounds
    /// played), `null` for nobody.
    #[serde(default = "default_provisional")]
    pub provisional: Option<Provisional>,
    /// The leaderboard's order when a read gives no `order`: `"auto"` (default) is the display
    /// rating's when the pool has a fixed range, the conservative rating's otherwise.
    #[serde(default)]
    pub default_order: DefaultOrder,
    /// Whether the leaderboard lists provisional players when a read gives no `established`
    /// (default `false`: established players only).
    #[serde(default)]
    pub list_provisional: bool,
    /// The pool's leagues and divisions; absent or `null` for none. Unlike the other settings,
    /// leagues are state: changing them recomputes every player's league from the history.
    #[serde(default)]
    pub leagues: Option<Leagues>,
    /// Whether each applied round records every entrant's expected place before it
    /// (`expected_rank` in results and histories; default `false`). Computing it costs about
    /// three times the round's rating (BENCHMARKS.md), so a pool asks for it; rounds applied
    /// while it is off show `null`.
    #[serde(default)]
    pub expected_ranks: bool,
}

fn default_k() -> f64 {
    DEFAULT_CONSERVATIVE_K
}

fn default_max() -> f64 {
    DEFAULT_MAX
}

// An `Option` for serde's `default`, which takes a function returning the field's type.
#[allow(clippy::unnecessary_wraps)]
fn default_provisional() -> Option<Provisional> {
    Some(Provisional {
        min_rounds: DEFAULT_MIN_ROUNDS,
        max_sigma: None,
    })
}

impl Default for Display {
    /// What a new pool shows: settings left out of a `PUT` take these.
    fn default() -> Self {
        Self {
            conservative_k: DEFAULT_CONSERVATIVE_K,
            fixed_range: None,
            provisional: default_provisional(),
            default_order: DefaultOrder::Auto,
            list_provisional: false,
            leagues: None,
            expected_ranks: false,
        }
    }
}

/// A leaderboard's order when a read names none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum DefaultOrder {
    /// The display rating's when the pool has a fixed range, the conservative rating's
    /// otherwise.
    #[default]
    Auto,
    /// By μ.
    Mu,
    /// By μ − kσ.
    Conservative,
    /// By the fixed-range rating, which rises with μ: μ's order, named as players see it.
    DisplayRating,
}

/// Which rating a leaderboard is sorted by, as a read names it (`order`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Ranking {
    /// By μ.
    Mu,
    /// By μ − kσ.
    Conservative,
    /// By the fixed-range rating (μ's order).
    DisplayRating,
}

/// `display_rating = max / (1 + exp(−(μ − center) / scale))`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FixedRange {
    /// The top of the range (default 10,000); the pool's center maps to half of it.
    #[serde(default = "default_max")]
    #[schema(exclusive_minimum = 0.0, example = 10000.0)]
    pub max: f64,
    /// The rating shown as `max / 2`: a number, or `"auto"` (default; `null` too) for the mean
    /// μ of the pool's rated players.
    #[serde(default)]
    #[schema(schema_with = anchor_schema)]
    pub center: Anchor,
    /// The Fermi function's temperature in rating points: a number above 0, or `"auto"`
    /// (default; `null` too) for half the standard deviation of the rated players' μ.
    #[serde(default)]
    #[schema(schema_with = anchor_schema)]
    pub scale: Anchor,
}

/// An [`Anchor`] in the OpenAPI document: a number, or the string `"auto"` (default) or `null`.
fn anchor_schema() -> Schema {
    Schema::OneOf(
        OneOfBuilder::new()
            .item(ObjectBuilder::new().schema_type(Type::Number))
            .item(
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .enum_values(Some(["auto"])),
            )
            .item(ObjectBuilder::new().schema_type(Type::Null))
            .description(Some(
                "A number, or `\"auto\"` (the default) to derive it from the ratings.",
            ))
            .build(),
    )
}

/// A value given, or one derived from the current ratings.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum Anchor {
    /// Derived from the current ratings.
    #[default]
    Auto,
    /// This value.
    Value(f64),
}

impl Serialize for Anchor {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Auto => serializer.serialize_str("auto"),
            Self::Value(value) => serializer.serialize_f64(*value),
        }
    }
}

impl<'de> Deserialize<'de> for Anchor {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct AnchorVisitor;

        impl Visitor<'_> for AnchorVisitor {
            type Value = Anchor;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a number or \"auto\"")
            }

            fn visit_f64<E: de::Error>(self, value: f64) -> Result<Anchor, E> {
                Ok(Anchor::Value(value))
            }

            fn visit_i64<E: de::Error>(self, value: i64) -> Result<Anchor, E> {
                Ok(Anchor::Value(value as f64))
            }

            fn visit_u64<E: de::Error>(self, value: u64) -> Result<Anchor, E> {
                Ok(Anchor::Value(value as f64))
            }

            fn visit_unit<E: de::Error>(self) -> Result<Anchor, E> {
                Ok(Anchor::Auto)
            }

            fn visit_str<E: de::Error>(self, value: &str) -> Result<Anchor, E> {
                if value == "auto" {
                    Ok(Anchor::Auto)
                } else {
                    Err(E::invalid_value(de::Unexpected::Str(value), &self))
                }
            }
        }

        deserializer.deserialize_any(AnchorVisitor)
    }
}

/// A player is provisional until they have played `min_rounds` rounds and their σ is at most
/// `max_sigma`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Provisional {
    /// Rounds a player must have played (default 0).
    #[serde(default)]
    pub min_rounds: u64,
    /// Largest σ of an established player; absent or `null` for no bound. A system that keeps
    /// no σ (Elo) is judged by `min_rounds` alone.
    #[serde(default)]
    #[schema(exclusive_minimum = 0.0, example = 100.0)]
    pub max_sigma: Option<f64>,
}

impl Provisional {
    /// Whether a player of `rounds` rounds rated `rating` is still provisional.
    #[must_use]
    pub fn holds(&self, rounds: u64, rating: Rating) -> bool {
        rounds < self.min_rounds
            || matches!((rating.sigma, self.max_sigma), (Some(sigma), Some(max)) if sigma > max)
    }
}

/// What a pool's display settings derive from a player's rating and rounds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Shown {
    /// μ − kσ, with the pool's k.
    pub conservative: f64,
    /// The fixed-range rating, if the pool shows one.
    pub display_rating: Option<f64>,
    /// Whether the player is still provisional.
    pub provisional: bool,
}

/// A setting out of range, with the path of its field in the settings' JSON.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{field} {message}")]
pub struct InvalidDisplay {
    /// The field, e.g. `fixed_range.scale`.
    pub field: String,
    /// What is wrong with it.
    pub message: &'static str,
}

impl Display {
    /// Checks every setting's range.
    pub fn validate(&self) -> Result<(), InvalidDisplay> {
        let bad = |field: &str, message| {
            Err(InvalidDisplay {
                field: field.to_owned(),
                message,
            })
        };
        if !(0.0..=MAX_CONSERVATIVE_K).contains(&self.conservative_k) {
            return bad("conservative_k", "must be between 0 and 100");
        }
        if let Some(range) = &self.fixed_range {
            if !(range.max.is_finite() && range.max > 0.0) {
                return bad("fixed_range.max", "must be a finite number above 0");
            }
            if matches!(range.center, Anchor::Value(c) if !c.is_finite()) {
                return bad("fixed_range.center", "must be a finite number or \"auto\"");
            }
            if matches!(range.scale, Anchor::Value(s) if !(s.is_finite() && s > 0.0)) {
                return bad(
                    "fixed_range.scale",
                    "must be a finite number above 0 or \"auto\"",
                );
            }
        }
        if self.default_order == DefaultOrder::DisplayRating && self.fixed_range.is_none() {
            return bad(
                "default_order",
                "is `display_rating`, which needs a `fixed_range`",
            );
        }
        if let Some(Provisional {
            max_sigma: Some(max),
            ..
        }) = self.provisional
        {
            if !(max.is_finite() && max > 0.0) {
                return bad("provisional.max_sigma", "must be a finite number above 0");
            }
        }
        self.leagues.as_ref().map_or(Ok(()), Leagues::validate)
    }

    /// `μ − kσ` with this pool's `k`.
    #[must_use]
    pub fn conservative(&self, rating: Rating) -> f64 {
        rating.conservative(self.conservative_k)
    }

    /// Whether a player of `rounds` rounds rated `rating` is provisional.
    #[must_use]
    pub fn provisional(&self, rounds: u64, rating: Rating) -> bool {
        self.provisional.is_some_and(|p| p.holds(rounds, rating))
    }

    /// The leaderboard's order when a read names none.
    #[must_use]
    pub fn default_ranking(&self) -> Ranking {
        match self.default_order {
            DefaultOrder::Mu => Ranking::Mu,
            DefaultOrder::Conservative => Ranking::Conservative,
            DefaultOrder::DisplayRating => Ranking::DisplayRating,
            DefaultOrder::Auto if self.fixed_range.is_some() => Ranking::DisplayRating,
            DefaultOrder::Auto => Ranking::Conservative,
        }
    }

    /// The order a read asked for (`None`: the default one), or why this pool cannot give it.
    pub fn ranking(&self, asked: Option<Ranking>) -> Result<Ranking, &'static str> {
        let ranking = asked.unwrap_or_else(|| self.default_ranking());
        if ranking == Ranking::DisplayRating && self.fixed_range.is_none() {
            return Err(
                "is `display_rating`, but the pool shows no display rating (no `fixed_range`)",
            );
        }
        Ok(ranking)
    }

    /// Whether a read that asked `asked` (`None`: the default) lists established players
    /// only.
    #[must_use]
    pub fn established_only(&self, asked: Option<bool>) -> bool {
        asked.unwrap_or(!self.list_provisional)
    }

    /// Whether any player can be provisional (a rule of 0 rounds and no σ bound holds nobody).
    #[must_use]
    pub fn has_provisional(&self) -> bool {
        self.provisional
            .is_some_and(|p| p.min_rounds > 0 || p.max_sigma.is_some())
    }

    /// What these settings show for a player of `rounds` rounds rated `rating`, the
    /// fixed-range rating resolved as `range` (this pool's [`Display::resolve`]).
    #[must_use]
    pub fn show(&self, range: Option<Resolved>, rating: Rating, rounds: u64) -> Shown {
        Shown {
            conservative: self.conservative(rating),
            display_rating: range.map(|range| range.display(rating.mu)),
            provisional: self.provisional(rounds, rating),
        }
    }

    /// The fixed-range rating's center and scale for ratings spread as `spread`, between
    /// `extremes`; `None` with no fixed range, or with an automatic center and nobody rated.
    ///
    /// An automatic scale is the article's, half the standard deviation of μ, unless that would
    /// put the highest or the lowest rated player more than [`EDGE_SCALES`] scales from the
    /// center: then the distance to the further of them over [`EDGE_SCALES`]. On a skewed pool
    /// (many short careers below, a few long ones above) the article's scale put the best
    /// players 4 or more widths above the mean, where the Fermi function is flat: formula1's
    /// top ten showed 2995–2999.7 of 3000. Within [`EDGE_SCALES`] scales its slope is at least
    /// 18% of its slope at the center, so two rated players' display ratings differ by at
    /// least [`MIN_RESOLUTION`] of what a straight line from the lowest to the highest μ onto
    /// `0..max` would give them.
    #[must_use]
    pub fn resolve(&self, spread: &Spread, extremes: Option<Extremes>) -> Option<Resolved> {
        let range = self.fixed_range?;
        let center = match range.center {
            Anchor::Value(center) => center,
            Anchor::Auto => spread.mean()?,
        };
        let scale = match range.scale {
            Anchor::Value(scale) => scale,
            Anchor::Auto => {
                let article = 0.5 * spread.width().unwrap_or(0.0);
                let reach = extremes.map_or(0.0, |e| (e.top - center).max(center - e.bottom));
                article.max(reach / EDGE_SCALES)
            }
        };
        Some(Resolved {
            max: range.max,
            center,
            scale,
        })
    }
}

/// How far from the center, in scales, an automatic scale lets the highest and the lowest rated
/// player sit ([`Display::resolve`]): the Fermi function's slope there, `s(3)(1 − s(3))`, is
/// 0.045, against 0.25 at the center.
pub const EDGE_SCALES: f64 = 3.0;

/// The least share of a straight line's resolution an automatic scale keeps between any two
/// rated players ([`Display::resolve`]): the article's scale is at most a quarter of the range
/// of μ (a standard deviation is at most half the range), an edge-bound one a third of it, and
/// the slope within [`EDGE_SCALES`] at least 0.0452 of `max` per scale: `3 · 0.0452 ≥ 0.135`.
pub const MIN_RESOLUTION: f64 = 0.135;

/// The μ of the highest and of the lowest rated player.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Extremes {
    /// The highest μ.
    pub top: f64,
    /// The lowest μ.
    pub bottom: f64,
}

/// A fixed-range rating with its center and scale settled.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Resolved {
    /// The top of the range.
    pub max: f64,
    /// The rating shown as `max / 2`.
    pub center: f64,
    /// The Fermi function's temperature; 0 when derived from ratings that are all equal.
    pub scale: f64,
}

impl Resolved {
    /// `max / (1 + exp(−(μ − center) / scale))`. At scale 0 (every rated player at one μ) it is
    /// the function's limit: `max / 2` at the center, 0 below it, `max` above.
    #[must_use]
    pub fn display(&self, mu: f64) -> f64 {
        let x = mu - self.center;
        if self.scale > 0.0 {
            self.max / (1.0 + (-x / self.scale).exp())
        } else if x > 0.0 {
            self.max
        } else if x < 0.0 {
            0.0
        } else {
            0.5 * self.max
        }
    }
}

/// Steps of the fixed-point μ summed by [`Spread`]: 2⁻¹⁶ rating points.
const STEPS_PER_POINT: f64 = 65_536.0;

/// The count, sum and sum of squares of the rated players' μ, each μ rounded to 2⁻¹⁶, in
/// integers: adding and removing players is exact, so the sums depend only on who is rated at
/// what, never on the order of the updates (a reloaded pool shows the same figures to the last
/// bit). Integer overflow wraps, which keeps the sums exact modulo 2¹²⁸: exact outright while
/// the true sums fit, which holds for up to 10⁷ players with |μ| ≤ 10⁹.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Spread {
    count: i128,
    sum: i128,
    squares: i128,
}

impl Spread {
    fn steps(mu: f64) -> i128 {
        // `as` saturates: a μ beyond ±2⁴⁷ points would make the sums meaningless, not panic.
        i128::from((mu * STEPS_PER_POINT).round() as i64)
    }

    /// Counts a player rated `mu`.
    pub fn add(&mut self, mu: f64) {
        let q = Self::steps(mu);
        self.count = self.count.wrapping_add(1);
        self.sum = self.sum.wrapping_add(q);
        self.squares = self.squares.wrapping_add(q.wrapping_mul(q));
    }

    /// Stops counting a player rated `mu`.
    pub fn remove(&mut self, mu: f64) {
        let q = Self::steps(mu);
        self.count = self.count.wrapping_sub(1);
        self.sum = self.sum.wrapping_sub(q);
        self.squares = self.squares.wrapping_sub(q.wrapping_mul(q));
    }

    /// The mean μ; `None` with nobody counted.
    #[must_use]
    pub fn mean(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum as f64 / self.count as f64 / STEPS_PER_POINT)
    }

    /// The population standard deviation of μ (the article's "width"); `None` with nobody
    /// counted. `n Σq² − (Σq)²` is computed exactly while it fits 128 bits (`n · max|μ|` up
    /// to about 2·10¹⁴ points), so the only rounding is the last division; beyond, from the
    /// sums in floating point.
    #[must_use]
    pub fn width(&self) -> Option<f64> {
        if self.count <= 0 {
            return None;
        }
        let n = self.count as f64;
        let exact = self
            .count
            .checked_mul(self.squares)
            .zip(self.sum.checked_mul(self.sum))
            .and_then(|(a, b)| a.checked_sub(b));
        let variance_steps = match exact {
            Some(numerator) => numerator.max(0) as f64 / (n * n),
            None => {
                let mean = self.sum as f64 / n;
                (self.squares as f64 / n - mean * mean).max(0.0)
            }
        };
        Some(variance_steps.sqrt() / STEPS_PER_POINT)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn rating(mu: f64, sigma: f64) -> Rating {
        Rating {
            mu,
            sigma: Some(sigma),
        }
    }

    #[test]
    fn the_articles_example_maps_one_width_either_side_of_the_mean_to_1192_and_8808() {
        // "average PQ is 1500 points, and you have a width of about 500 points": four players
        // at 1000, 1000, 2000 and 2000 have mean 1500 and standard deviation 500.
        let mut spread = Spread::default();
        for mu in [1000.0, 1000.0, 2000.0, 2000.0] {
            spread.add(mu);
        }
        let display = Display {
            fixed_range: Some(FixedRange {
                max: DEFAULT_MAX,
                center: Anchor::Auto,
                scale: Anchor::Auto,
            }),
            ..Display::default()
        };
        let extremes = Some(Extremes {
            top: 2000.0,
            bottom: 1000.0,
        });
        let resolved = display
            .resolve(&spread, extremes)
            .expect("players are rated");
        assert_eq!((resolved.center, resolved.scale), (1500.0, 250.0));
        assert_eq!(resolved.display(1500.0), 5000.0);
        assert_eq!(resolved.display(2000.0).round(), 8808.0);
        assert_eq!(resolved.display(1000.0).round(), 1192.0);
        // Two widths out: the article's "between 250 and 9,750" (Fermi(±2 width) ≈ 0.025).
        assert_eq!(resolved.display(2500.0).round(), 9820.0);
    }

    #[test]
    fn a_zero_scale_is_the_fermi_functions_limit() {
        let resolved = Resolved {
            max: 100.0,
            center: 10.0,
            scale: 0.0,
        };
        assert_eq!(
            [9.0, 10.0, 11.0].map(|mu| resolved.display(mu)),
            [0.0, 50.0, 100.0]
        );
        let nobody = Display {
            fixed_range: Some(FixedRange {
                max: 100.0,
                center: Anchor::Auto,
                scale: Anchor::Value(5.0),
            }),
            ..Display::default()
        };
        assert_eq!(nobody.resolve(&Spread::default(), None), None);
    }

    #[test]
    fn provisional_needs_both_rounds_and_a_small_enough_sigma() {
        let rule = Provisional {
            min_rounds: 3,
            max_sigma: Some(100.0),
        };
        assert!(rule.holds(2, rating(1500.0, 50.0)));
        assert!(rule.holds(3, rating(1500.0, 100.5)));
        assert!(!rule.holds(3, rating(1500.0, 100.0)));
        let elo = Rating {
            mu: 1500.0,
            sigma: None,
        };
        assert!(!rule.holds(3, elo), "no σ: rounds alone decide");
        let default = Display::default();
        assert!(default.provisional(2, rating(0.0, 1.0)));
        assert!(!default.provisional(3, rating(0.0, 1e9)));
        let nobody = Display {
            provisional: None,
            ..Display::default()
        };
        assert!(!nobody.provisional(0, rating(0.0, 1e9)));
    }

    #[test]
    fn settings_left_out_take_a_new_pools_defaults_and_null_turns_provisional_off() {
        let default: Display = serde_json::from_str("{}").expect("valid");
        assert_eq!(default, Display::default());
        assert_eq!(default.default_ranking(), Ranking::Conservative);
        assert!(!default.list_provisional);
        let ranged: Display = serde_json::from_str(r#"{"fixed_range": {}}"#).expect("valid");
        assert_eq!(ranged.default_ranking(), Ranking::DisplayRating);
        let off: Display = serde_json::from_str(
            r#"{"provisional": null, "default_order": "mu", "list_provisional": true}"#,
        )
        .expect("valid");
        assert_eq!(
            (off.provisional, off.default_ranking(), off.list_provisional),
            (None, Ranking::Mu, true)
        );
        let back: Display =
            serde_json::from_str(&serde_json::to_string(&off).expect("encodes")).expect("decodes");
        assert_eq!(back, off, "a stored `null` stays off");
    }

    #[test]
    fn settings_read_from_json_with_defaults_and_auto() {
        let display: Display = serde_json::from_str(
            r#"{"fixed_range": {"scale": 120, "center": "auto"}, "provisional": {"min_rounds": 5}}"#,
        )
        .expect("valid");
        assert_eq!(display.conservative_k, 3.0);
        let range = display.fixed_range.expect("given");
        assert_eq!(
            (range.max, range.center, range.scale),
            (DEFAULT_MAX, Anchor::Auto, Anchor::Value(120.0))
        );
        assert_eq!(display.provisional.expect("given").max_sigma, None);
        let back: Display =
            serde_json::from_str(&serde_json::to_string(&display).expect("encodes"))
                .expect("decodes");
        assert_eq!(back, display);
        assert!(serde_json::from_str::<Display>(r#"{"fixed_range": {"scale": "wide"}}"#).is_err());
        assert!(serde_json::from_str::<Display>(r#"{"conservative": 2}"#).is_err());
    }

    #[test]
    fn out_of_range_settings_name_their_field() {
        let field = |json: &str| {
            serde_json::from_str::<Display>(json)
                .expect("well-formed")
                .validate()
                .err()
                .map(|e| e.field)
                .unwrap_or_default()
        };
        assert_eq!(field(r#"{"conservative_k": -1}"#), "conservative_k");
        assert_eq!(field(r#"{"fixed_range": {"max": 0}}"#), "fixed_range.max");
        assert_eq!(
            field(r#"{"fixed_range": {"scale": 0}}"#),
            "fixed_range.scale"
        );
        assert_eq!(
            field(r#"{"provisional": {"max_sigma": -3}}"#),
            "provisional.max_sigma"
        );
        assert_eq!(
            field(r#"{"default_order": "display_rating"}"#),
            "default_order"
        );
        assert_eq!(field(r#"{"conservative_k": 0, "fixed_range": {}}"#), "");
    }

    proptest! {
        #[test]
        fn an_automatic_scale_keeps_any_two_players_apart_on_any_pool(
            // Skewed pools: many short careers near the bottom, a long tail above.
            ratings in prop::collection::vec((0.0f64..1.0, 0.0f64..1.0), 2..300),
            skew in 0.5f64..6.0,
            spread_out in 1.0f64..3000.0,
        ) {
            let mus: Vec<f64> = ratings
                .iter()
                .map(|(u, v)| 1000.0 + spread_out * u.powf(skew) + v)
                .collect();
            let mut spread = Spread::default();
            for mu in &mus {
                spread.add(*mu);
            }
            let (top, bottom) = mus.iter().fold((f64::MIN, f64::MAX), |(t, b), mu| (t.max(*mu), b.min(*mu)));
            let display = Display {
                fixed_range: Some(FixedRange { max: 3000.0, center: Anchor::Auto, scale: Anchor::Auto }),
                ..Display::default()
            };
            let range = display.resolve(&spread, Some(Extremes { top, bottom })).expect("rated");
            let mut sorted = mus.clone();
            sorted.sort_by(f64::total_cmp);
            for pair in sorted.windows(2) {
                let (low, high) = (pair[0], pair[1]);
                let apart = range.display(high) - range.display(low);
                let straight = 3000.0 * (high - low) / (top - bottom);
                prop_assert!(
                    apart >= MIN_RESOLUTION * straight - 1e-9,
                    "{} and {}: {} apart, a straight line gives {}", low, high, apart, straight
                );
            }
        }

        #[test]
        fn the_sums_of_any_add_and_remove_sequence_equal_those_of_the_survivors(
            ratings in prop::collection::vec((-5e6f64..5e6, any::<bool>()), 1..200)
        ) {
            let mut running = Spread::default();
            let mut kept = Vec::new();
            for (mu, stays) in &ratings {
                running.add(*mu);
                if *stays {
                    kept.push(*mu);
                }
            }
            for (mu, stays) in ratings.iter().rev() {
                if !stays {
                    running.remove(*mu);
                }
            }
            let mut fresh = Spread::default();
            for mu in kept.iter().rev() {
                fresh.add(*mu);
            }
            prop_assert_eq!(running, fresh);
            if let (Some(mean), Some(width)) = (fresh.mean(), fresh.width()) {
                let n = kept.len() as f64;
                let m = kept.iter().sum::<f64>() / n;
                let sd = (kept.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / n).sqrt();
                prop_assert!((mean - m).abs() <= 1e-4, "{} vs {}", mean, m);
                prop_assert!((width - sd).abs() <= 1e-4 + 1e-9 * sd, "{} vs {}", width, sd);
            }
        }
    }
}
