//! The dashboard in a real browser: Debian's Chromium driven through chromedriver (WebDriver,
//! the `fantoccini` client) over the real service holding a few rounds. It checks what a person
//! would: the leaderboard rows are the API's, in the pool's order, with their display rating and
//! league; another order reorders them and the pages turn both ways; the histogram counts every
//! player; search finds a player; the player's page gives their peak and place, a dated chart
//! with one linked point per round at that round's performance, and a read-out the keyboard
//! moves; a round page gives its date, field size and entrants a page at a time; a phone-sized
//! window needs no sideways scrolling. With `../shared/data` present it also imports formula1
//! and ctftime and takes their pages' screenshots. Screenshots go to `target/screenshots/`,
//! each path printed. Skipped with a message when Chromium or chromedriver is missing, except
//! under `CI`.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use fantoccini::key::Key;
use fantoccini::{Client, ClientBuilder, Locator};
use hyper_util::client::legacy::connect::HttpConnector;
use percent_encoding::{utf8_percent_encode, NON_ALPHANUMERIC};
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
        match ClientBuilder::new(HttpConnector::new())
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

/// The text of the link in each cell of column `column` of the table with id `table`.
async fn links(client: &Client, table: &str, column: usize) -> Vec<String> {
    let links = client
        .find_all(Locator::Css(&format!(
            "#{table} tbody tr td:nth-child({column}) a"
        )))
        .await
        .expect("links");
    let mut texts = Vec::new();
    for link in links {
        texts.push(link.text().await.expect("text"));
    }
    texts
}

/// The text of the element with id `id`.
async fn text_of(client: &Client, id: &str) -> String {
    let found = client
        .find(Locator::Id(id))
        .await
        .unwrap_or_else(|e| panic!("#{id}: {e}"));
    found.text().await.expect("text")
}

