//! Reads: player states bit for bit, round status and results, history pages, queue depth.

use mmr_service::display::{LeagueMove, Placement};
use mmr_service::engine::{EloMmrState, Factor, Rating, RatingChange, SystemState};
use mmr_service::storage::{AppliedEntrant, AppliedRound, ResultsPage, RoundOutcome, RoundStatus};

use crate::storage_ext::{tester, StorageExt};
use crate::support::{
    self, create_pool, enqueue, enqueue_and_apply, population, stored_round, Db, ALL, POOL,
};

backend_tests!(
    player_states_round_trip_bit_for_bit,
    a_queued_round_reads_as_queued_without_results,
    a_rounds_results_page_by_rank_then_player_and_name_who_played,
    history_is_newest_first_and_pages_with_the_before_cursor,
    history_chains_rounds_settled_together_and_reads_from_any_cursor,
    unknown_rounds_and_players_read_as_nothing,
    queue_depth_counts_queued_rounds_of_every_pool,
    a_reachable_database_answers_the_ping,
    applied_rounds_hold_what_fits_the_bound_and_tell_whether_more_follow,
);

/// A deterministic stream of arbitrary finite doubles (every exponent, subnormals included).
struct Doubles(u64);

impl Doubles {
    fn next(&mut self) -> f64 {
        loop {
            // xorshift64
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            let value = f64::from_bits(self.0);
            if value.is_finite() {
                return value;
            }
        }
    }
}

async fn player_states_round_trip_bit_for_bit(db: Db) {
    const PLAYERS: usize = 40;
    const ROUNDS: usize = 6;
    create_pool(&db).await;
    let mut doubles = Doubles(0x9e37_79b9_7f4a_7c15);
    let mut states: Vec<EloMmrState> = (0..PLAYERS)
        .map(|i| EloMmrState {
            rounds: 0,
            last_time: (i % 2 == 0).then_some(-(i as i64) * 1_000_003),
            ..EloMmrState::new(&Default::default())
        })
        .collect();
    let players: Vec<String> = (0..PLAYERS).map(|i| format!("p{i:02}")).collect();
    let names: Vec<&str> = players.iter().map(String::as_str).collect();
    for round in 1..=ROUNDS {
        // Each round adds one factor, as the logistic variant does; some players keep at most
        // two (a history limit), some drop every older factor (ρ = ∞), some keep none (the
        // Gaussian variant).
        for (i, state) in states.iter_mut().enumerate() {
            state.mu = doubles.next();
            state.sigma = doubles.next();
            state.p0 = doubles.next();
            state.w0 = doubles.next();
            state.log_decay = doubles.next();
            state.rounds += 1;
            if i % 4 != 3 {
                state.factors.push_back(Factor {
                    perf: doubles.next(),
                    weight: doubles.next(),
                    beta: doubles.next(),
                    log_decay: doubles.next(),
                });
            }
            let keep = [usize::MAX, 2, 1, 0][i % 4];
            while state.factors.len() > keep {
                state.factors.pop_front();
            }
        }
        let id = format!("r{round}");
        enqueue(&db, &id, &names).await;
        let entrants: Vec<AppliedEntrant> = states
            .iter()
            .zip(&players)
            .enumerate()
            .map(|(i, (state, player))| AppliedEntrant {
                player: player.clone(),
                rank: i as u64 + 1,
                change: RatingChange {
                    performance: doubles.next(),
                    before: Rating {
                        mu: doubles.next(),
                        sigma: Some(doubles.next()),
                    },
                    after: Rating {
                        mu: state.mu,
                        sigma: Some(state.sigma),
                    },
                },
                league: league_move(i, round),
                bonus_spent: bonus_spent(i, round),
                expected_rank: (i % 5 != 0).then(|| doubles.next()),
                state: SystemState::EloMmr(state.clone()),
                previous: (round > 1).then(|| round as i64 - 1),
            })
            .collect();
        let applied = AppliedRound {
            time: None,
            entrants,
        };
        db.storage
            .apply_round(POOL, &id, &applied)
            .await
            .expect("apply");
        assert_results_stored(&db, &id, &applied).await;
    }

    let stored = db.storage.load_players(POOL).await.expect("load");
    assert_eq!(stored.len(), PLAYERS);
    for ((stored, want), who) in stored.iter().zip(&states).zip(&players) {
        let SystemState::EloMmr(got) = &stored.state else {
            panic!("{who}: an Elo-MMR belief");
        };
        assert_eq!(stored.player, *who);
        assert_eq!(bits(got), bits(want), "{who}");
        assert_eq!(
            (got.last_time, got.rounds, got.factors.len()),
            (want.last_time, want.rounds, want.factors.len()),
            "{who}"
        );
        assert_eq!(stored.last_round_time, None, "{who}: the round had no time");
        let index = players.iter().position(|p| p == who).expect("a player");
        assert_eq!(stored.league, league_move(index, ROUNDS).after, "{who}");
        assert_eq!(stored.bonus_spent, bonus_spent(index, ROUNDS), "{who}");
    }
}

