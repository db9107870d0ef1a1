//! `GET /v1/pools/{pool}/rounds` on both backends: the applied rounds in order, paged as JSON or
//! streamed as JSON Lines; re-posting the export into a new pool reproduces every rating.

use axum::http::StatusCode;
use serde_json::{json, Value};

use crate::support::{round, round_at, TestApp, POOL};

backend_tests!(
    an_exported_pool_posted_into_another_rates_every_player_the_same,
    pages_end_by_size_and_a_round_larger_than_a_page_opens_one_alone,
);

/// The rounds of every page of the pool's export, `limit` at most a page, first to last.
async fn pages(app: &TestApp, limit: u32) -> Vec<Vec<Value>> {
    let mut pages = Vec::new();
    let mut uri = format!("/v1/pools/main/rounds?limit={limit}");
    loop {
        let page = app
            .get(&uri)
            .await
            .assert_status(StatusCode::OK, &uri)
            .clone();
        let rounds = page["rounds"].as_array().expect("rounds");
        pages.push(rounds.iter().map(|r| r["round"].clone()).collect());
        match page["next_after"].as_i64() {
            Some(after) => uri = format!("/v1/pools/main/rounds?limit={limit}&after={after}"),
            None => return pages,
        }
    }
}

async fn an_exported_pool_posted_into_another_rates_every_player_the_same(app: TestApp) {
    app.create_pool(POOL).await;
    let mut weighted = round("r3", &["c", "d", "a"]);
    weighted["weight"] = json!(0.5);
    app.play([
        round_at("r1", "2026-01-01T00:00:00Z", &["a", "b", "c"]),
        round_at("r2", "2026-01-02T00:00:00Z", &["b", "a"]),
        weighted,
        round("r4", &["d", "e", "b", "a"]),
        round("r5", &["e", "c"]),
    ])
    .await;
    app.queue_round(round("r6", &["a", "e"])).await;

    let paged: Vec<Value> = pages(&app, 2).await.concat();
    let ids: Vec<&str> = paged
        .iter()
        .map(|r| r["id"].as_str().expect("an id"))
        .collect();
    assert_eq!(
        ids,
        ["r1", "r2", "r3", "r4", "r5"],
        "applied rounds only, in order"
    );

    let (status, content_type, text) = app
        .get_text("/v1/pools/main/rounds", "application/x-ndjson")
        .await;
    assert_eq!(
        (status, content_type.as_str()),
        (StatusCode::OK, "application/x-ndjson")
    );
    let lines: Vec<Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).expect("one round per line"))
        .collect();
    assert_eq!(lines, paged);
    let (_, _, tail) = app
        .get_text("/v1/pools/main/rounds?after=3", "application/x-ndjson")
        .await;
    assert_eq!(tail.lines().count(), 2, "resumed after the third round");

    app.create_pool("copy").await;
    for line in &lines {
        app.post_round("copy", line.clone())
            .await
            .assert_status(StatusCode::ACCEPTED, "re-post");
    }
    app.apply_queued("copy").await;
    for player in ["a", "b", "c", "d", "e"] {
        let original = app.get(&format!("/v1/pools/main/players/{player}")).await;
        let copied = app.get(&format!("/v1/pools/copy/players/{player}")).await;
        assert_eq!(copied.body, original.body, "{player}");
    }
}

async fn pages_end_by_size_and_a_round_larger_than_a_page_opens_one_alone(app: TestApp) {
    app.create_pool(POOL).await;
    // 4 MiB of bodies end a page: 1,000 entrants with ids of 250 bytes make a round of about
    // 270 kB, and 17,000 one of about 4.6 MB.
    let players = |count: usize, tag: &str| -> Vec<String> {
        (0..count).map(|i| format!("{tag}{i:0>249}")).collect()
    };
    let round_of = |id: &str, count: usize| {
        let names = players(count, &id[..1]);
        round(id, &names.iter().map(String::as_str).collect::<Vec<_>>())
    };
    let rounds: Vec<Value> = [("a1", 1_000), ("b2", 17_000), ("c3", 1_000), ("d4", 1_000)]
        .into_iter()
        .map(|(id, count)| round_of(id, count))
        .collect();
    app.play(rounds).await;
    let ids: Vec<Vec<String>> = pages(&app, 1000)
        .await
        .iter()
        .map(|page| {
            page.iter()
                .map(|r| r["id"].as_str().expect("an id").to_owned())
                .collect()
        })
        .collect();
    assert_eq!(
        ids,
        [vec!["a1"], vec!["b2"], vec!["c3", "d4"]],
        "the round over 4 MiB goes alone, and paging goes on after it"
    );
    // The stream reads 1 MiB of bodies at a time: here a1, then b2 alone, then c3 and d4.
    let (status, _, text) = app
        .get_text("/v1/pools/main/rounds", "application/x-ndjson")
        .await;
    assert_eq!(status, StatusCode::OK);
    let streamed: Vec<String> = text
        .lines()
        .map(|line| {
            let round: Value = serde_json::from_str(line).expect("one round per line");
            round["id"].as_str().expect("an id").to_owned()
        })
        .collect();
    assert_eq!(streamed, ["a1", "b2", "c3", "d4"], "every batch streamed");
}