/// `x` rounded, its thousands grouped with commas, as the dashboard shows a display rating.
fn grouped(x: f64) -> String {
    let digits = format!("{:.0}", x.round());
    let mut out = String::new();
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(digit);
    }
    out
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
    // its pages turn. A fixed range and two leagues, so that rows show both.
    assert_eq!(
        server.put(
            &format!("/v1/pools/{POOL}/display"),
            r#"{"list_provisional": true, "fixed_range": {"max": 3000}, "leagues": {"k": 3,
                "placement_rounds": 1, "division_size": 100,
                "tiers": [{"name": "bronze"}, {"name": "gold", "threshold": 1500}]}}"#,
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
    // A player of the dated rounds (the field's players played one undated round).
    let top = board["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .find(|e| e["rounds"].as_u64() >= Some(3))
        .and_then(|e| e["player"].as_str())
        .expect("a player of three rounds or more")
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
    let by_mu = api(&format!("/v1/pools/{POOL}/leaderboard?limit=20&order=mu"));
    let active = api(&format!(
        "/v1/pools/{POOL}/leaderboard?limit=20&active_days=30"
    ));
    let top_read = api(&format!("/v1/pools/{POOL}/players/{top}"));
    let shared = shared_pools(&server);
    let pools = api("/v1/pools");

    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    runtime.block_on(async {
        let driver = Driver::start();
        let client = browser(&driver).await;

        open(&client, &base, "#/").await;
        let names: Vec<&str> = pools["pools"]
            .as_array()
            .expect("pools")
            .iter()
            .map(|p| p["name"].as_str().expect("a name"))
            .collect();
        assert_eq!(links(&client, "pools", 1).await, names);
        screenshot(&shots, "pools", &client.screenshot().await.expect("png"));

        open(&client, &base, &format!("#/pools/{POOL}")).await;
        let expected: Vec<&str> = board["entries"]
            .as_array()
            .expect("entries")
            .iter()
            .map(|e| e["player"].as_str().expect("player"))
            .collect();
        assert_eq!(
            links(&client, "leaderboard", 2).await,
            expected,
            "the leaderboard's rows"
        );
        let entries = board["entries"].as_array().expect("entries");
        let ratings: Vec<String> = entries
            .iter()
            .map(|e| grouped(e["display_rating"].as_f64().expect("a display rating")))
            .collect();
        assert_eq!(column(&client, "leaderboard", 3).await, ratings, "ratings");
        let leagues: Vec<String> = entries
            .iter()
            .map(|e| match e["league"].as_object() {
                Some(l) => format!("{} {}", l["league"].as_str().expect("name"), l["division"]),
                None => String::new(),
            })
            .collect();
        let shown: Vec<String> = column(&client, "leaderboard", 4)
            .await
            .iter()
            .map(|l| l.to_lowercase())
            .collect();
        assert_eq!(shown, leagues, "league badges");
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

        // Another order, then players active within 30 days of the newest round: the page the
        // hash names, the API's rows.
        for (control, value, query, read) in [
            ("order", "mu", "order=mu", &by_mu),
            ("active", "30", "active_days=30", &active),
        ] {
            client
                .find(Locator::Id(control))
                .await
                .expect("the control")
                .select_by_value(value)
                .await
                .expect("choose");
            let hash = format!("#/pools/{POOL}?{query}");
            client
                .wait()
                .at_most(PATIENCE)
                .for_element(Locator::Css(&format!("body[data-loaded=\"{hash}\"]")))
                .await
                .expect("the board chosen");
            let expected: Vec<&str> = read["entries"]
                .as_array()
                .expect("entries")
                .iter()
                .map(|e| e["player"].as_str().expect("player"))
                .collect();
            assert_eq!(links(&client, "leaderboard", 2).await, expected, "{query}");
            open(&client, &base, &format!("#/pools/{POOL}")).await;
        }

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
        // The API's peak and place, a dated axis, and the read-out the arrow keys move.
        let peak = &top_read["peak"];
        let shown_peak = format!(
            "{}\nafter {}",
            grouped(
                peak["display_rating"]
                    .as_f64()
                    .expect("the peak's display rating")
            ),
            peak["round"]["id"].as_str().expect("the peak's round")
        );
        let now = grouped(
            top_read["display_rating"]
                .as_f64()
                .expect("a display rating"),
        );
        assert_eq!(text_of(&client, "current").await, now, "the rating now");
        let peak_text = text_of(&client, "peak").await;
        assert!(
            peak_text.starts_with(&shown_peak),
            "the peak shown, {peak_text:?}, is the API's: {shown_peak}"
        );
        let place = format!("#{} of {}", top_read["position"], top_read["total"]);
        assert!(text_of(&client, "place").await.starts_with(&place));
        let labels = client
            .execute(
                "return [...document.querySelectorAll('#chart text')].map(t => t.textContent)",
                vec![],
            )
            .await
            .expect("the chart's labels");
        let dated = labels
            .as_array()
            .expect("labels")
            .iter()
            .filter(|l| l.as_str().is_some_and(|l| l.starts_with("Jan ")));
        assert!(dated.count() >= 2, "a dated axis: {labels}");
        let chart = client.find(Locator::Id("chart")).await.expect("the chart");
        client
            .execute("document.getElementById('chart').focus()", vec![])
            .await
            .expect("focus the chart");
        chart
            .send_keys(&char::from(Key::Left).to_string())
            .await
            .expect("press ←");
        let second = history["entries"][1]["round_id"]
            .as_str()
            .expect("a second round");
        let readout = text_of(&client, "readout").await;
        assert!(
            readout.starts_with(second) && readout.contains("place"),
            "the read-out of the round before the last: {readout}"
        );
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
            links(&client, "results", 2).await,
            players,
            "the round's first page of entrants"
        );
        let summary = client
            .find(Locator::Css(".summary"))
            .await
            .expect("the round's summary")
            .text()
            .await
            .expect("text");
        let time = round["time"].as_str().expect("a time");
        assert!(
            summary.contains(&time[..10])
                && summary.contains(&format!("{} entrants", round["entrants"])),
            "{summary}"
        );
        screenshot(&shots, "round", &client.screenshot().await.expect("png"));

        // A round larger than a page: its entrants a page at a time.
        open(&client, &base, &format!("#/pools/{POOL}/rounds/field-0")).await;
        let field: Vec<String> = (0..FIELD).map(|k| format!("q{k:02}")).collect();
        assert_eq!(links(&client, "results", 2).await, field[..20]);
        turn_page(&client, "next", "results", "21").await;
        assert_eq!(links(&client, "results", 2).await, field[20..]);
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
            format!("#/pools/{POOL}/rounds/{last}"),
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

        client
            .set_window_size(1100, 1300)
            .await
            .expect("a desktop window");
        for (name, hash) in &shared {
            open(&client, &base, hash).await;
            screenshot(&shots, name, &client.screenshot().await.expect("png"));
        }
        client.close().await.expect("close the browser");
    });
}