/// The ladder bonus player `i` has spent after round `round`.
fn bonus_spent(i: usize, round: usize) -> f64 {
    if i % 2 == 0 {
        (i * round) as f64 * 0.25
    } else {
        0.0
    }
}

/// Player `i`'s league before and after round `round` (from 1): some never placed, some
/// placed from round 3, some moving between divisions and leagues every round.
fn league_move(i: usize, round: usize) -> LeagueMove {
    let placement = |round: usize| {
        (i % 3 != 0 && (i % 3 == 1 || round >= 3)).then(|| Placement {
            league: ["bronze", "silver", "gold"][(i + round) % 3].into(),
            division: u32::try_from(round * 1000 + i).expect("small"),
            points: (i % 4 == 1).then(|| (round * i) as f64 / 7.0),
        })
    };
    LeagueMove {
        before: placement(round - 1),
        after: placement(round),
    }
}

/// Asserts that round `id`'s stored results are `applied`'s, bit for bit.
async fn assert_results_stored(db: &Db, id: &str, applied: &AppliedRound) {
    let results = db
        .storage
        .round(POOL, id, &ALL)
        .await
        .expect("read")
        .and_then(|r| r.results)
        .expect("results");
    for (result, entrant) in results.iter().zip(&applied.entrants) {
        let floats = |c: &RatingChange| {
            [
                c.performance,
                c.before.mu,
                c.before.sigma.unwrap_or(f64::NAN),
                c.after.mu,
                c.after.sigma.unwrap_or(f64::NAN),
            ]
        };
        assert_eq!(result.league, entrant.league, "{}", entrant.player);
        let (got, want) = (floats(&result.change), floats(&entrant.change));
        assert_eq!(
            got.map(f64::to_bits),
            want.map(f64::to_bits),
            "{}",
            entrant.player
        );
    }
}

/// Every float of a state, as bits.
fn bits(state: &EloMmrState) -> Vec<u64> {
    let mut all = vec![state.mu, state.sigma, state.p0, state.w0, state.log_decay];
    for factor in &state.factors {
        all.extend([factor.perf, factor.weight, factor.beta, factor.log_decay]);
    }
    all.into_iter().map(f64::to_bits).collect()
}

async fn a_queued_round_reads_as_queued_without_results(db: Db) {
    create_pool(&db).await;
    enqueue(&db, "r1", &["a", "b"]).await;
    let record = stored_round(&db, "r1").await;
    assert_eq!(record.id, "r1");
    assert_eq!(record.status, RoundStatus::Queued);
    assert_eq!((record.error, record.results), (None, None));
}

