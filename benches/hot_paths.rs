//! Criterion benchmarks of what reads cost: predictions for the largest request the API
//! accepts (1,000 entrants or sides, ratings spread as in a real pool), and publishing a
//! round's ratings into a pool of 1,000,000 players (the next snapshot shares all but the
//! changed paths with the current one, so its cost grows with the round, not the pool), and
//! matchmaking the largest waiting list the API accepts, one against one and five against five,
//! the board of a season still open, rebuilt after each round while someone reads it, and a
//! leaderboard page with and without the activity filter.

use std::hint::black_box;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use mmr_service::compute::MAX_ENTRANTS;
use mmr_service::display::{Display, Placement};
use mmr_service::engine::matchmaking::{matchmake, Waiting};
use mmr_service::engine::predict::{
    expected_ranks, first_place_probabilities, match_quality, pairwise_matrix,
};
use mmr_service::engine::{
    EloMmr, EloMmrParams, EloMmrState, Performance, Rating, RatingSystem, SystemParams, SystemState,
};
use mmr_service::pools::leaderboard::{Filter, Order};
use mmr_service::pools::{LastRound, Played, PoolState};
use mmr_service::storage::{RatedAsOf, StoredPlayer};

/// Players in the pool that rounds are published into.
const POOL_PLAYERS: usize = 1_000_000;

/// A deterministic generator, so every run measures the same inputs.
struct Lcg(u64);

