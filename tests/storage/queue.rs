//! The round queue: durable acceptance, acceptance order, re-posts, conflicts and the bound.

use std::time::Duration;

use mmr_service::engine::{EloParams, SystemParams};
use mmr_service::storage::{
    Against, Change, EnqueueRequest, Enqueued, EnqueuedAll, EntryKind, Error, NewEntry, RoundStatus,
};

use crate::storage_ext::{tester, StorageExt};
use crate::support::{
    self, body, create_pool, enqueue, params, population, Db, ALL, POOL, ROOMY_QUEUE,
};

backend_tests!(
    enqueueing_into_an_unknown_pool_is_an_error,
    rounds_are_queued_in_acceptance_order,
    reposting_a_round_with_the_same_body_returns_its_stored_status,
    a_repost_is_recognized_by_its_key_or_by_the_body_of_a_line_stored_before_keys,
    reposting_a_round_id_with_a_different_body_is_a_conflict_and_changes_nothing,
    a_full_queue_refuses_new_rounds_but_still_recognizes_reposts,
    round_ids_are_scoped_to_their_pool,
    queued_rounds_survive_reopening_the_database,
    the_worker_takes_the_oldest_rounds_up_to_its_budget,
    a_queued_round_is_announced_only_while_another_replica_may_listen,
    lines_checked_against_what_the_pool_no_longer_is_are_not_queued,
    requests_stored_together_each_get_their_own_outcome,
);

async fn enqueueing_into_an_unknown_pool_is_an_error(db: Db) {
    let outcome = db
        .storage
        .enqueue_round("nowhere", "r1", &body("r1", &["a", "b"]), ROOMY_QUEUE)
        .await;
    assert!(
        matches!(&outcome, Err(Error::PoolNotFound(pool)) if pool == "nowhere"),
        "{outcome:?}"
    );
}

async fn rounds_are_queued_in_acceptance_order(db: Db) {
    create_pool(&db).await;
    for (i, id) in ["r-b", "r-a", "r-c"].into_iter().enumerate() {
        let outcome = db
            .storage
            .enqueue_round(POOL, id, &body(id, &["a", "b"]), ROOMY_QUEUE)
            .await
            .expect("enqueue");
        assert_eq!(
            outcome,
            Enqueued::Accepted {
                position: i as u64 + 1
            },
            "{id}"
        );
    }
    let oldest = db
        .storage
        .oldest_queued(POOL)
        .await
        .expect("read")
        .expect("a queued round");
    assert_eq!(oldest.id, "r-b", "acceptance order, not id order");
    assert_eq!(oldest.body, body("r-b", &["a", "b"]));

    let mut population = population();
    let applied = support::rate(&mut population, &["a", "b"], None);
    db.storage
        .apply_round(POOL, "r-b", &applied)
        .await
        .expect("apply");
    let next = db.storage.oldest_queued(POOL).await.expect("read");
    assert_eq!(next.map(|r| r.id).as_deref(), Some("r-a"));
    let first = db.storage.round(POOL, "r-b", &ALL).await.expect("read");
    let second = db.storage.round(POOL, "r-a", &ALL).await.expect("read");
    assert!(first.expect("stored").seq < second.expect("stored").seq);
    assert_eq!(
        db.storage
            .enqueue_round(POOL, "r-d", &body("r-d", &["a", "b"]), ROOMY_QUEUE)
            .await
            .expect("enqueue"),
        Enqueued::Accepted { position: 3 },
        "the applied round no longer counts"
    );
}

async fn reposting_a_round_with_the_same_body_returns_its_stored_status(db: Db) {
    create_pool(&db).await;
    enqueue(&db, "r1", &["a", "b"]).await;
    let original = body("r1", &["a", "b"]);
    let repost = || db.storage.enqueue_round(POOL, "r1", &original, ROOMY_QUEUE);
    assert_eq!(
        repost().await.expect("repost"),
        Enqueued::AlreadyStored {
            status: RoundStatus::Queued
        }
    );
    let mut population = population();
    let applied = support::rate(&mut population, &["a", "b"], None);
    db.storage
        .apply_round(POOL, "r1", &applied)
        .await
        .expect("apply");
    assert_eq!(
        repost().await.expect("repost"),
        Enqueued::AlreadyStored {
            status: RoundStatus::Applied
        }
    );
    assert_eq!(db.storage.queue_depth().await.expect("depth"), 0);
}