async fn a_rounds_results_page_by_rank_then_player_and_name_who_played(db: Db) {
    create_pool(&db).await;
    // Names whose orders differ by byte and by locale: whatever the database's collation,
    // the pages must walk the order its sort gives.
    let players = ["g", "F", "é", "d", "C", "b", "a"];
    enqueue(&db, "r1", &players).await;
    let mut applied = support::rate(&mut population(), &players, None);
    // Ties two by two: g and F share rank 1, and so on; a page orders them by player.
    for (i, entrant) in applied.entrants.iter_mut().enumerate() {
        entrant.rank = i as u64 / 2 + 1;
    }
    db.storage
        .apply_round(POOL, "r1", &applied)
        .await
        .expect("apply");

    let whole = stored_round(&db, "r1").await;
    let mut order: Vec<(u64, &str)> = whole
        .results
        .as_ref()
        .expect("results")
        .iter()
        .map(|r| (r.rank, r.player.as_str()))
        .collect();
    let ranks: Vec<u64> = order.iter().map(|(rank, _)| *rank).collect();
    assert_eq!(ranks, [1, 1, 2, 2, 3, 3, 4], "best rank first");
    order.sort_unstable();
    let mut expected: Vec<(u64, &str)> = applied
        .entrants
        .iter()
        .map(|e| (e.rank, e.player.as_str()))
        .collect();
    expected.sort_unstable();
    assert_eq!(order, expected, "every entrant once");
    assert!(!whole.more_results);

    let mut paged = Vec::new();
    let mut page = ResultsPage::first(3);
    loop {
        let record = db
            .storage
            .round(POOL, "r1", &page)
            .await
            .expect("read")
            .expect("stored");
        let results = record.results.expect("results");
        assert!(results.len() <= 3);
        let last = results.last().map(|r| (r.rank, r.player.clone()));
        paged.extend(results);
        if !record.more_results {
            break;
        }
        page.after = last;
    }
    assert_eq!(Some(paged), whole.results, "the pages make up the round");

    let past_the_end = ResultsPage {
        after: Some((4, "a".to_owned())),
        ..ResultsPage::first(3)
    };
    let record = db.storage.round(POOL, "r1", &past_the_end).await;
    let record = record.expect("read").expect("stored");
    assert_eq!(
        (record.results, record.more_results),
        (Some(Vec::new()), false)
    );
    let status_only = db.storage.round(POOL, "r1", &ResultsPage::NONE).await;
    let status_only = status_only.expect("read").expect("stored");
    assert_eq!(status_only.status, RoundStatus::Applied);
    assert_eq!(
        (status_only.results, status_only.more_results),
        (None, false)
    );

    let seq = whole.seq;
    let mut entrants = db.storage.round_entrants(POOL, seq).await.expect("read");
    entrants.sort_unstable();
    let mut expected: Vec<(u64, String)> = applied
        .entrants
        .iter()
        .map(|e| (e.rank, e.player.clone()))
        .collect();
    expected.sort_unstable();
    assert_eq!(entrants, expected, "every entrant's rank and id");
    let mut some = db
        .storage
        .results_of(POOL, seq, &["é", "a", "nobody"])
        .await
        .expect("read");
    some.sort_unstable_by(|a, b| a.player.cmp(&b.player));
    let mut expected: Vec<_> = whole.results.clone().expect("results");
    expected.retain(|r| r.player == "é" || r.player == "a");
    expected.sort_unstable_by(|a, b| a.player.cmp(&b.player));
    assert_eq!(
        some, expected,
        "the results of those who played, looked up by id"
    );
    assert!(db.storage.played(POOL, seq, "é").await.expect("read"));
    assert!(!db.storage.played(POOL, seq, "e").await.expect("read"));
    assert!(!db.storage.played(POOL, seq + 1, "é").await.expect("read"));
}

