//! Applying a round: everything in one transaction, only the oldest queued round, only once.

use std::collections::HashSet;
use std::sync::Arc;

use mmr_service::engine::{Beliefs, EloMmrParams, Population, SystemParams, SystemState, Variant};
use mmr_service::storage::{Error, RoundOutcome, RoundStatus};

use crate::storage_ext::{tester, StorageExt};
use crate::support::{
    self, create_pool, enqueue, enqueue_and_apply, execute_raw, population, stored_round, Db, ALL,
    POOL,
};

backend_tests!(
    applying_the_oldest_round_stores_states_history_and_results,
    applying_a_round_that_is_not_the_oldest_is_refused_and_changes_nothing,
    applying_a_round_a_second_time_is_refused,
    a_round_whose_writes_fail_midway_leaves_nothing_behind,
    two_processes_applying_the_same_round_at_once_succeed_exactly_once,
    a_failed_round_keeps_its_error_and_leaves_the_queue,
    a_round_too_large_for_one_statement_is_stored_whole,
    beliefs_reload_exactly_when_factors_are_dropped,
    a_player_whose_history_does_not_hold_the_factors_they_keep_does_not_load,
    several_rounds_settle_in_one_transaction_in_order,
    settling_rounds_that_are_not_the_oldest_in_order_changes_nothing,
    rounds_rated_under_other_leagues_than_those_stored_are_refused,
    a_round_rated_before_another_process_applied_one_is_refused_and_no_update_is_lost,
);

async fn applying_the_oldest_round_stores_states_history_and_results(db: Db) {
    create_pool(&db).await;
    let mut population = population();
    let applied =
        enqueue_and_apply(&db, &mut population, "r1", &["b", "a", "c"], Some(1_000)).await;

    let record = stored_round(&db, "r1").await;
    assert_eq!(record.status, RoundStatus::Applied);
    assert_eq!(record.error, None);
    let results = record.results.expect("an applied round has results");
    let order: Vec<(&str, u64)> = results
        .iter()
        .map(|r| (r.player.as_str(), r.rank))
        .collect();
    assert_eq!(order, [("b", 1), ("a", 2), ("c", 3)], "best rank first");
    for (result, entrant) in results.iter().zip(&applied.entrants) {
        assert_eq!(result.change, entrant.change);
        assert_eq!(result.change.after, entrant.state.rating());
    }

    let players = db.storage.load_players(POOL).await.expect("load");
    let ids: Vec<&str> = players.iter().map(|p| p.player.as_str()).collect();
    assert_eq!(ids, ["a", "b", "c"]);
    for stored in &players {
        assert_eq!(Some(&stored.state), population.belief(&stored.player));
        assert_eq!(stored.last_round_id, "r1");
        assert_eq!(stored.last_round_time, Some(1_000));
    }
    let history = db
        .storage
        .player_history(POOL, "a", 10, None)
        .await
        .expect("history");
    assert_eq!(history.entries.len(), 1);
    assert_eq!(db.storage.oldest_queued(POOL).await.expect("read"), None);
}

async fn applying_a_round_that_is_not_the_oldest_is_refused_and_changes_nothing(db: Db) {
    create_pool(&db).await;
    enqueue(&db, "r1", &["a", "b"]).await;
    enqueue(&db, "r2", &["c", "d"]).await;
    let mut population = population();
    let second = support::rate(&mut population, &["c", "d"], None);
    match db.storage.apply_round(POOL, "r2", &second).await {
        Err(Error::NotNextRound { pool, round }) => assert_eq!((&*pool, &*round), (POOL, "r2")),
        other => panic!("expected NotNextRound, got {other:?}"),
    }
    let unknown = db.storage.apply_round(POOL, "r9", &second).await;
    assert!(
        matches!(unknown, Err(Error::NotNextRound { .. })),
        "{unknown:?}"
    );
    assert_nothing_applied(&db, &["r1", "r2"]).await;
}

