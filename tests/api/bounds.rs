//! Memory stays bounded under a long stream: however many rounds a player plays, their belief
//! keeps at most the pool's `history_limit` logistic factors, in memory and as stored (older
//! ones fold into the Gaussian term, and stay only as part of their history rows), while their
//! round count and history keep growing. The
//! queue's bound (503 `queue_full`) is in `rounds`; a slow client is in `tests/e2e`.

use axum::http::StatusCode;
use mmr_service::engine::{Beliefs, SystemState};
use serde_json::json;

use crate::storage_ext::StorageExt;
use crate::support::{round, TestApp, POOL};

backend_tests!(a_long_stream_keeps_every_belief_within_history_limit_in_memory_and_in_storage);

/// The pool's `history_limit`, far below the rounds each player plays.
const HISTORY_LIMIT: usize = 6;

/// Players in the pool, and how many of them play each round.
const PLAYERS: usize = 12;
const PER_ROUND: usize = 6;

/// Rounds streamed: each player plays about `ROUNDS · PER_ROUND / PLAYERS` of them.
const ROUNDS: usize = 240;

/// Rounds posted between two applications of the queue and two checks of memory.
const BATCH: usize = 40;

/// The players of round `i`: `PER_ROUND` distinct ones (7 is prime to 12), in an order that
/// turns from round to round.
fn players_of(i: usize) -> Vec<String> {
    (0..PER_ROUND)
        .map(|k| format!("p{}", (i * 5 + k * 7) % PLAYERS))
        .collect()
}

/// How many factors a state holds (only Elo-MMR keeps any).
fn factors(state: &SystemState) -> usize {
    match state {
        SystemState::EloMmr(belief) => belief.factors.len(),
        _ => 0,
    }
}

/// The most factors any player of `POOL` holds in memory.
fn most_factors_in_memory(app: &TestApp) -> usize {
    let pool = app.state.pools.get(POOL).expect("the pool");
    let state = pool.read();
    state
        .beliefs()
        .map(|(_, player)| factors(player))
        .max()
        .unwrap_or(0)
}

async fn a_long_stream_keeps_every_belief_within_history_limit_in_memory_and_in_storage(
    app: TestApp,
) {
    app.put_pool(POOL, json!({"history_limit": HISTORY_LIMIT}))
        .await
        .assert_status(StatusCode::CREATED, "create the pool");
    for batch in 0..ROUNDS / BATCH {
        for i in batch * BATCH..(batch + 1) * BATCH {
            let players = players_of(i);
            let players: Vec<&str> = players.iter().map(String::as_str).collect();
            app.queue_round(round(&format!("r{i}"), &players)).await;
        }
        app.apply_queued(POOL).await;
        assert_eq!(
            most_factors_in_memory(&app),
            HISTORY_LIMIT,
            "after {} rounds, every belief is full and none is over the limit",
            (batch + 1) * BATCH
        );
    }

    let stored = app
        .state
        .storage
        .load_players(POOL)
        .await
        .expect("load the players");
    assert_eq!(stored.len(), PLAYERS, "one stored belief per player");
    let pool = app.state.pools.get(POOL).expect("the pool");
    for player in &stored {
        assert!(
            factors(&player.state) <= HISTORY_LIMIT,
            "{}: {} factors stored",
            player.player,
            factors(&player.state)
        );
        assert_eq!(
            Some(&player.state),
            pool.read().belief(&player.player),
            "{}: storage holds what memory holds",
            player.player
        );
    }

    let played = app.get(&format!("/v1/pools/{POOL}/players/p0")).await;
    let rounds = played.assert_status(StatusCode::OK, "a player")["rounds"]
        .as_u64()
        .expect("a round count");
    assert!(
        rounds > 10 * HISTORY_LIMIT as u64,
        "p0 played {rounds} rounds, far more than the factors kept"
    );
    let history = app
        .get(&format!("/v1/pools/{POOL}/players/p0/history?limit=1000"))
        .await;
    assert_eq!(
        history.assert_status(StatusCode::OK, "a history")["entries"]
            .as_array()
            .map(Vec::len),
        Some(rounds as usize),
        "the history keeps every round: only the belief is bounded"
    );
}
