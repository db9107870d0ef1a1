//! Pools: creation, reads with counts, and when their parameters may change.

use mmr_service::engine::{EloMmrParams, SystemParams, Ties, Variant};
use mmr_service::storage::{Error, PoolWrite};

use crate::storage_ext::{tester, StorageExt};
use crate::support::{self, create_pool, enqueue, enqueue_and_apply, params, population, Db, POOL};

backend_tests!(
    a_created_pool_reads_back_with_its_exact_parameters_and_no_rounds,
    putting_the_same_parameters_again_changes_nothing,
    a_pool_without_rounds_can_change_its_parameters,
    a_pool_with_queued_or_applied_rounds_refuses_a_parameter_change,
    pools_are_listed_by_name_with_their_counts,
    progress_reports_the_parameters_and_the_applied_rounds_only,
);

/// Parameters with every field away from its default, and an infinite `rho`.
fn unusual_params() -> SystemParams {
    SystemParams::EloMmr(EloMmrParams {
        variant: Variant::Gaussian,
        beta: 0.1 + 0.2,
        gamma: 1.0 / 3.0,
        rho: f64::INFINITY,
        mu_init: -7.25,
        sigma_init: 1e-300,
        drift_per_day: 5e-324,
        history_limit: 7,
        ties: Ties::Split,
    })
}

async fn a_created_pool_reads_back_with_its_exact_parameters_and_no_rounds(db: Db) {
    let params = unusual_params();
    assert_eq!(
        db.storage
            .put_pool("odd", &params, &tester())
            .await
            .expect("put"),
        PoolWrite::Created
    );
    let pool = db.storage.pool("odd").await.expect("read").expect("exists");
    assert_eq!(pool.name, "odd");
    assert_eq!(pool.params, params);
    let (SystemParams::EloMmr(got), SystemParams::EloMmr(want)) = (&pool.params, &params) else {
        panic!("Elo-MMR parameters");
    };
    assert_eq!(got.rho, f64::INFINITY);
    assert_eq!(got.drift_per_day.to_bits(), want.drift_per_day.to_bits());
    assert_eq!((pool.applied, pool.queued, pool.failed), (0, 0, 0));
    assert_eq!(db.storage.pool("missing").await.expect("read"), None);
}

async fn putting_the_same_parameters_again_changes_nothing(db: Db) {
    create_pool(&db).await;
    enqueue(&db, "r1", &["a", "b"]).await;
    assert_eq!(
        db.storage
            .put_pool(POOL, &params(), &tester())
            .await
            .expect("put"),
        PoolWrite::Unchanged,
        "an identical PUT is not a change, even with rounds queued"
    );
}

async fn a_pool_without_rounds_can_change_its_parameters(db: Db) {
    create_pool(&db).await;
    let params = unusual_params();
    assert_eq!(
        db.storage
            .put_pool(POOL, &params, &tester())
            .await
            .expect("put"),
        PoolWrite::Updated
    );
    let pool = db.storage.pool(POOL).await.expect("read").expect("exists");
    assert_eq!(pool.params, params);
}

async fn a_pool_with_queued_or_applied_rounds_refuses_a_parameter_change(db: Db) {
    create_pool(&db).await;
    let changed = SystemParams::EloMmr(EloMmrParams {
        beta: 300.0,
        ..EloMmrParams::default()
    });
    enqueue(&db, "r1", &["a", "b"]).await;
    match db.storage.put_pool(POOL, &changed, &tester()).await {
        Err(Error::ParamsLocked {
            applied: 0,
            queued: 1,
            ..
        }) => {}
        other => panic!("with a queued round: {other:?}"),
    }
    let mut population = population();
    let applied = support::rate(&mut population, &["a", "b"], None);
    db.storage
        .apply_round(POOL, "r1", &applied)
        .await
        .expect("apply");
    match db.storage.put_pool(POOL, &changed, &tester()).await {
        Err(Error::ParamsLocked {
            applied: 1,
            queued: 0,
            ..
        }) => {}
        other => panic!("with an applied round: {other:?}"),
    }
    let pool = db.storage.pool(POOL).await.expect("read").expect("exists");
    assert_eq!(pool.params, params(), "the refused change left no trace");
}

async fn pools_are_listed_by_name_with_their_counts(db: Db) {
    db.storage
        .put_pool("zeta", &params(), &tester())
        .await
        .expect("put");
    create_pool(&db).await;
    let mut population = population();
    enqueue_and_apply(&db, &mut population, "r1", &["a", "b", "c"], None).await;
    enqueue_and_apply(&db, &mut population, "r2", &["a", "d"], None).await;
    enqueue(&db, "r3", &["a", "b"]).await;
    db.storage
        .fail_round(POOL, "r3", "could not rate")
        .await
        .expect("fail");
    enqueue(&db, "r4", &["a", "b"]).await;

    let pools = db.storage.pools().await.expect("list");
    let names: Vec<&str> = pools.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, [POOL, "zeta"]);
    let main = &pools[0];
    assert_eq!(
        (main.applied, main.queued, main.failed),
        (2, 1, 1),
        "applied, queued, failed"
    );
    let zeta = &pools[1];
    assert_eq!((zeta.applied, zeta.queued, zeta.failed), (0, 0, 0));
}

async fn progress_reports_the_parameters_and_the_applied_rounds_only(db: Db) {
    assert_eq!(db.storage.pool_progress(POOL).await.expect("read"), None);
    create_pool(&db).await;
    let mut population = population();
    enqueue_and_apply(&db, &mut population, "r1", &["a", "b"], None).await;
    enqueue(&db, "r2", &["a", "b"]).await;
    let progress = db
        .storage
        .pool_progress(POOL)
        .await
        .expect("read")
        .expect("exists");
    assert_eq!(progress.params, params());
    assert_eq!(progress.applied, 1, "the queued round is not counted");
}
