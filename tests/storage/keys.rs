//! Keys kept in the database: created once by name, revoked at once, and revoked only once;
//! the pools a key reaches read back as stored, and a key stored without them (as every key
//! was before keys had scopes) reaches every pool.

use mmr_service::config::Role;
use mmr_service::scope::Scope;
use mmr_service::storage::StoredKey;

use crate::storage_ext::tester;
use crate::support::Db;

backend_tests!(a_key_is_revoked_once_and_keeps_that_time,);

async fn a_key_is_revoked_once_and_keeps_that_time(db: Db) {
    let key = StoredKey {
        name: "scoreboard".to_owned(),
        role: Role::Read,
        sha256: "ab".repeat(32),
        created_at: 10,
        revoked_at: None,
        pools: Scope::of(Some(vec!["chess-*".to_owned(), "go".to_owned()])).expect("a scope"),
    };
    assert!(db
        .storage
        .create_key(&key, &tester())
        .await
        .expect("create"));
    let everywhere = StoredKey {
        name: "everywhere".to_owned(),
        pools: Scope::All,
        ..key.clone()
    };
    assert!(db
        .storage
        .create_key(&everywhere, &tester())
        .await
        .expect("create"));
    assert!(
        !db.storage
            .create_key(&key, &tester())
            .await
            .expect("create again"),
        "a name is taken once"
    );
    for at in [100, 200] {
        assert!(
            db.storage
                .revoke_key("scoreboard", at, &tester())
                .await
                .expect("revoke"),
            "revoked at {at}: the key exists"
        );
    }
    let stored = db.storage.keys().await.expect("keys");
    assert_eq!(
        stored,
        [
            everywhere,
            StoredKey {
                revoked_at: Some(100),
                ..key
            }
        ],
        "the first revocation's time stays, and each key's pools"
    );
    assert!(
        !db.storage
            .revoke_key("never-made", 300, &tester())
            .await
            .expect("revoke"),
        "no such key"
    );
}