async fn applying_a_round_a_second_time_is_refused(db: Db) {
    create_pool(&db).await;
    let mut population = population();
    let applied = enqueue_and_apply(&db, &mut population, "r1", &["a", "b"], None).await;
    let again = db.storage.apply_round(POOL, "r1", &applied).await;
    assert!(
        matches!(again, Err(Error::NotNextRound { .. })),
        "{again:?}"
    );
    let results = db
        .storage
        .round(POOL, "r1", &ALL)
        .await
        .expect("read")
        .and_then(|r| r.results)
        .expect("results");
    assert_eq!(results.len(), 2, "no duplicated results");
}

async fn a_round_whose_writes_fail_midway_leaves_nothing_behind(db: Db) {
    create_pool(&db).await;
    enqueue(&db, "r1", &["a", "b", "c"]).await;
    let mut population = population();
    let mut applied = support::rate(&mut population, &["a", "b", "c"], None);
    // The same player twice: the state upsert or the history insert fails after the round
    // was checked and other rows were written in the same transaction.
    let mut duplicate = applied.entrants[0].clone();
    duplicate.rank = 4;
    applied.entrants.push(duplicate);
    let outcome = db.storage.apply_round(POOL, "r1", &applied).await;
    assert!(matches!(outcome, Err(Error::Database(_))), "{outcome:?}");
    assert_nothing_applied(&db, &["r1"]).await;
}

async fn two_processes_applying_the_same_round_at_once_succeed_exactly_once(db: Db) {
    const PLAYERS: usize = 300;
    create_pool(&db).await;
    let names: Vec<String> = (0..PLAYERS).map(|i| format!("p{i:03}")).collect();
    let players: Vec<&str> = names.iter().map(String::as_str).collect();
    enqueue(&db, "r1", &players).await;
    let mut population = population();
    let applied = support::rate(&mut population, &players, None);
    let other_process = mmr_service::storage::connect(&db.url)
        .await
        .expect("second connection");

    let (first, second) = tokio::join!(
        db.storage.apply_round(POOL, "r1", &applied),
        other_process.apply_round(POOL, "r1", &applied),
    );
    let successes = [&first, &second].iter().filter(|o| o.is_ok()).count();
    assert_eq!(successes, 1, "{first:?} / {second:?}");
    for outcome in [first, second] {
        assert!(
            matches!(outcome, Ok(()) | Err(Error::NotNextRound { .. })),
            "{outcome:?}"
        );
    }
    let results = db
        .storage
        .round(POOL, "r1", &ALL)
        .await
        .expect("read")
        .and_then(|r| r.results)
        .expect("results");
    assert_eq!(results.len(), PLAYERS);
    let stored = db.storage.load_players(POOL).await.expect("load");
    assert!(stored.iter().all(|p| p.state.rounds() == 1));
    let progress = db.storage.pool_progress(POOL).await.expect("read");
    assert_eq!(progress.map(|p| p.applied), Some(1), "counted once");
    other_process.close().await;
}

async fn a_failed_round_keeps_its_error_and_leaves_the_queue(db: Db) {
    create_pool(&db).await;
    enqueue(&db, "r1", &["a", "b"]).await;
    enqueue(&db, "r2", &["a", "b"]).await;
    let wrong = db.storage.fail_round(POOL, "r2", "not its turn").await;
    assert!(
        matches!(wrong, Err(Error::NotNextRound { .. })),
        "{wrong:?}"
    );
    db.storage
        .fail_round(POOL, "r1", "engine refused: standings")
        .await
        .expect("fail");
    let record = stored_round(&db, "r1").await;
    assert_eq!(record.status, RoundStatus::Failed);
    assert_eq!(record.error.as_deref(), Some("engine refused: standings"));
    assert_eq!(record.results, None);
    let next = db.storage.oldest_queued(POOL).await.expect("read");
    assert_eq!(next.map(|r| r.id).as_deref(), Some("r2"));
}

