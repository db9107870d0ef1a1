//! The dashboard in a real browser: Debian's Chromium driven through chromedriver (WebDriver,
//! the `fantoccini` client) over the real service holding a few rounds. It checks what a person
//! would: the leaderboard rows are the API's and its pages turn, the histogram counts every
//! player, search finds a player, the rating chart has one linked point per round of the
//! player's history at that round's performance, a round page lists its entrants, and a
//! phone-sized window needs no sideways scrolling. Screenshots go to `target/screenshots/`,
//! each path printed. Skipped with a message when Chromium or chromedriver is missing, except
//! under `CI`.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{json, Value};

use crate::import::synthetic_round;
use crate::server::{Backend, Server, ADMIN_KEY};
use crate::{wait_until_applied, POOL};

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

/// Rounds the pool holds.
const ROUNDS: usize = 12;

/// Rounds of [`FIELD`] more players each, so that the leaderboard and such a round have a
/// second page.
const FIELD_ROUNDS: usize = 1;

/// Entrants of each of those rounds: more than a page (20).
const FIELD: usize = 25;

/// How long a page may take to show.
const PATIENCE: Duration = Duration::from_secs(20);

/// chromedriver on a free port, stopped when dropped.
struct Driver {
    child: Child,
    url: String,
}

impl Driver {
    fn start() -> Self {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let child = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromedriver");
        Self {
            child,
            url: format!("http://127.0.0.1:{port}"),
        }
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A headless Chromium session, retried while chromedriver starts.
async fn browser(driver: &Driver) -> Client {
    let mut capabilities = serde_json::Map::new();
    capabilities.insert(
        "goog:chromeOptions".to_owned(),
        json!({"binary": CHROMIUM, "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
            "--disable-dev-shm-usage", "--window-size=1100,1300"]}),
    );
    let mut last = None;
    for _ in 0..50 {
        match ClientBuilder::native()
            .capabilities(capabilities.clone())
            .connect(&driver.url)
            .await
        {
            Ok(client) => return client,
            Err(error) => last = Some(error),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("no browser session: {last:?}");
}

/// Opens `hash` and waits until the page has drawn it.
async fn open(client: &Client, base: &str, hash: &str) {
    client.goto(&format!("{base}/{hash}")).await.expect("goto");
    let loaded = format!("body[data-loaded=\"{hash}\"]");
    client
        .wait()
        .at_most(PATIENCE)
        .for_element(Locator::Css(&loaded))
        .await
        .unwrap_or_else(|e| panic!("{hash} did not load: {e}"));
}

/// The text of every cell of column `column` of the table with id `table`.
async fn column(client: &Client, table: &str, column: usize) -> Vec<String> {
    let cells = client
        .find_all(Locator::Css(&format!(
            "#{table} tbody tr td:nth-child({column})"
        )))
        .await
        .expect("cells");
    let mut texts = Vec::new();
    for cell in cells {
        texts.push(cell.text().await.expect("text"));
    }
    texts
}

/// Clicks the paging button `button` (`next` or `previous`) and waits until table `table`'s
/// first row starts with `first`.
async fn turn_page(client: &Client, button: &str, table: &str, first: &str) {
    client
        .find(Locator::Id(button))
        .await
        .unwrap_or_else(|e| panic!("a {button} button: {e}"))
        .click()
        .await
        .unwrap_or_else(|e| panic!("click {button}: {e}"));
    client
        .wait()
        .at_most(PATIENCE)
        .for_element(Locator::XPath(&format!(
            "//table[@id='{table}']/tbody/tr[1]/td[1][text()='{first}']"
        )))
        .await
        .unwrap_or_else(|e| panic!("{table}: a page starting at {first}: {e}"));
}

fn screenshot(dir: &Path, name: &str, png: &[u8]) {
    let path = dir.join(format!("dashboard-{name}.png"));
    std::fs::write(&path, png).expect("save the screenshot");
    println!("screenshot: {}", path.display());
}

fn present() -> bool {
    let found = Path::new(CHROMIUM).exists() && Path::new(CHROMEDRIVER).exists();
    if !found {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must have Chromium and chromedriver (.ci/run installs them)"
        );
        println!("SKIPPED: {CHROMIUM} or {CHROMEDRIVER} is missing (apt-get install chromium chromium-driver)");
    }
    found
}

#[test]
fn the_dashboard_shows_the_pool_as_the_api_does_on_a_desktop_and_a_phone() {
    if !present() {
        return;
    }
    let Some(server) = Server::start(Backend::Sqlite) else {
        return;
    };
    assert_eq!(
        server.put(&format!("/v1/pools/{POOL}"), "{}", ADMIN_KEY),
        201
    );
    // The field's players play one round each, provisional: the board lists them too, so that
    // its pages turn.
    assert_eq!(
        server.put(
            &format!("/v1/pools/{POOL}/display"),
            r#"{"list_provisional": true}"#,
            ADMIN_KEY
        ),
        200
    );
    for i in 0..ROUNDS {
        let status = server.post(
            &format!("/v1/pools/{POOL}/rounds"),
            &synthetic_round(i),
            ADMIN_KEY,
        );
        assert_eq!(status, 202);
    }
    // Enough players for a second leaderboard page.
    for i in 0..FIELD_ROUNDS {
        let standings: Vec<serde_json::Value> = (0..FIELD)
            .map(|k| json!({"player": format!("q{:02}", i * FIELD + k), "rank": k + 1}))
            .collect();
        let round = json!({"id": format!("field-{i}"), "standings": standings}).to_string();
        let status = server.post(&format!("/v1/pools/{POOL}/rounds"), &round, ADMIN_KEY);
        assert_eq!(status, 202);
    }
    wait_until_applied(&server, (ROUNDS + FIELD_ROUNDS) as u64);
    let shots: PathBuf = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("the target directory")
        .join("screenshots");
    std::fs::create_dir_all(&shots).expect("the screenshot directory");
    let base = server.base_url().to_owned();
    let api = |path: &str| server.get_json(path);
    let board = api(&format!("/v1/pools/{POOL}/leaderboard?limit=20"));
    let top = board["entries"][0]["player"]
        .as_str()
        .expect("a top player")
        .to_owned();
    let history = api(&format!(
        "/v1/pools/{POOL}/players/{top}/history?limit=1000"
    ));
    // The blocking client cannot run inside the browser's runtime: every API read comes first.
    let last = history["entries"][0]["round_id"]
        .as_str()
        .expect("a round")
        .to_owned();
    let round = api(&format!("/v1/pools/{POOL}/rounds/{last}"));

    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    runtime.block_on(async {
        let driver = Driver::start();
        let client = browser(&driver).await;

        open(&client, &base, "#/").await;
        assert_eq!(column(&client, "pools", 1).await, [POOL]);
        screenshot(&shots, "pools", &client.screenshot().await.expect("png"));

        open(&client, &base, &format!("#/pools/{POOL}")).await;
        let expected: Vec<&str> = board["entries"]
            .as_array()
            .expect("entries")
            .iter()
            .map(|e| e["player"].as_str().expect("player"))
            .collect();
        assert_eq!(
            column(&client, "leaderboard", 2).await,
            expected,
            "the leaderboard's rows"
        );
        let counted = client
            .execute(
                "return [...document.querySelectorAll('#histogram .bin')]\
                 .reduce((sum, bar) => sum + Number(bar.dataset.count), 0)",
                vec![],
            )
            .await
            .expect("count the bars");
        assert_eq!(counted, board["total"], "the histogram counts every player");

        // The second page and back.
        turn_page(&client, "next", "leaderboard", "21").await;
        turn_page(&client, "previous", "leaderboard", "1").await;

        let search = client
            .find(Locator::Id("search"))
            .await
            .expect("the search box");
        search.send_keys("p1").await.expect("type");
        let found = client
            .wait()
            .at_most(PATIENCE)
            .for_element(Locator::Css("#found li a"))
            .await
            .expect("a search result");
        assert!(found.text().await.expect("text").starts_with("p1"));
        screenshot(
            &shots,
            "leaderboard",
            &client.screenshot().await.expect("png"),
        );

        open(&client, &base, &format!("#/pools/{POOL}/players/{top}")).await;
        let points: Value = client
            .execute(
                "return [...document.querySelectorAll('#chart circle.performance')].map(c => [
                    c.dataset.round, Number(c.dataset.performance), Number(c.dataset.mu),
                    c.parentNode.getAttribute('href')])",
                vec![],
            )
            .await
            .expect("the chart's points");
        let mut rounds: Vec<&Value> = history["entries"]
            .as_array()
            .expect("entries")
            .iter()
            .collect();
        rounds.reverse();
        let points = points.as_array().expect("points");
        assert_eq!(points.len(), rounds.len(), "one point per round played");
        for (point, round) in points.iter().zip(&rounds) {
            let id = round["round_id"].as_str().expect("round id");
            assert_eq!(point[0], id);
            assert_eq!(
                point[1].as_f64(),
                round["performance"].as_f64(),
                "{id}: performance"
            );
            assert_eq!(point[2].as_f64(), round["mu"].as_f64(), "{id}: μ");
            assert_eq!(
                point[3],
                format!("#/pools/{POOL}/rounds/{id}"),
                "{id}: the link"
            );
        }
        screenshot(&shots, "player", &client.screenshot().await.expect("png"));

        open(&client, &base, &format!("#/pools/{POOL}/rounds/{last}")).await;
        let players: Vec<&str> = round["results"]
            .as_array()
            .expect("results")
            .iter()
            .map(|r| r["player"].as_str().expect("player"))
            .take(20)
            .collect();
        assert_eq!(
            column(&client, "results", 2).await,
            players,
            "the round's first page of entrants"
        );
        screenshot(&shots, "round", &client.screenshot().await.expect("png"));

        // A round larger than a page: its entrants a page at a time.
        open(&client, &base, &format!("#/pools/{POOL}/rounds/field-0")).await;
        let field: Vec<String> = (0..FIELD).map(|k| format!("q{k:02}")).collect();
        assert_eq!(column(&client, "results", 2).await, field[..20]);
        turn_page(&client, "next", "results", "21").await;
        assert_eq!(column(&client, "results", 2).await, field[20..]);
        screenshot(
            &shots,
            "round-page-2",
            &client.screenshot().await.expect("png"),
        );
        turn_page(&client, "previous", "results", "1").await;

        client
            .set_window_size(390, 844)
            .await
            .expect("a phone-sized window");
        for hash in [
            format!("#/pools/{POOL}"),
            format!("#/pools/{POOL}/players/{top}"),
        ] {
            open(&client, &base, &hash).await;
            let overflow = client
                .execute(
                    "return document.documentElement.scrollWidth - window.innerWidth",
                    vec![],
                )
                .await
                .expect("measure");
            assert!(
                overflow.as_f64() <= Some(0.0),
                "{hash}: the page scrolls sideways by {overflow}px"
            );
        }
        screenshot(&shots, "phone", &client.screenshot().await.expect("png"));
        client.close().await.expect("close the browser");
    });
}