/// On the imported ctftime pool, at its default display: the default leaderboard's top 100 are
/// established teams, by μ − 3σ, where a board by μ with everyone (the default before pools left
/// provisional players out) has teams of one or two rounds among its top 100.
fn default_board_lists_established_teams_only(server: &Server) {
    let entries = |uri: &str| -> Vec<Value> {
        let board = server.get_json(uri);
        board["entries"].as_array().expect("entries").clone()
    };
    let default = entries("/v1/pools/ctftime/leaderboard?limit=100");
    assert_eq!(default.len(), 100);
    assert!(
        default.iter().all(|e| e["provisional"] == false),
        "no provisional team in the default top 100"
    );
    let conservative: Vec<f64> = default
        .iter()
        .map(|e| e["conservative"].as_f64().expect("μ − 3σ"))
        .collect();
    assert!(conservative.windows(2).all(|w| w[0] >= w[1]), "by μ − 3σ");
    let by_mu = entries("/v1/pools/ctftime/leaderboard?limit=100&order=mu&established=false");
    let mu: Vec<f64> = by_mu.iter().map(|e| e["mu"].as_f64().expect("μ")).collect();
    assert!(mu.windows(2).all(|w| w[0] >= w[1]), "by μ");
    let provisional = by_mu.iter().filter(|e| e["provisional"] == true).count();
    assert!(
        provisional > 0,
        "the board by μ lists provisional teams too"
    );
    println!(
        "ctftime: {provisional} of the top 100 by μ are provisional, none of the default board's"
    );
}

/// With `../shared/data` present, formula1 (with a fixed range and leagues) and ctftime (its
/// ids written in NFC) imported into pools of their own: the pages to photograph, by name.
fn shared_pools(server: &Server) -> Vec<(String, String)> {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data");
    let (formula1, ctftime) = (
        data.join("formula1/rounds.jsonl"),
        data.join("ctftime/rounds.jsonl"),
    );
    if !formula1.exists() || !ctftime.exists() {
        println!(
            "SKIPPED: the screenshots of formula1 and ctftime ({} is missing)",
            data.display()
        );
        return Vec::new();
    }
    let f1_display = r#"{"fixed_range": {"max": 3000}, "expected_ranks": true, "leagues": {"k": 3,
        "placement_rounds": 5, "division_size": 100, "tiers": [{"name": "bronze"},
        {"name": "silver", "threshold": 1400}, {"name": "gold", "threshold": 1600},
        {"name": "diamond", "threshold": 1900}]}}"#;
    let mut pages = Vec::new();
    for (pool, input, display) in [
        ("formula1", &formula1, Some(f1_display)),
        ("ctftime", &ctftime, None),
    ] {
        assert_eq!(
            server.put(&format!("/v1/pools/{pool}"), "{}", ADMIN_KEY),
            201
        );
        if let Some(display) = display {
            assert_eq!(
                server.put(&format!("/v1/pools/{pool}/display"), display, ADMIN_KEY),
                200
            );
        }
        let output = Command::new(env!("CARGO_BIN_EXE_mmr-service"))
            .args([
                "import",
                "--nfc",
                "--url",
                server.base_url(),
                "--pool",
                pool,
                "--input",
            ])
            .arg(input)
            .env("MMR_API_KEY", ADMIN_KEY)
            .output()
            .expect("run mmr-service import");
        assert!(
            output.status.success(),
            "{pool}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let deadline = std::time::Instant::now() + Duration::from_secs(300);
        while server.get_json(&format!("/v1/pools/{pool}"))["rounds_queued"] != 0 {
            assert!(
                std::time::Instant::now() < deadline,
                "{pool}: not applied in time"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        if pool == "ctftime" {
            default_board_lists_established_teams_only(server);
        }
        let board = server.get_json(&format!("/v1/pools/{pool}/leaderboard?limit=1"));
        let top = board["entries"][0]["player"]
            .as_str()
            .expect("a top player");
        let history = server.get_json(&format!(
            "/v1/pools/{pool}/players/{}/history?limit=1",
            utf8_percent_encode(top, NON_ALPHANUMERIC)
        ));
        let last = history["entries"][0]["round_id"].as_str().expect("a round");
        let player = if pool == "formula1" { "hamilton" } else { top };
        pages.extend([
            (format!("{pool}-leaderboard"), format!("#/pools/{pool}")),
            (
                format!("{pool}-player"),
                format!(
                    "#/pools/{pool}/players/{}",
                    utf8_percent_encode(player, NON_ALPHANUMERIC)
                ),
            ),
            (
                format!("{pool}-round"),
                format!("#/pools/{pool}/rounds/{last}"),
            ),
        ]);
    }
    pages
}