async fn history_is_newest_first_and_pages_with_the_before_cursor(db: Db) {
    create_pool(&db).await;
    let mut population = population();
    let rounds = [
        ("r1", vec!["a", "b"]),
        ("r2", vec!["b", "c", "a"]),
        ("r3", vec!["c", "d"]),
        ("r4", vec!["d", "a"]),
        ("r5", vec!["a", "b", "c", "d"]),
    ];
    let mut applied = Vec::new();
    for (i, (id, players)) in rounds.iter().enumerate() {
        let time = Some(1_700_000_000 + i as i64 * 86_400);
        applied.push(enqueue_and_apply(&db, &mut population, id, players, time).await);
    }

    let mut pages = Vec::new();
    let mut before = None;
    loop {
        let page = db
            .storage
            .player_history(POOL, "a", 2, before)
            .await
            .expect("history");
        pages.push(
            page.entries
                .iter()
                .map(|e| e.round_id.clone())
                .collect::<Vec<_>>(),
        );
        match page.next_before {
            Some(cursor) => before = Some(cursor),
            None => break,
        }
    }
    assert_eq!(pages, [vec!["r5", "r4"], vec!["r2", "r1"]]);

    let newest = db
        .storage
        .player_history(POOL, "a", 1, None)
        .await
        .expect("history");
    let entry = &newest.entries[0];
    let rated = &applied[4].entrants[0];
    assert_eq!(entry.round_id, "r5");
    assert_eq!(entry.time, Some(1_700_000_000 + 4 * 86_400));
    assert_eq!((entry.rank, entry.entrants), (1, 4));
    assert_eq!(entry.change, rated.change);
    assert_eq!(entry.change.after, rated.state.rating());
    assert!(newest.next_before.is_some());

    let everything = db
        .storage
        .player_history(POOL, "a", 100, None)
        .await
        .expect("history");
    assert_eq!(everything.entries.len(), 4);
    assert_eq!(everything.next_before, None, "no older page");
}

/// Round ids of player `player`'s history before seq `before`, in pages of `limit`.
async fn history_ids(db: &Db, player: &str, limit: u32, mut before: Option<i64>) -> Vec<String> {
    let mut ids = Vec::new();
    loop {
        let page = db
            .storage
            .player_history(POOL, player, limit, before)
            .await
            .expect("history");
        ids.extend(page.entries.into_iter().map(|e| e.round_id));
        match page.next_before {
            Some(cursor) => before = Some(cursor),
            None => return ids,
        }
    }
}