async fn a_repost_is_recognized_by_its_key_or_by_the_body_of_a_line_stored_before_keys(db: Db) {
    create_pool(&db).await;
    let line = |id: &'static str, body: &'static str, key: &'static str| NewEntry {
        id,
        kind: EntryKind::Round,
        body,
        key,
        audit: None,
    };
    let queued = Enqueued::AlreadyStored {
        status: RoundStatus::Queued,
    };
    let post = |entry| db.storage.enqueue_entry(POOL, entry, ROOMY_QUEUE, None);
    // Stored with a key: another body with the same key is the same line.
    assert_eq!(
        post(line("r1", "posted", "key-1")).await.expect("post"),
        Enqueued::Accepted { position: 1 }
    );
    assert_eq!(
        post(line("r1", "written otherwise", "key-1"))
            .await
            .expect("repost"),
        queued
    );
    assert_eq!(
        post(line("r1", "posted", "key-2")).await.expect("repost"),
        Enqueued::Conflict,
        "the key is what counts once it is stored"
    );
    // Stored as lines were before keys (the hash of the body): the same body is recognized
    // whatever its key now.
    assert_eq!(
        post(line("r2", "old", "old")).await.expect("post"),
        Enqueued::Accepted { position: 2 }
    );
    assert_eq!(
        post(line("r2", "old", "key-3")).await.expect("repost"),
        queued
    );
    assert_eq!(
        post(line("r2", "other", "key-3")).await.expect("repost"),
        Enqueued::Conflict
    );
    assert_eq!(db.storage.queue_depth().await.expect("depth"), 2);
}

async fn reposting_a_round_id_with_a_different_body_is_a_conflict_and_changes_nothing(db: Db) {
    create_pool(&db).await;
    enqueue(&db, "r1", &["a", "b"]).await;
    assert_eq!(
        db.storage
            .enqueue_round(POOL, "r1", &body("r1", &["b", "a"]), ROOMY_QUEUE)
            .await
            .expect("repost"),
        Enqueued::Conflict
    );
    let stored = db
        .storage
        .oldest_queued(POOL)
        .await
        .expect("read")
        .expect("queued");
    assert_eq!(stored.body, body("r1", &["a", "b"]), "the first body stays");
    assert_eq!(db.storage.queue_depth().await.expect("depth"), 1);
}

async fn a_full_queue_refuses_new_rounds_but_still_recognizes_reposts(db: Db) {
    const BOUND: u64 = 2;
    create_pool(&db).await;
    let post = |id: &'static str| {
        let storage = db.storage.clone();
        async move {
            storage
                .enqueue_round(POOL, id, &body(id, &["a", "b"]), BOUND)
                .await
                .expect("enqueue")
        }
    };
    assert_eq!(post("r1").await, Enqueued::Accepted { position: 1 });
    assert_eq!(post("r2").await, Enqueued::Accepted { position: 2 });
    assert_eq!(post("r3").await, Enqueued::QueueFull { queued: 2 });
    assert_eq!(
        post("r1").await,
        Enqueued::AlreadyStored {
            status: RoundStatus::Queued
        },
        "a re-post is answered even when the queue is full"
    );
    assert_eq!(
        db.storage.round(POOL, "r3", &ALL).await.expect("read"),
        None
    );

    let mut population = population();
    let applied = support::rate(&mut population, &["a", "b"], None);
    db.storage
        .apply_round(POOL, "r1", &applied)
        .await
        .expect("apply");
    assert_eq!(
        post("r3").await,
        Enqueued::Accepted { position: 2 },
        "applying a round makes room"
    );
}