impl Lcg {
    fn unit(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// A player rated somewhere in 800..3600 with σ from 60 to 350.
fn spread_player(params: &EloMmrParams, rng: &mut Lcg) -> SystemState {
    let mut state = EloMmrState::new(params);
    state.mu = 800.0 + 2800.0 * rng.unit();
    state.p0 = state.mu;
    state.sigma = 60.0 + 290.0 * rng.unit();
    state.rounds = 1;
    SystemState::EloMmr(state)
}

/// Every bench player's rating before their one round: a newcomer's.
const NEWCOMER: Rating = Rating {
    mu: 1500.0,
    sigma: Some(350.0),
};

/// A stored player of [`spread_player`]'s, whose one round, at `last_seq`, was `last_round_id`
/// played at `last_round_time`.
fn stored_player(
    player: String,
    state: SystemState,
    last_round_id: String,
    last_round_time: Option<i64>,
    last_seq: i64,
) -> StoredPlayer {
    StoredPlayer {
        player,
        state,
        last_round_id,
        last_round_time,
        last_seq,
        league: None,
        bonus_spent: 0.0,
        season_base: 0,
        before: Some(NEWCOMER),
    }
}

fn predictions(c: &mut Criterion) {
    let params = EloMmrParams::default();
    let mut rng = Lcg(0x5eed);
    let system = SystemParams::EloMmr(params);
    let sides: Vec<Performance> = (0..MAX_ENTRANTS)
        .map(|_| {
            let player = spread_player(&params, &mut rng);
            system.performance(&[&player]).expect("Elo-MMR states")
        })
        .collect();
    let entrants: Vec<(f64, f64)> = sides.iter().map(|p| (p.mean, p.variance)).collect();
    let model = EloMmr::model(&params);
    let go = AtomicBool::new(false);
    let mut group = c.benchmark_group("predictions, 1000 entrants");
    group.sample_size(20);
    group.bench_function("P(first) and expected ranks", |b| {
        b.iter(|| {
            let p = first_place_probabilities(model, black_box(&entrants), &go);
            let ranks = expected_ranks(model, black_box(&entrants), &go);
            (p, ranks)
        });
    });
    group.bench_function("pairwise matrix", |b| {
        b.iter(|| pairwise_matrix(model, black_box(&entrants), &go));
    });
    group.bench_function("match quality of 1000 sides", |b| {
        b.iter(|| match_quality(black_box(&sides)));
    });
    group.finish();
}

fn publishing(c: &mut Criterion) {
    let params = EloMmrParams::default();
    let mut rng = Lcg(0xb16);
    let stored: Vec<StoredPlayer> = (0..POOL_PLAYERS)
        .map(|i| {
            let state = spread_player(&params, &mut rng);
            stored_player(format!("player-{i:07}"), state, "r1".to_owned(), None, 1)
        })
        .collect();
    // Five leagues of divisions of 100, every player placed as placement would place them.
    let leagues: Display = serde_json::from_value(serde_json::json!({"leagues": {
        "tiers": [{"name": "bronze"}, {"name": "silver", "threshold": 1200},
            {"name": "gold", "threshold": 1700}, {"name": "platinum", "threshold": 2200},
            {"name": "master", "threshold": 2700}]}}))
    .expect("valid settings");
    let settings = leagues.leagues.as_ref().expect("leagues");
    let mut seated = vec![0u32; settings.tiers.len()];
    let placed = stored
        .iter()
        .map(|p| {
            let league = settings
                .next_league(None, p.state.rating(), 1)
                .expect("placed");
            seated[league] += 1;
            let placement = Placement {
                league: Arc::from(settings.tiers[league].name.as_str()),
                division: seated[league].div_ceil(settings.division_size),
                points: None,
            };
            StoredPlayer {
                league: Some(placement),
                ..p.clone()
            }
        })
        .collect();
    // The default settings keep the established players in lists of their own (provisional:
    // fewer than 3 rounds); without a provisional rule there are none to keep.
    let nobody_provisional = Display {
        provisional: None,
        ..Display::default()
    };
    let pools = [
        ("", Display::default(), stored.clone()),
        (" and nobody provisional", nobody_provisional, stored),
        (" with leagues", leagues, placed),
    ];
    let mut group = c.benchmark_group("publish a round into a pool of 1,000,000 players");
    for (label, display, stored) in pools {
        let pool = Arc::new(
            PoolState::load(params.into(), display, stored, 1, 1).expect("valid parameters"),
        );
        publish_rounds(&mut group, &pool, label, &params, &mut rng);
    }
    group.finish();
}

/// Benchmarks publishing rounds of 10 to 10,000 entrants into `pool`.
fn publish_rounds(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    pool: &Arc<PoolState>,
    label: &str,
    params: &EloMmrParams,
    rng: &mut Lcg,
) {
    for entrants in [10, 1_000, 10_000] {
        let last = LastRound::new(Arc::from("r2"), None, 2);
        let round: Vec<Played> = (0..entrants)
            .map(|i| Played {
                player: format!("player-{:07}", (i * 7919) % POOL_PLAYERS),
                rank: i as u64 + 1,
                before: NEWCOMER,
                state: spread_player(params, rng),
                last_round: last.clone(),
            })
            .collect();
        group.bench_function(format!("{entrants} entrants{label}"), |b| {
            b.iter_batched(
                || round.clone(),
                |round| {
                    // What the worker does: derive the next snapshot from the current one.
                    let mut next = PoolState::clone(pool);
                    next.apply(2, round);
                    next
                },
                BatchSize::LargeInput,
            );
        });
    }
}

fn matchmaking(c: &mut Criterion) {
    let params = EloMmrParams::default();
    let system = SystemParams::EloMmr(params);
    let mut rng = Lcg(0x3a7c);
    let waiting: Vec<Waiting> = (0..mmr_service::api::matchmaking::MAX_WAITING)
        .map(|_| {
            let player = spread_player(&params, &mut rng);
            Waiting {
                performance: system.performance(&[&player]).expect("Elo-MMR states"),
                waited: 120.0 * rng.unit(),
            }
        })
        .collect();
    let relaxation = mmr_service::api::matchmaking::DEFAULT_RELAXATION;
    let go = AtomicBool::new(false);
    let mut group = c.benchmark_group("matchmaking");
    group.sample_size(10);
    for (name, team_size, teams) in [("10k_1v1", 1, 2), ("10k_5v5", 5, 2)] {
        group.bench_function(name, |b| {
            b.iter(|| matchmake(black_box(&waiting), team_size, teams, &relaxation, &go))
        });
    }
    group.finish();
}

/// Players in the pool whose open season's board is built: ctftime's.
const SEASON_PLAYERS: usize = 138_260;

/// The board of a season still open over every player of a pool of ctftime's size, built and
/// dropped: from the snapshot, and (as it was built before) from rows copied out of it.
fn open_season(c: &mut Criterion) {
    let params = EloMmrParams::default();
    let mut rng = Lcg(0x5ea5);
    let stored: Vec<StoredPlayer> = (0..SEASON_PLAYERS)
        .map(|i| {
            let state = spread_player(&params, &mut rng);
            let round = i % 3_000;
            stored_player(
                format!("team {i} of the season"),
                state,
                format!("round {round}"),
                None,
                1 + round as i64,
            )
        })
        .collect();
    let pool = PoolState::load(params.into(), Display::default(), stored, 1, 3_000)
        .expect("valid parameters");
    let mut group =
        c.benchmark_group("the open season's board of 138,260 players, built and dropped");
    group.sample_size(10);
    group.bench_function("from rows copied out of the snapshot (before)", |b| {
        b.iter(|| {
            let rated = pool
                .rated()
                .map(|(player, state, last)| RatedAsOf {
                    player: player.to_owned(),
                    seq: last.seq,
                    rating: state.rating(),
                    before: state.rating(),
                    rounds: state.rounds(),
                    last_round_id: last.id.to_string(),
                    last_round_time: last.time,
                    league: None,
                })
                .collect();
            pool.as_of(rated, &[]).players()
        });
    });
    group.bench_function("from the snapshot", |b| {
        b.iter(|| pool.season_board(black_box(0)).players());
    });
    group.finish();
}

/// A leaderboard page of a pool of 1,000,000 players whose last rounds spread over three
/// years, from the top and from the middle, with and without the activity filter (one pass
/// over the board, O(n), where the others are O(log n)).
fn leaderboard_pages(c: &mut Criterion) {
    let params = EloMmrParams::default();
    let mut rng = Lcg(0x1ead);
    let stored: Vec<StoredPlayer> = (0..POOL_PLAYERS)
        .map(|i| {
            let state = spread_player(&params, &mut rng);
            let time = 1_700_000_000 - (i as i64 % 1_095) * 86_400;
            stored_player(
                format!("player-{i:07}"),
                state,
                "r1".to_owned(),
                Some(time),
                1,
            )
        })
        .collect();
    let pool = PoolState::load(params.into(), Display::default(), stored, 1, 1).expect("valid");
    let board = pool.leaderboard();
    // Every player: the bench's players have played too few rounds to be established.
    let (order, filter) = (Order::Conservative, Filter::All);
    let middle = board.count(filter) / 2;
    let mut group = c.benchmark_group("a page of 100 of the leaderboard of 1,000,000 players");
    group.sample_size(20);
    for (label, days) in [("", None), (", active_days=30", Some(30.0))] {
        for (at, start) in [("top", 0), ("middle", middle)] {
            group.bench_function(format!("{at}{label}"), |b| {
                b.iter(|| {
                    let listing = board.listing(order, filter, days);
                    let start = start.min(listing.len());
                    black_box((listing.page(start, 100), listing.len()))
                });
            });
        }
    }
    group.finish();
}

criterion_group!(
    benches,
    predictions,
    publishing,
    matchmaking,
    open_season,
    leaderboard_pages
);
criterion_main!(benches);