async fn history_chains_rounds_settled_together_and_reads_from_any_cursor(db: Db) {
    create_pool(&db).await;
    let mut population = population();
    enqueue_and_apply(&db, &mut population, "r1", &["a", "b"], None).await;
    // `a` plays all three rounds of one transaction: each row chains to the one before it,
    // the first to a row of an earlier transaction.
    let batch = [("r2", ["a", "c"]), ("r3", ["b", "a"]), ("r4", ["a", "d"])];
    let mut newest = std::collections::HashMap::from([("a", 1), ("b", 1)]);
    let mut rated = Vec::new();
    for (seq, (id, players)) in (2..).zip(&batch) {
        enqueue(&db, id, players).await;
        let mut round = support::rate(&mut population, players, None);
        for (entrant, player) in round.entrants.iter_mut().zip(players) {
            entrant.previous = newest.insert(player, seq);
        }
        rated.push(round);
    }
    let outcomes: Vec<(&str, RoundOutcome<'_>)> = batch
        .iter()
        .zip(&rated)
        .map(|((id, _), round)| (*id, RoundOutcome::Applied(round)))
        .collect();
    db.storage
        .settle_rounds(POOL, &outcomes, 1, None)
        .await
        .expect("settle");
    enqueue_and_apply(&db, &mut population, "r5", &["b", "c"], None).await;

    assert_eq!(
        history_ids(&db, "a", 100, None).await,
        ["r4", "r3", "r2", "r1"]
    );
    assert_eq!(
        history_ids(&db, "a", 1, None).await,
        ["r4", "r3", "r2", "r1"]
    );
    assert_eq!(history_ids(&db, "b", 1, None).await, ["r5", "r3", "r1"]);
    assert_eq!(history_ids(&db, "c", 3, None).await, ["r5", "r2"]);
    // Cursors that are none of the player's seqs: r5 (seq 5) is not `a`'s, r2 (2) not `b`'s,
    // and seq 99 is nobody's.
    assert_eq!(
        history_ids(&db, "a", 2, Some(5)).await,
        ["r4", "r3", "r2", "r1"]
    );
    assert_eq!(history_ids(&db, "b", 2, Some(2)).await, ["r1"]);
    assert_eq!(history_ids(&db, "d", 2, Some(99)).await, ["r4"]);
    assert!(history_ids(&db, "d", 2, Some(4)).await.is_empty());
}

async fn unknown_rounds_and_players_read_as_nothing(db: Db) {
    create_pool(&db).await;
    assert_eq!(
        db.storage.round(POOL, "nope", &ALL).await.expect("read"),
        None
    );
    assert_eq!(
        db.storage
            .round("nowhere", "nope", &ALL)
            .await
            .expect("read"),
        None
    );
    let history = db
        .storage
        .player_history(POOL, "nobody", 10, None)
        .await
        .expect("history");
    assert!(history.entries.is_empty());
    assert_eq!(history.next_before, None);
    assert!(db
        .storage
        .load_players("nowhere")
        .await
        .expect("load")
        .is_empty());
    assert_eq!(
        db.storage.oldest_queued("nowhere").await.expect("read"),
        None
    );
}

async fn queue_depth_counts_queued_rounds_of_every_pool(db: Db) {
    create_pool(&db).await;
    db.storage
        .put_pool("other", &crate::support::params(), &tester())
        .await
        .expect("put");
    assert_eq!(db.storage.queue_depth().await.expect("depth"), 0);
    enqueue(&db, "r1", &["a", "b"]).await;
    enqueue(&db, "r2", &["a", "b"]).await;
    db.storage
        .enqueue_round("other", "r1", &crate::support::body("r1", &["a", "b"]), 10)
        .await
        .expect("enqueue");
    assert_eq!(db.storage.queue_depth().await.expect("depth"), 3);
}

async fn a_reachable_database_answers_the_ping(db: Db) {
    db.storage.ping().await.expect("ping");
}

async fn applied_rounds_hold_what_fits_the_bound_and_tell_whether_more_follow(db: Db) {
    create_pool(&db).await;
    let mut population = population();
    let ids = ["r1", "r2", "r3", "r4"];
    // Names with a letter of two bytes: the bound counts bytes, as the bodies' lengths do.
    for id in ids {
        enqueue_and_apply(&db, &mut population, id, &["ánn", "bób"], None).await;
    }
    let page = db
        .storage
        .applied_rounds(POOL, 0, 10, u64::MAX)
        .await
        .expect("read");
    assert!(!page.more, "nothing past the last round");
    let all = page.rounds;
    let read: Vec<&str> = all.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(read, ids, "every round, in order");
    let each = all[0].body.len() as u64;
    assert!(all.iter().all(|r| r.body.len() as u64 == each));
    assert!(each > all[0].body.chars().count() as u64);
    for (bytes, expected) in [
        (0, 1),
        (each - 1, 1),
        (each, 1),
        (2 * each - 1, 1),
        (2 * each, 2),
        (3 * each, 3),
        (4 * each, 4),
    ] {
        let page = db
            .storage
            .applied_rounds(POOL, 0, 10, bytes)
            .await
            .expect("read");
        assert_eq!(
            (page.rounds.as_slice(), page.more),
            (&all[..expected], expected < all.len()),
            "bodies of {each} bytes read up to {bytes}: the first, then each that ends within it"
        );
    }
    for (limit, expected, more) in [(1, 1, true), (2, 2, false), (3, 2, false)] {
        let page = db
            .storage
            .applied_rounds(POOL, all[1].seq, limit, u64::MAX)
            .await
            .expect("read");
        assert_eq!(
            (page.rounds.as_slice(), page.more),
            (&all[2..2 + expected], more),
            "at most {limit} after the seq given"
        );
    }
    let listed = db.storage.applied_ids(POOL, all[0].seq, 2).await;
    let listed: Vec<(i64, String)> = listed
        .expect("read")
        .into_iter()
        .map(|line| (line.seq, line.id))
        .collect();
    let expected: Vec<(i64, String)> = all[1..3].iter().map(|r| (r.seq, r.id.clone())).collect();
    assert_eq!(listed, expected, "the same lines without their bodies");
}