async fn round_ids_are_scoped_to_their_pool(db: Db) {
    create_pool(&db).await;
    db.storage
        .put_pool("other", &support::params(), &tester())
        .await
        .expect("put");
    enqueue(&db, "r1", &["a", "b"]).await;
    assert_eq!(
        db.storage
            .enqueue_round("other", "r1", &body("r1", &["b", "a"]), ROOMY_QUEUE)
            .await
            .expect("enqueue"),
        Enqueued::Accepted { position: 1 }
    );
    let other = db.storage.oldest_queued("other").await.expect("read");
    assert_eq!(other.map(|r| r.body), Some(body("r1", &["b", "a"])));
    let main = db.storage.oldest_queued(POOL).await.expect("read");
    assert_eq!(main.map(|r| r.body), Some(body("r1", &["a", "b"])));
}

async fn queued_rounds_survive_reopening_the_database(db: Db) {
    create_pool(&db).await;
    enqueue(&db, "r1", &["a", "b"]).await;
    db.storage.close().await;
    let reopened = mmr_service::storage::connect(&db.url)
        .await
        .expect("reopen");
    let oldest = reopened
        .oldest_queued(POOL)
        .await
        .expect("read")
        .expect("still queued");
    assert_eq!(oldest.id, "r1");
    reopened.close().await;
}

async fn the_worker_takes_the_oldest_rounds_up_to_its_budget(db: Db) {
    create_pool(&db).await;
    let ids = ["r1", "r2", "r3", "r4"];
    for id in ids {
        enqueue(&db, id, &["a", "b"]).await;
    }
    let length = body("r1", &["a", "b"]).len();
    let taken = |max_rounds: usize, max_bytes: usize| {
        let storage = &db.storage;
        async move {
            let rounds = storage
                .queued_rounds(POOL, 0, max_rounds, max_bytes)
                .await
                .expect("read the queue");
            rounds.into_iter().map(|r| r.id).collect::<Vec<_>>()
        }
    };
    assert_eq!(taken(10, 0).await, ["r1"], "the oldest round always");
    assert_eq!(taken(10, length).await, ["r1"]);
    assert_eq!(taken(10, length + 1).await, ["r1", "r2"]);
    assert_eq!(taken(10, 2 * length + 1).await, ["r1", "r2", "r3"]);
    assert_eq!(taken(2, usize::MAX >> 1).await, ["r1", "r2"]);
    assert_eq!(taken(10, usize::MAX >> 1).await, ids);
    let second = db
        .storage
        .queued_rounds(POOL, 0, 2, usize::MAX >> 1)
        .await
        .expect("read the queue")[1]
        .seq;
    let after_second = db
        .storage
        .queued_rounds(POOL, second, 10, 0)
        .await
        .expect("read the queue");
    assert_eq!(
        after_second.into_iter().map(|r| r.id).collect::<Vec<_>>(),
        ["r3"],
        "read on past the rounds being committed: the first after `after` always"
    );
    assert_eq!(
        db.storage
            .queued_rounds("nowhere", 0, 10, 0)
            .await
            .expect("read"),
        []
    );
}

/// A commit announces the change to the other replicas (Postgres `NOTIFY`) before any
/// heartbeat and while another replica is live, and not while this one is alone: notifying
/// serializes commits in Postgres.
async fn a_queued_round_is_announced_only_while_another_replica_may_listen(db: Db) {
    // SQLite serves one process: there is nobody to tell.
    let Some(replicas) = db.storage.replicas() else {
        return;
    };
    create_pool(&db).await;
    let mut changes = replicas.listen().await.expect("listening");
    let pool_changed = Some(Change::Pool(POOL.to_owned()));
    assert_eq!(
        announced(&db, &mut changes, "r1").await,
        pool_changed,
        "before any heartbeat"
    );
    let within = Duration::from_secs(3);
    let live = replicas.heartbeat("me", within).await.expect("a heartbeat");
    assert_eq!(live, ["me"]);
    assert_eq!(announced(&db, &mut changes, "r2").await, None, "alone");
    replicas
        .heartbeat("other", within)
        .await
        .expect("a heartbeat");
    let live = replicas.heartbeat("me", within).await.expect("a heartbeat");
    assert_eq!(live, ["me", "other"]);
    assert_eq!(
        announced(&db, &mut changes, "r3").await,
        pool_changed,
        "with another replica"
    );
}