async fn a_round_too_large_for_one_statement_is_stored_whole(db: Db) {
    // More rows than one SQLite statement can bind (32,766 parameters / 9 columns).
    const PLAYERS: usize = 5_000;
    create_pool(&db).await;
    let names: Vec<String> = (0..PLAYERS).map(|i| format!("p{i:05}")).collect();
    let players: Vec<&str> = names.iter().map(String::as_str).collect();
    let mut population = population();
    enqueue_and_apply(&db, &mut population, "big", &players, None).await;
    let stored = db.storage.load_players(POOL).await.expect("load");
    assert_eq!(stored.len(), PLAYERS);
    let distinct: HashSet<&str> = stored.iter().map(|p| p.player.as_str()).collect();
    assert_eq!(distinct.len(), PLAYERS);
    let results = db
        .storage
        .round(POOL, "big", &ALL)
        .await
        .expect("read")
        .and_then(|r| r.results)
        .expect("results");
    assert_eq!(results.len(), PLAYERS);
}

/// Asserts that `queued` are all still queued and that no state or history was written.
async fn assert_nothing_applied(db: &Db, queued: &[&str]) {
    for id in queued {
        let record = stored_round(db, id).await;
        assert_eq!(record.status, RoundStatus::Queued, "{id}");
    }
    let oldest = db.storage.oldest_queued(POOL).await.expect("read");
    assert_eq!(oldest.map(|r| r.id).as_deref(), queued.first().copied());
    assert!(db
        .storage
        .load_players(POOL)
        .await
        .expect("load")
        .is_empty());
    let pool = db.storage.pool(POOL).await.expect("read").expect("exists");
    assert_eq!(pool.applied, 0);
}

async fn beliefs_reload_exactly_when_factors_are_dropped(db: Db) {
    // Factors leave a belief through `history_limit`, through ρ = ∞ (every round) and never
    // exist in the Gaussian variant; each pool's reloaded beliefs must equal the engine's.
    let pools = [
        (
            "limit",
            EloMmrParams {
                history_limit: 3,
                ..EloMmrParams::default()
            },
        ),
        (
            "rho_inf",
            EloMmrParams {
                rho: f64::INFINITY,
                ..EloMmrParams::default()
            },
        ),
        (
            "gaussian",
            EloMmrParams {
                variant: Variant::Gaussian,
                ..EloMmrParams::default()
            },
        ),
    ];
    let players = ["a", "b", "c", "d", "e"];
    for (pool, params) in pools {
        let params = SystemParams::EloMmr(params);
        db.storage
            .put_pool(pool, &params, &tester())
            .await
            .expect("create");
        let mut population = Population::new(params).expect("valid");
        for round in 0..8_usize {
            // Rotating standings of four of the five players.
            let mut order: Vec<&str> = players
                .iter()
                .copied()
                .cycle()
                .skip(round)
                .take(4)
                .collect();
            order.rotate_left(round % 3);
            let id = format!("r{round}");
            let body = support::body(&id, &order);
            db.storage
                .enqueue_round(pool, &id, &body, support::ROOMY_QUEUE)
                .await
                .expect("enqueue");
            let applied = support::rate(&mut population, &order, Some(round as i64 * 86_400));
            db.storage
                .apply_round(pool, &id, &applied)
                .await
                .expect("apply");
        }
        let stored = db.storage.load_players(pool).await.expect("load");
        assert_eq!(stored.len(), players.len(), "{pool}");
        for player in &stored {
            let Some(want @ SystemState::EloMmr(belief)) = population.belief(&player.player) else {
                panic!("{pool}: {} was rated", player.player);
            };
            assert!(belief.factors.len() <= 3, "{pool}: {}", player.player);
            assert_eq!(&player.state, want, "{pool}: {}", player.player);
        }
    }
}

async fn a_player_whose_history_does_not_hold_the_factors_they_keep_does_not_load(db: Db) {
    create_pool(&db).await;
    let mut population = population();
    enqueue_and_apply(&db, &mut population, "r1", &["a", "b"], Some(10)).await;
    enqueue_and_apply(&db, &mut population, "r2", &["c", "a"], Some(20)).await;
    assert_eq!(db.storage.load_players(POOL).await.expect("load").len(), 3);
    let refused = |context: &'static str| {
        let storage = Arc::clone(&db.storage);
        async move {
            match storage.load_players(POOL).await {
                Err(Error::Corrupt(message)) => {
                    assert!(message.contains("`a`"), "{context}: {message}");
                }
                other => panic!("{context}: {other:?}"),
            }
        }
    };
    // `a` keeps the factors of both rounds: a third has no row.
    execute_raw(&db.url, "UPDATE players SET factors = 3 WHERE player = 'a'").await;
    refused("one factor more than rounds").await;
    execute_raw(&db.url, "UPDATE players SET factors = 2 WHERE player = 'a'").await;
    assert_eq!(db.storage.load_players(POOL).await.expect("load").len(), 3);
    execute_raw(
        &db.url,
        "UPDATE history SET factor_beta = NULL WHERE player = 'a' AND seq = 1",
    )
    .await;
    refused("a kept factor's row without it").await;
}

async fn several_rounds_settle_in_one_transaction_in_order(db: Db) {
    create_pool(&db).await;
    for (id, players) in [("r1", ["a", "b"]), ("r2", ["b", "c"]), ("r3", ["a", "c"])] {
        enqueue(&db, id, &players).await;
    }
    // Player `a` gains a factor in r1 and another in r3: both rows go in one transaction.
    let mut population = population();
    let first = support::rate(&mut population, &["a", "b"], Some(10));
    let mut third = support::rate(&mut population, &["a", "c"], Some(30));
    // `a`'s row of r3 chains to their row of r1 (seq 1), as the worker's memory would say.
    third.entrants[0].previous = Some(1);
    db.storage
        .settle_rounds(
            POOL,
            &[
                ("r1", RoundOutcome::Applied(&first)),
                ("r2", RoundOutcome::Failed("refused")),
                ("r3", RoundOutcome::Applied(&third)),
            ],
            0,
            None,
        )
        .await
        .expect("settle");

    let mut statuses = Vec::new();
    for id in ["r1", "r2", "r3"] {
        let record = stored_round(&db, id).await;
        statuses.push((record.status, record.error));
    }
    assert_eq!(
        statuses,
        [
            (RoundStatus::Applied, None),
            (RoundStatus::Failed, Some("refused".to_owned())),
            (RoundStatus::Applied, None),
        ]
    );
    let stored = db.storage.load_players(POOL).await.expect("load");
    assert_eq!(stored.len(), 3);
    for player in &stored {
        assert_eq!(
            Some(&player.state),
            population.belief(&player.player),
            "{}",
            player.player
        );
    }
    let last: Vec<(&str, &str)> = stored
        .iter()
        .map(|p| (p.player.as_str(), p.last_round_id.as_str()))
        .collect();
    assert_eq!(last, [("a", "r3"), ("b", "r1"), ("c", "r3")]);
    let history = db
        .storage
        .player_history(POOL, "a", 10, None)
        .await
        .expect("history");
    let rounds: Vec<&str> = history
        .entries
        .iter()
        .map(|e| e.round_id.as_str())
        .collect();
    assert_eq!(rounds, ["r3", "r1"], "newest first");
    let pool = db.storage.pool(POOL).await.expect("read").expect("exists");
    assert_eq!((pool.applied, pool.failed, pool.queued), (2, 1, 0));
}