/// Queues round `id` and returns the change announced within half a second, if any.
async fn announced(
    db: &Db,
    changes: &mut tokio::sync::mpsc::Receiver<Change>,
    id: &str,
) -> Option<Change> {
    enqueue(db, id, &["a", "b"]).await;
    tokio::time::timeout(Duration::from_millis(500), changes.recv())
        .await
        .ok()
        .flatten()
}

/// A line is queued only while the pool has the parameters it was checked against and no
/// correction was queued since it looked: otherwise nothing is stored and the caller checks it
/// again.
async fn lines_checked_against_what_the_pool_no_longer_is_are_not_queued(db: Db) {
    create_pool(&db).await;
    let line = |id: &'static str| NewEntry::by_body(id, EntryKind::Round, "{}");
    let current = params();
    let other = SystemParams::Elo(EloParams::default());
    let against = |params, correction| Some(Against { params, correction });
    let storage = &db.storage;
    let enqueue = |entry, against| async move {
        storage
            .enqueue_entries(POOL, &[entry], ROOMY_QUEUE, against)
            .await
    };
    assert_eq!(
        enqueue(line("r1"), against(&other, None))
            .await
            .expect("refused"),
        EnqueuedAll::Changed,
        "other parameters"
    );
    assert!(matches!(
        enqueue(line("r1"), against(&current, None))
            .await
            .expect("queued"),
        EnqueuedAll::Stored(_)
    ));
    let correction = NewEntry::by_body("fix", EntryKind::Correction, "{}");
    assert!(matches!(
        enqueue(correction, None).await.expect("a correction"),
        EnqueuedAll::Stored(_)
    ));
    assert_eq!(
        enqueue(line("r2"), against(&current, None))
            .await
            .expect("refused"),
        EnqueuedAll::Changed,
        "a correction queued since"
    );
    let queued = db.storage.queued_corrections(POOL).await.expect("read");
    assert_eq!(queued.len(), 1);
    assert_eq!(queued[0].id, "fix");
    assert!(matches!(
        enqueue(line("r2"), against(&current, Some(queued[0].seq)))
            .await
            .expect("queued"),
        EnqueuedAll::Stored(_)
    ));
    let ids = queued_ids(&db).await;
    assert_eq!(ids, ["r1", "fix", "r2"], "the refused tries stored nothing");
}

/// Requests stored in one transaction (a batch of concurrent posts) each get the outcome they
/// would have alone, in order: a conflict, a full queue or a change refuses only its own
/// request, and a later request sees what an earlier one stored.
async fn requests_stored_together_each_get_their_own_outcome(db: Db) {
    create_pool(&db).await;
    enqueue(&db, "old", &["a", "b"]).await;
    let line = |id: &'static str, body: &'static str| NewEntry::by_body(id, EntryKind::Round, body);
    let current = params();
    let other = SystemParams::Elo(EloParams::default());
    let first = [line("r1", "{}"), line("r2", "{}")];
    let conflicting = [line("r3", "{}"), line("old", "{\"other\":1}")];
    let changed = [line("r4", "{}")];
    let repost = [line("r1", "{}"), line("r5", "{}")];
    let too_many = [line("r6", "{}"), line("r7", "{}")];
    let requests = [
        EnqueueRequest {
            entries: &first,
            against: Some(Against {
                params: &current,
                correction: None,
            }),
        },
        EnqueueRequest {
            entries: &conflicting,
            against: None,
        },
        EnqueueRequest {
            entries: &changed,
            against: Some(Against {
                params: &other,
                correction: None,
            }),
        },
        EnqueueRequest {
            entries: &repost,
            against: None,
        },
        EnqueueRequest {
            entries: &too_many,
            against: None,
        },
    ];
    // Room for five: "old", r1, r2 and r5 leave one, too few for r6 and r7.
    let outcomes = db
        .storage
        .enqueue_requests(POOL, &requests, 5)
        .await
        .expect("stored");
    let accepted = |position| Enqueued::Accepted { position };
    assert_eq!(
        outcomes,
        [
            EnqueuedAll::Stored(vec![accepted(2), accepted(3)]),
            EnqueuedAll::Conflict(1),
            EnqueuedAll::Changed,
            EnqueuedAll::Stored(vec![
                Enqueued::AlreadyStored {
                    status: RoundStatus::Queued
                },
                accepted(4),
            ]),
            EnqueuedAll::QueueFull { queued: 4, new: 2 },
        ]
    );
    let ids = queued_ids(&db).await;
    assert_eq!(
        ids,
        ["old", "r1", "r2", "r5"],
        "only what was accepted, in order"
    );
}