async fn settling_rounds_that_are_not_the_oldest_in_order_changes_nothing(db: Db) {
    create_pool(&db).await;
    enqueue(&db, "r1", &["a", "b"]).await;
    enqueue(&db, "r2", &["c", "d"]).await;
    let mut population = population();
    let first = support::rate(&mut population, &["a", "b"], None);
    let second = support::rate(&mut population, &["c", "d"], None);
    for (rounds, refused) in [
        (vec![("r2", &second), ("r1", &first)], "r2"),
        (vec![("r1", &first), ("r1", &first)], "r1"),
        (vec![("r1", &first), ("r2", &second), ("r3", &second)], "r3"),
    ] {
        let rounds: Vec<(&str, RoundOutcome<'_>)> = rounds
            .into_iter()
            .map(|(id, round)| (id, RoundOutcome::Applied(round)))
            .collect();
        match db.storage.settle_rounds(POOL, &rounds, 0, None).await {
            Err(Error::NotNextRound { round, .. }) => assert_eq!(round, refused),
            other => panic!("expected NotNextRound for {refused}, got {other:?}"),
        }
        assert_nothing_applied(&db, &["r1", "r2"]).await;
    }
}

/// Another process changed the pool's leagues after this one rated a round: its placements
/// would name leagues the pool no longer has, so the round is refused (and rated again after a
/// reload).
async fn rounds_rated_under_other_leagues_than_those_stored_are_refused(db: Db) {
    create_pool(&db).await;
    enqueue(&db, "r1", &["a", "b"]).await;
    let round = support::rate(&mut population(), &["a", "b"], None);
    let display: mmr_service::display::Display = serde_json::from_value(serde_json::json!(
        {"leagues": {"tiers": [{"name": "bronze"}, {"name": "gold", "threshold": 1500}]}}
    ))
    .expect("valid settings");
    match db.storage.put_display(POOL, &display, &tester()).await {
        Err(Error::Stale { .. }) => {}
        other => panic!("leagues change only with their placements, got {other:?}"),
    }
    let nobody_placed = mmr_service::storage::Recomputed {
        applied: 0,
        rows: Vec::new(),
        players: Vec::new(),
    };
    db.storage
        .put_leagues(POOL, &display, &nobody_placed, &tester())
        .await
        .expect("store the leagues");
    let outcome = [("r1", RoundOutcome::Applied(&round))];
    match db.storage.settle_rounds(POOL, &outcome, 0, None).await {
        Err(Error::Stale { .. }) => {}
        other => panic!("expected Stale, got {other:?}"),
    }
    assert_eq!(stored_round(&db, "r1").await.status, RoundStatus::Queued);
    db.storage
        .settle_rounds(POOL, &outcome, 0, display.leagues.as_ref())
        .await
        .expect("rated under the stored leagues");
    assert_eq!(stored_round(&db, "r1").await.status, RoundStatus::Applied);
}

/// Process B rates r2 on the pool as it stood before r1; meanwhile process A applies r1. r2 is
/// now the oldest queued round, so only the applied count tells that B's priors for `a` miss
/// r1's update. Committing them would silently undo it (issue 14): nothing in the rows written
/// refuses them, only the applied count. B is refused, and after a reload rates r2 again.
async fn a_round_rated_before_another_process_applied_one_is_refused_and_no_update_is_lost(db: Db) {
    let gaussian = EloMmrParams {
        variant: Variant::Gaussian,
        ..EloMmrParams::default()
    };
    db.storage
        .put_pool(POOL, &SystemParams::EloMmr(gaussian), &tester())
        .await
        .expect("create a Gaussian pool");
    let population = || Population::new(gaussian).expect("valid parameters");
    enqueue(&db, "r1", &["a", "b"]).await;
    enqueue(&db, "r2", &["a", "c"]).await;
    let mut before_r1 = population();
    let stale = support::rate(&mut before_r1, &["a", "c"], None);
    let mut current = population();
    let first = support::rate(&mut current, &["a", "b"], None);
    let other_process = mmr_service::storage::connect(&db.url)
        .await
        .expect("second connection");
    other_process
        .settle_rounds(POOL, &[("r1", RoundOutcome::Applied(&first))], 0, None)
        .await
        .expect("process A applies r1");

    let late = [("r2", RoundOutcome::Applied(&stale))];
    match db.storage.settle_rounds(POOL, &late, 0, None).await {
        Err(Error::Stale { .. }) => {}
        other => panic!("rated before r1 was applied: expected Stale, got {other:?}"),
    }
    assert_eq!(stored_round(&db, "r2").await.status, RoundStatus::Queued);
    let players = db.storage.load_players(POOL).await.expect("load");
    let a = players.iter().find(|p| p.player == "a").expect("a");
    assert_eq!(
        Some(&a.state),
        current.belief("a"),
        "r1's update to `a` stands"
    );

    let second = support::rate(&mut current, &["a", "c"], None);
    db.storage
        .settle_rounds(POOL, &[("r2", RoundOutcome::Applied(&second))], 1, None)
        .await
        .expect("rated on r1's results");
    let players = db.storage.load_players(POOL).await.expect("load");
    let a = players.iter().find(|p| p.player == "a").expect("a");
    assert_eq!(Some(&a.state), current.belief("a"));
}