/// The ids of the (at most ten) rounds waiting in [`POOL`], oldest first.
async fn queued_ids(db: &Db) -> Vec<String> {
    db.storage
        .queued_rounds(POOL, 0, 10, 1 << 20)
        .await
        .expect("the queue")
        .into_iter()
        .map(|q| q.id)
        .collect()
}

/// On Postgres, posts and the worker take separate locks: a post is stored while a worker's
/// commit holds its lock and the pool's row (as a settling batch does until it commits), and
/// waits only for another writer of the queue's tail; a change of parameters waits for the
/// posts under way.
#[tokio::test]
async fn posts_wait_for_the_tail_of_the_queue_only_not_for_the_workers_commit() {
    support::run(crate::db::Backend::Postgres, |db| async move {
        use sqlx::{Connection, Executor};
        create_pool(&db).await;
        let mut worker = sqlx::PgConnection::connect(&db.url).await.expect("connect");
        worker
            .execute(
                "BEGIN; SELECT pg_advisory_xact_lock(x'6d6d72'::int, hashtext('main'));
                 UPDATE pools SET applied = applied WHERE name = 'main'",
            )
            .await
            .expect("a worker's commit under way");
        let posted = tokio::time::timeout(
            Duration::from_secs(5),
            db.storage
                .enqueue_round(POOL, "r1", &body("r1", &["a", "b"]), ROOMY_QUEUE),
        )
        .await
        .expect("the post did not wait for the worker's commit")
        .expect("enqueue");
        assert_eq!(posted, Enqueued::Accepted { position: 1 });
        worker.execute("ROLLBACK").await.expect("rolled back");

        let mut poster = sqlx::PgConnection::connect(&db.url).await.expect("connect");
        poster
            .execute("BEGIN; SELECT pg_advisory_xact_lock(x'6d6d71'::int, hashtext('main'))")
            .await
            .expect("a post under way");
        let waiting = tokio::time::timeout(
            Duration::from_millis(500),
            db.storage
                .enqueue_round(POOL, "r2", &body("r2", &["a", "b"]), ROOMY_QUEUE),
        )
        .await;
        assert!(waiting.is_err(), "a post went past another post's lock");
        let other = SystemParams::Elo(EloParams::default());
        let changing = tokio::time::timeout(
            Duration::from_millis(500),
            db.storage
                .put_pool("other-pool-unlocked", &other, &tester()),
        )
        .await;
        assert!(changing.is_ok(), "another pool waited");
        let changing = tokio::time::timeout(
            Duration::from_millis(500),
            db.storage.put_pool(POOL, &other, &tester()),
        )
        .await;
        assert!(
            changing.is_err(),
            "a change of parameters went past a post's lock"
        );
        poster.execute("COMMIT").await.expect("committed");
        assert_eq!(
            db.storage
                .enqueue_round(POOL, "r2", &body("r2", &["a", "b"]), ROOMY_QUEUE)
                .await
                .expect("enqueue"),
            Enqueued::Accepted { position: 2 }
        );
    })
    .await;
}
