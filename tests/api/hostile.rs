//! Hostile input: one table of bad requests (malformed and oversized bodies, wrong types and
//! shapes, impossible rounds, numbers and times out of range, odd ids and paths, bad query
//! strings and parameters, missing and weak keys, a key scoped to one pool on every route of
//! another), each sent to a service whose pools already hold applied and queued rounds. Every row must get its documented 4xx with the shared JSON
//! error naming the problem, and leave every table and everything in memory exactly as before.

use axum::body::Body;
use axum::http::{header, Method, Request, StatusCode};
use serde_json::{json, Value};

use mmr_service::api::auth::hash_key;
use mmr_service::config::{KeySettings, Role};
use mmr_service::scope::Scope;

use crate::support::{round, round_at, settings, TestApp, ADMIN_KEY, POOL, READ_KEY, WRITE_KEY};

const ROUNDS: &str = "/v1/pools/main/rounds";
const PUT_MAIN: &str = "/v1/pools/main";
const LEADERBOARD: &str = "/v1/pools/main/leaderboard";
const PREDICTIONS: &str = "/v1/pools/main/predictions";
const MATCH_QUALITY: &str = "/v1/pools/main/match-quality";
const DISPLAY: &str = "/v1/pools/main/display";
const JSON: Option<&str> = Some("application/json");

/// A second pool: no rounds, so its parameters could change (and must not, when refused).
const OTHER: &str = "other";

/// An admin key configured to reach the main pool alone.
const MAIN_ONLY_KEY: &str = "main-only-secret";

/// A body larger than the default limit (32 MiB).
const FIFTY_MB: usize = 50 * 1024 * 1024;

/// Entrants in the round too large to take.
const HUGE_ROUND: usize = 2_000_000;

/// Brackets around the deepest documents sent: far beyond serde_json's recursion limit.
const DEEP: usize = 100_000;

/// One bad request and what it must get.
struct Case {
    /// What is wrong with it, for the failure message.
    name: String,
    request: Request<Body>,
    status: StatusCode,
    code: &'static str,
    field: Option<String>,
}

impl Case {
    fn new(
        name: impl Into<String>,
        request: Request<Body>,
        status: StatusCode,
        code: &'static str,
        field: Option<&str>,
    ) -> Self {
        Self {
            name: name.into(),
            request,
            status,
            code,
            field: field.map(str::to_owned),
        }
    }
}

/// `method uri` with `body`, and with `key` and `content_type` when given.
fn request(
    method: Method,
    uri: &str,
    key: Option<&str>,
    content_type: Option<&str>,
    body: impl Into<Body>,
) -> Request<Body> {
    let mut builder = Request::builder().method(method).uri(uri);
    if let Some(key) = key {
        builder = builder.header(header::AUTHORIZATION, format!("Bearer {key}"));
    }
    if let Some(content_type) = content_type {
        builder = builder.header(header::CONTENT_TYPE, content_type);
    }
    builder.body(body.into()).expect("a valid request")
}

fn get(uri: &str) -> Request<Body> {
    request(Method::GET, uri, None, None, Body::empty())
}

fn post_json(uri: &str, key: Option<&str>, body: &Value) -> Request<Body> {
    request(Method::POST, uri, key, JSON, body.to_string())
}

fn put_json(uri: &str, key: Option<&str>, body: &Value) -> Request<Body> {
    request(Method::PUT, uri, key, JSON, body.to_string())
}

/// A round posted to the main pool that must be refused with 422 `invalid_round` at `field`.
fn bad_round(name: &str, body: Value, field: Option<&str>) -> Case {
    Case::new(
        name,
        post_json(ROUNDS, Some(WRITE_KEY), &body),
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_round",
        field,
    )
}

/// Bytes posted as a round with a JSON content type that must be refused as malformed.
fn malformed(name: &str, body: impl Into<Vec<u8>>) -> Case {
    Case::new(
        name,
        request(Method::POST, ROUNDS, Some(WRITE_KEY), JSON, body.into()),
        StatusCode::BAD_REQUEST,
        "malformed_json",
        None,
    )
}

/// The service's clock `seconds` from now, in RFC 3339.
fn rfc3339_from_now(seconds: i64) -> String {
    (time::OffsetDateTime::now_utc() + time::Duration::seconds(seconds))
        .format(&time::format_description::well_known::Rfc3339)
        .expect("a time in range")
}

/// A round otherwise valid whose field `key` is `value`.
fn round_with(key: &str, value: Value) -> Value {
    let mut body = round("hostile", &["ann", "eve"]);
    body[key] = value;
    body
}

/// A round otherwise valid whose first standing's `key` is `value`.
fn standing_with(key: &str, value: Value) -> Value {
    let mut body = round("hostile", &["ann", "eve"]);
    body["standings"][0][key] = value;
    body
}

/// A valid round's text with `raw` (not necessarily JSON) as the value of its `weight`.
fn weight_text(raw: &str) -> String {
    format!(
        r#"{{"id": "hostile", "weight": {raw}, "standings": [{{"player": "ann", "rank": 1}}, {{"player": "eve", "rank": 2}}]}}"#
    )
}

/// A PUT of `params` to the main pool, which has rounds, refused with 422 `code` at `field`.
fn bad_params(name: &str, params: Value, code: &'static str, field: Option<&str>) -> Case {
    Case::new(
        name,
        put_json(PUT_MAIN, Some(ADMIN_KEY), &params),
        StatusCode::UNPROCESSABLE_ENTITY,
        code,
        field,
    )
}

/// A query string the main pool's leaderboard refuses with 400 naming `field`.
fn bad_query(name: &str, uri: &str, field: &str) -> Case {
    Case::new(
        name,
        get(uri),
        StatusCode::BAD_REQUEST,
        "invalid_query",
        Some(field),
    )
}

/// A body posted to `uri` (predictions or match quality) refused with 422 `code` at `field`.
fn bad_forecast(name: &str, uri: &str, body: &Value, code: &'static str, field: &str) -> Case {
    Case::new(
        name,
        post_json(uri, None, body),
        StatusCode::UNPROCESSABLE_ENTITY,
        code,
        Some(field),
    )
}

/// `n` distinct one-player sides: `[["p0"], ["p1"], …]`.
fn sides(n: usize) -> Value {
    (0..n).map(|i| json!([format!("p{i}")])).collect()
}

/// A round of [`HUGE_ROUND`] entrants, as bytes.
fn huge_round() -> Vec<u8> {
    let mut body = String::from(r#"{"id": "huge", "standings": ["#);
    for i in 0..HUGE_ROUND {
        if i > 0 {
            body.push(',');
        }
        body.push_str(&format!(r#"{{"player": "p{i}", "rank": {}}}"#, i + 1));
    }
    body.push_str("]}");
    body.into_bytes()
}

/// The rounds refused for their body as a whole: not JSON, too big, too deep, wrong type.
fn body_cases() -> Vec<Case> {
    let valid = round("hostile", &["ann", "eve"]).to_string();
    let bad_utf8 = [&br#"{"id": "caf"#[..], b"\xe9", br#"", "standings": []}"#].concat();
    let raw_control = [&br#"{"id": "a"#[..], b"\x01", br#"b", "standings": []}"#].concat();
    let bom = [&b"\xef\xbb\xbf"[..], valid.as_bytes()].concat();
    let utf16: Vec<u8> = valid.encode_utf16().flat_map(u16::to_le_bytes).collect();
    let huge = huge_round();
    let huge_len = huge.len();
    let mut huge_request = request(Method::POST, ROUNDS, Some(WRITE_KEY), JSON, huge);
    huge_request
        .headers_mut()
        .insert(header::CONTENT_LENGTH, huge_len.into());
    // A million one-player sides, 6 MiB: a body the service-wide limit takes, over the compute
    // routes' own.
    let six_mib_of_sides = format!(r#"{{"sides": [{}["a"]]}}"#, r#"["a"],"#.repeat(1 << 20));
    let mut fifty_mb = br#"{"id": "big", "standings": [], "pad": ""#.to_vec();
    fifty_mb.resize(FIFTY_MB, b'x');
    fifty_mb.extend_from_slice(br#""}"#);
    let text = |content_type: &str| {
        request(
            Method::POST,
            ROUNDS,
            Some(WRITE_KEY),
            Some(content_type),
            valid.clone(),
        )
    };
    // What the bytes are does not matter: any encoding but `identity` is refused unread.
    let encoded = |encoding: &str, body: String| {
        let mut request = request(Method::POST, ROUNDS, Some(WRITE_KEY), JSON, body);
        request.headers_mut().insert(
            header::CONTENT_ENCODING,
            header::HeaderValue::from_str(encoding).expect("a header value"),
        );
        request
    };
    let unsupported = |name: &str, request: Request<Body>| {
        Case::new(
            name,
            request,
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            None,
        )
    };
    vec![
        malformed("truncated JSON", &valid.as_bytes()[..valid.len() - 3]),
        malformed("a second document after the first", format!("{valid} {{}}")),
        malformed("an empty body", Vec::new()),
        malformed(
            "single-quoted strings",
            r"{'id': 'hostile', 'standings': []}",
        ),
        malformed(
            "a comment before the document",
            format!("// round\n{valid}"),
        ),
        malformed("a bare NaN weight", weight_text("NaN")),
        malformed("a bare Infinity weight", weight_text("Infinity")),
        malformed("a bare -Infinity weight", weight_text("-Infinity")),
        malformed("a weight of 1e400, beyond f64", weight_text("1e400")),
        malformed("bytes that are not UTF-8 inside a string", bad_utf8),
        malformed(
            "an unpaired UTF-16 surrogate escape",
            r#"{"id": "\ud800", "standings": []}"#,
        ),
        malformed("a raw control character inside a string", raw_control),
        malformed("a byte-order mark before the document", bom),
        malformed("100,000 nested arrays", "[".repeat(DEEP)),
        malformed(
            "100,000 nested objects",
            r#"{"a": "#.repeat(DEEP) + &"}".repeat(DEEP),
        ),
        malformed(
            "standings nested 200 deep",
            format!(
                r#"{{"id": "deep", "standings": {}{}}}"#,
                "[".repeat(200),
                "]".repeat(200)
            ),
        ),
        Case::new(
            "a JSON body encoded as UTF-16",
            request(
                Method::POST,
                ROUNDS,
                Some(WRITE_KEY),
                Some("application/json; charset=utf-16"),
                utf16,
            ),
            StatusCode::BAD_REQUEST,
            "malformed_json",
            None,
        ),
        unsupported(
            "no content type",
            request(Method::POST, ROUNDS, Some(WRITE_KEY), None, valid.clone()),
        ),
        unsupported("a JSON body sent as text/plain", text("text/plain")),
        unsupported("a form", text("application/x-www-form-urlencoded")),
        unsupported("multipart", text("multipart/form-data; boundary=x")),
        unsupported(
            "a type that only starts with json",
            text("application/jsonp"),
        ),
        unsupported(
            "a pool's parameters sent as text",
            request(
                Method::PUT,
                PUT_MAIN,
                Some(ADMIN_KEY),
                Some("text/plain"),
                "{}",
            ),
        ),
        Case::new(
            "a round labelled gzip, as a compressed one would be",
            encoded("gzip", valid.clone()),
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_encoding",
            None,
        ),
        Case::new(
            "a round labelled br",
            encoded("br", valid.clone()),
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_encoding",
            None,
        ),
        unsupported(
            "a prediction without a content type",
            request(Method::POST, PREDICTIONS, None, None, r#"{"entrants": []}"#),
        ),
        Case::new(
            "a 50 MB body, streamed without a length",
            request(Method::POST, ROUNDS, Some(WRITE_KEY), JSON, fifty_mb),
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload_too_large",
            None,
        ),
        Case::new(
            "a match-quality body of 1,048,576 sides, over the compute routes' 4 MiB",
            request(Method::POST, MATCH_QUALITY, None, JSON, six_mib_of_sides),
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload_too_large",
            None,
        ),
        Case::new(
            "a round of 2,000,000 entrants, refused on its Content-Length",
            huge_request,
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload_too_large",
            None,
        ),
        bad_round("a body that is an array", json!([1, 2]), None),
        bad_round("a body that is a string", json!("round"), None),
        bad_round("a body that is null", Value::Null, None),
    ]
}

/// Rounds that are JSON but not a round the service can take.
fn round_cases() -> Vec<Case> {
    let standing = |player: &str, rank: Value| json!({"player": player, "rank": rank});
    let two_ranks = |first: Value| json!({"id": "hostile", "standings": [standing("ann", first), standing("eve", json!(2))]});
    let member =
        |player: &str, team: &str, rank: u64| json!({"player": player, "team": team, "rank": rank});
    let long = "x".repeat(10_000);
    let sql = "'; DROP TABLE rounds;--";
    vec![
        // Types.
        bad_round("a numeric id", round_with("id", json!(7)), Some("id")),
        bad_round("a null id", round_with("id", Value::Null), Some("id")),
        bad_round(
            "an id that is an object",
            round_with("id", json!({"id": "x"})),
            Some("id"),
        ),
        bad_round(
            "standings that are an object",
            round_with("standings", json!({"ann": 1})),
            Some("standings"),
        ),
        bad_round(
            "null standings",
            round_with("standings", Value::Null),
            Some("standings"),
        ),
        bad_round(
            "a standing that is a string",
            round_with("standings", json!(["ann", "eve"])),
            Some("standings[0]"),
        ),
        bad_round(
            "a numeric player",
            standing_with("player", json!(42)),
            Some("standings[0].player"),
        ),
        bad_round(
            "a null player",
            standing_with("player", Value::Null),
            Some("standings[0].player"),
        ),
        bad_round(
            "a rank given as a string",
            standing_with("rank", json!("1")),
            Some("standings[0].rank"),
        ),
        bad_round(
            "a rank given as a boolean",
            standing_with("rank", json!(true)),
            Some("standings[0].rank"),
        ),
        bad_round(
            "a null rank",
            standing_with("rank", Value::Null),
            Some("standings[0].rank"),
        ),
        bad_round(
            "a numeric team",
            standing_with("team", json!(3)),
            Some("standings[0].team"),
        ),
        bad_round(
            "a team nested in arrays",
            standing_with("team", json!([[["red"]]])),
            Some("standings[0].team"),
        ),
        bad_round(
            "a time given as Unix seconds",
            round_with("time", json!(1_767_225_600)),
            Some("time"),
        ),
        bad_round(
            "a weight given as the string NaN",
            round_with("weight", json!("NaN")),
            Some("weight"),
        ),
        bad_round(
            "a boolean weight",
            round_with("weight", json!(true)),
            Some("weight"),
        ),
        bad_round(
            "a ceiling given as the string inf",
            round_with("perf_ceiling", json!("inf")),
            Some("perf_ceiling"),
        ),
        // Missing and unknown fields.
        bad_round("an empty object", json!({}), Some("standings")),
        bad_round(
            "no id",
            json!({"standings": [standing("ann", json!(1)), standing("eve", json!(2))]}),
            Some("id"),
        ),
        bad_round("no standings", json!({"id": "hostile"}), Some("standings")),
        bad_round(
            "a standing without a rank",
            json!({"id": "hostile", "standings": [standing("ann", json!(1)), {"player": "eve"}]}),
            Some("standings[1].rank"),
        ),
        bad_round(
            "a standing without a player",
            json!({"id": "hostile", "standings": [{"rank": 1}, standing("eve", json!(2))]}),
            Some("standings[0].player"),
        ),
        bad_round(
            "an unknown field",
            round_with("colour", json!("red")),
            Some("colour"),
        ),
        bad_round(
            "an unknown field in a standing",
            standing_with("score", json!(9)),
            Some("standings[0].score"),
        ),
        bad_round(
            "a known field in the wrong case",
            round_with("Weight", json!(1)),
            Some("Weight"),
        ),
        // Entrants.
        bad_round(
            "no entrants",
            round_with("standings", json!([])),
            Some("standings"),
        ),
        bad_round(
            "one entrant",
            round_with("standings", json!([standing("ann", json!(1))])),
            Some("standings"),
        ),
        bad_round(
            "one team and no one else",
            round_with(
                "standings",
                json!([member("ann", "red", 1), member("eve", "red", 1)]),
            ),
            Some("standings"),
        ),
        bad_round(
            "a player listed twice",
            round_with(
                "standings",
                json!([
                    standing("ann", json!(1)),
                    standing("eve", json!(2)),
                    standing("ann", json!(3))
                ]),
            ),
            Some("standings[2].player"),
        ),
        bad_round(
            "a player on two teams",
            round_with(
                "standings",
                json!([
                    member("ann", "red", 1),
                    member("eve", "blue", 2),
                    member("ann", "blue", 2)
                ]),
            ),
            Some("standings[2].player"),
        ),
        bad_round(
            "a player twice in one team",
            round_with(
                "standings",
                json!([
                    member("ann", "red", 1),
                    member("ann", "red", 1),
                    standing("eve", json!(2))
                ]),
            ),
            Some("standings[1].player"),
        ),
        bad_round(
            "team members with different ranks",
            round_with(
                "standings",
                json!([
                    member("ann", "red", 1),
                    member("bob", "red", 2),
                    standing("eve", json!(3))
                ]),
            ),
            Some("standings[1].rank"),
        ),
        bad_round(
            "an empty team name",
            standing_with("team", json!("")),
            Some("standings[0].team"),
        ),
        bad_round(
            "a SQL-looking player listed twice",
            round_with(
                "standings",
                json!([standing(sql, json!(1)), standing(sql, json!(2))]),
            ),
            Some("standings[1].player"),
        ),
        // Ranks.
        bad_round("rank 0", two_ranks(json!(0)), Some("standings[0].rank")),
        bad_round(
            "a negative rank",
            two_ranks(json!(-1)),
            Some("standings[0].rank"),
        ),
        bad_round(
            "a fractional rank",
            two_ranks(json!(1.5)),
            Some("standings[0].rank"),
        ),
        bad_round(
            "a rank written as a float",
            two_ranks(json!(1e2)),
            Some("standings[0].rank"),
        ),
        bad_round(
            "rank 2^63",
            two_ranks(json!(1_u64 << 63)),
            Some("standings[0].rank"),
        ),
        bad_round(
            "rank 2^64 - 1",
            two_ranks(json!(u64::MAX)),
            Some("standings[0].rank"),
        ),
        bad_round(
            "rank 2^64",
            two_ranks(json!(18_446_744_073_709_551_616.0)),
            Some("standings[0].rank"),
        ),
        // Weights and ceilings.
        bad_round(
            "a weight of 1e308",
            round_with("weight", json!(1e308)),
            Some("weight"),
        ),
        bad_round(
            "a weight of -1e308",
            round_with("weight", json!(-1e308)),
            Some("weight"),
        ),
        bad_round(
            "a zero weight",
            round_with("weight", json!(0.0)),
            Some("weight"),
        ),
        bad_round(
            "a negative weight",
            round_with("weight", json!(-1.0)),
            Some("weight"),
        ),
        bad_round(
            "the smallest subnormal weight",
            round_with("weight", json!(5e-324)),
            Some("weight"),
        ),
        bad_round(
            "a weight just over the largest",
            round_with("weight", json!(1.000_001e6)),
            Some("weight"),
        ),
        bad_round(
            "a ceiling of -1e308",
            round_with("perf_ceiling", json!(-1e308)),
            Some("perf_ceiling"),
        ),
        bad_round(
            "a ceiling of 1e308",
            round_with("perf_ceiling", json!(1e308)),
            Some("perf_ceiling"),
        ),
        // Times.
        bad_round(
            "a time a mistyped year puts decades ahead",
            round_with("time", json!("2062-11-27T12:00:00Z")),
            Some("time"),
        ),
        bad_round(
            "a time two days after the service's clock",
            round_with("time", json!(rfc3339_from_now(2 * 86_400))),
            Some("time"),
        ),
        bad_round(
            "the year 10000",
            round_with("time", json!("10000-01-01T00:00:00Z")),
            Some("time"),
        ),
        bad_round(
            "a negative year",
            round_with("time", json!("-0001-01-01T00:00:00Z")),
            Some("time"),
        ),
        bad_round(
            "month 13",
            round_with("time", json!("2026-13-01T00:00:00Z")),
            Some("time"),
        ),
        bad_round(
            "February 30",
            round_with("time", json!("2026-02-30T00:00:00Z")),
            Some("time"),
        ),
        bad_round(
            "hour 25",
            round_with("time", json!("2026-01-01T25:00:00Z")),
            Some("time"),
        ),
        bad_round(
            "an offset of 24 hours",
            round_with("time", json!("2026-01-01T00:00:00+24:00")),
            Some("time"),
        ),
        bad_round(
            "a date without a time",
            round_with("time", json!("2026-01-01")),
            Some("time"),
        ),
        bad_round("an empty time", round_with("time", json!("")), Some("time")),
        // Ids.
        bad_round("an empty id", round_with("id", json!("")), Some("id")),
        bad_round(
            "an id of 10,000 characters",
            round_with("id", json!(long)),
            Some("id"),
        ),
        bad_round(
            "an empty player",
            standing_with("player", json!("")),
            Some("standings[0].player"),
        ),
        bad_round(
            "a player of 10,000 characters",
            standing_with("player", json!(long)),
            Some("standings[0].player"),
        ),
        bad_round(
            "a team of 10,000 characters",
            standing_with("team", json!(long)),
            Some("standings[0].team"),
        ),
        bad_round(
            "a NUL in the id",
            round_with("id", json!("a\u{0}b")),
            Some("id"),
        ),
        bad_round(
            "a NUL in a player",
            standing_with("player", json!("\u{0}")),
            Some("standings[0].player"),
        ),
        bad_round(
            "a NUL in a team",
            standing_with("team", json!("red\u{0}")),
            Some("standings[0].team"),
        ),
        bad_round(
            "a player not in NFC (e and a combining accent, shown as é)",
            standing_with("player", json!("e\u{301}")),
            Some("standings[0].player"),
        ),
        bad_round(
            "a team not in NFC",
            standing_with("team", json!("equipe\u{301}")),
            Some("standings[0].team"),
        ),
    ]
}

/// Paths that name nothing, or nothing allowed.
fn path_cases() -> Vec<Case> {
    let not_found = |name: &str, request: Request<Body>, code: &'static str| {
        Case::new(name, request, StatusCode::NOT_FOUND, code, None)
    };
    let bad_name = |name: &str, uri: &str| {
        Case::new(
            name,
            put_json(uri, Some(ADMIN_KEY), &json!({})),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_pool_name",
            Some("pool"),
        )
    };
    let valid = round("hostile", &["ann", "eve"]);
    vec![
        not_found(
            "a round for an unknown pool",
            post_json("/v1/pools/nowhere/rounds", Some(WRITE_KEY), &valid),
            "pool_not_found",
        ),
        not_found(
            "a round for a pool named like a path",
            post_json(
                "/v1/pools/..%2F..%2Fetc%2Fpasswd/rounds",
                Some(WRITE_KEY),
                &valid,
            ),
            "pool_not_found",
        ),
        not_found(
            "a round for a pool named like SQL",
            post_json(
                "/v1/pools/%27%3B%20DROP%20TABLE%20rounds%3B--/rounds",
                Some(WRITE_KEY),
                &valid,
            ),
            "pool_not_found",
        ),
        not_found(
            "the leaderboard of an unknown pool",
            get("/v1/pools/nowhere/leaderboard"),
            "pool_not_found",
        ),
        not_found(
            "an unknown pool",
            get("/v1/pools/nowhere"),
            "pool_not_found",
        ),
        not_found(
            "a prediction in an unknown pool",
            post_json(
                "/v1/pools/nowhere/predictions",
                None,
                &json!({"entrants": [{"players": ["a"]}, {"players": ["b"]}]}),
            ),
            "pool_not_found",
        ),
        not_found(
            "a player named like a path",
            get("/v1/pools/main/players/..%2F..%2Fetc%2Fpasswd"),
            "player_not_found",
        ),
        not_found(
            "a player named like SQL",
            get("/v1/pools/main/players/%27%3B%20DROP%20TABLE%20players%3B--"),
            "player_not_found",
        ),
        not_found(
            "a player named NUL",
            get("/v1/pools/main/players/%00"),
            "player_not_found",
        ),
        not_found(
            "a player named by control characters",
            get("/v1/pools/main/players/%0A%1B%5B31m"),
            "player_not_found",
        ),
        not_found(
            "the history of an unknown player",
            get("/v1/pools/main/players/nobody/history"),
            "player_not_found",
        ),
        not_found(
            "a round named like SQL",
            get("/v1/pools/main/rounds/%27%3B%20DROP%20TABLE%20rounds%3B--"),
            "round_not_found",
        ),
        not_found(
            "a round named like a path",
            get("/v1/pools/main/rounds/..%2F..%2Fetc%2Fpasswd"),
            "round_not_found",
        ),
        not_found(
            "dot segments in the path",
            get("/v1/pools/main/players/../../etc/passwd"),
            "route_not_found",
        ),
        Case::new(
            "a player id that is not UTF-8",
            get("/v1/pools/main/players/%FF"),
            StatusCode::BAD_REQUEST,
            "invalid_query",
            None,
        ),
        Case::new(
            "a pool name that is not UTF-8",
            put_json("/v1/pools/%C3%28", Some(ADMIN_KEY), &json!({})),
            StatusCode::BAD_REQUEST,
            "invalid_query",
            None,
        ),
        bad_name("a pool named ..", "/v1/pools/.."),
        bad_name("a pool name with an encoded slash", "/v1/pools/a%2Fb"),
        bad_name(
            "a pool named like SQL",
            "/v1/pools/%27%3B%20DROP%20TABLE%20pools%3B--",
        ),
        bad_name(
            "a pool name of 65 characters",
            &format!("/v1/pools/{}", "x".repeat(65)),
        ),
        bad_name("a pool name in capitals", "/v1/pools/Main"),
        Case::new(
            "deleting a pool without repeating its name",
            request(
                Method::DELETE,
                PUT_MAIN,
                Some(ADMIN_KEY),
                None,
                Body::empty(),
            ),
            StatusCode::BAD_REQUEST,
            "invalid_query",
            Some("confirm"),
        ),
        Case::new(
            "deleting a pool repeating another name",
            request(
                Method::DELETE,
                &format!("{PUT_MAIN}?confirm=mai"),
                Some(ADMIN_KEY),
                None,
                Body::empty(),
            ),
            StatusCode::BAD_REQUEST,
            "invalid_query",
            Some("confirm"),
        ),
        Case::new(
            "patching the rounds",
            request(
                Method::PATCH,
                ROUNDS,
                Some(ADMIN_KEY),
                JSON,
                valid.to_string(),
            ),
            StatusCode::METHOD_NOT_ALLOWED,
            "method_not_allowed",
            None,
        ),
    ]
}

/// Query strings out of range or of the wrong type; `other_order` is a cursor of the
/// leaderboard by μ − 3σ.
fn query_cases(other_order: &str) -> Vec<Case> {
    let history = "/v1/pools/main/players/ann/history";
    let mut resume = get("/v1/pools/main/events");
    resume.headers_mut().insert(
        "last-event-id",
        "yesterday".parse().expect("a header value"),
    );
    vec![
        Case::new(
            "a change feed resumed after a Last-Event-ID that is no seq",
            resume,
            StatusCode::BAD_REQUEST,
            "invalid_query",
            Some("Last-Event-ID"),
        ),
        bad_query(
            "a histogram of 0 bins",
            "/v1/pools/main/distribution?bins=0",
            "bins",
        ),
        bad_query(
            "a histogram of 201 bins",
            "/v1/pools/main/distribution?bins=201",
            "bins",
        ),
        bad_query(
            "a change feed started after a negative seq",
            "/v1/pools/main/events?after=-1",
            "after",
        ),
        bad_query(
            "a change feed started after a seq that is no number",
            "/v1/pools/main/events?after=one",
            "after",
        ),
        bad_query(
            "an export page after a negative seq",
            "/v1/pools/main/rounds?after=-5",
            "after",
        ),
        bad_query(
            "a history page before a negative seq",
            "/v1/pools/main/players/ann/history?before=-3",
            "before",
        ),
        bad_query(
            "a leaderboard page before something that is no cursor",
            &format!("{LEADERBOARD}?before=!!"),
            "before",
        ),
        bad_query(
            "a leaderboard limit of 0",
            &format!("{LEADERBOARD}?limit=0"),
            "limit",
        ),
        bad_query(
            "a leaderboard limit of 100000",
            &format!("{LEADERBOARD}?limit=100000"),
            "limit",
        ),
        bad_query(
            "a negative leaderboard limit",
            &format!("{LEADERBOARD}?limit=-1"),
            "limit",
        ),
        bad_query(
            "a leaderboard limit that is a word",
            &format!("{LEADERBOARD}?limit=ten"),
            "limit",
        ),
        bad_query(
            "a leaderboard limit that is not UTF-8",
            &format!("{LEADERBOARD}?limit=%FF"),
            "limit",
        ),
        bad_query(
            "a cursor that is not base64",
            &format!("{LEADERBOARD}?cursor=!!!"),
            "cursor",
        ),
        bad_query(
            "a cursor of the other order",
            &format!("{LEADERBOARD}?order=mu&cursor={other_order}"),
            "cursor",
        ),
        bad_query(
            "both a cursor and a player to centre on",
            &format!("{LEADERBOARD}?cursor={other_order}&around=ann"),
            "around",
        ),
        bad_query(
            "an unknown order",
            &format!("{LEADERBOARD}?order=sideways"),
            "order",
        ),
        Case::new(
            "centring on an unknown player",
            get(&format!("{LEADERBOARD}?around=nobody")),
            StatusCode::NOT_FOUND,
            "player_not_found",
            None,
        ),
        bad_query(
            "a history limit of 0",
            &format!("{history}?limit=0"),
            "limit",
        ),
        bad_query(
            "a history cursor that is a word",
            &format!("{history}?before=yesterday"),
            "before",
        ),
        bad_query(
            "a history cursor beyond i64",
            &format!("{history}?before=99999999999999999999"),
            "before",
        ),
        bad_query(
            "a prefix search of 1001",
            "/v1/pools/main/players?prefix=a&limit=1001",
            "limit",
        ),
        bad_query(
            "a win probability without b",
            "/v1/pools/main/win-probability?a=ann",
            "b",
        ),
    ]
}

/// Pool parameters out of range, of the wrong type, or unknown, and a change the pool's
/// rounds forbid.
fn params_cases() -> Vec<Case> {
    let invalid = "invalid_parameter";
    let shape = "invalid_request";
    vec![
        bad_params(
            "a negative beta",
            json!({"beta": -1.0}),
            invalid,
            Some("beta"),
        ),
        bad_params("a zero beta", json!({"beta": 0.0}), invalid, Some("beta")),
        bad_params(
            "beta = 1e308",
            json!({"beta": 1e308}),
            invalid,
            Some("beta"),
        ),
        bad_params(
            "beta = 1e-300",
            json!({"beta": 1e-300}),
            invalid,
            Some("beta"),
        ),
        bad_params(
            "gamma given as the string NaN",
            json!({"gamma": "NaN"}),
            shape,
            Some("gamma"),
        ),
        bad_params(
            "gamma = 1e308",
            json!({"gamma": 1e308}),
            invalid,
            Some("gamma"),
        ),
        bad_params("rho = -1", json!({"rho": -1.0}), invalid, Some("rho")),
        bad_params(
            "rho given as the string NaN",
            json!({"rho": "NaN"}),
            shape,
            Some("rho"),
        ),
        bad_params(
            "mu_init = 1e300",
            json!({"mu_init": 1e300}),
            invalid,
            Some("mu_init"),
        ),
        bad_params(
            "sigma_init = 1e300",
            json!({"sigma_init": 1e300}),
            invalid,
            Some("sigma_init"),
        ),
        bad_params(
            "sigma_init = 1e-300",
            json!({"sigma_init": 1e-300}),
            invalid,
            Some("sigma_init"),
        ),
        bad_params(
            "drift_per_day = 1e308",
            json!({"drift_per_day": 1e308}),
            invalid,
            Some("drift_per_day"),
        ),
        bad_params(
            "history_limit = 0",
            json!({"history_limit": 0}),
            invalid,
            Some("history_limit"),
        ),
        bad_params(
            "history_limit = 10^12",
            json!({"history_limit": 1_000_000_000_000_u64}),
            invalid,
            Some("history_limit"),
        ),
        bad_params(
            "history_limit = 2^63, more than the database stores",
            json!({"history_limit": 1_u64 << 63}),
            invalid,
            Some("history_limit"),
        ),
        bad_params(
            "history_limit = 2^64",
            json!({"history_limit": 18_446_744_073_709_551_616.0}),
            shape,
            Some("history_limit"),
        ),
        bad_params(
            "a fractional history_limit",
            json!({"history_limit": 2.5}),
            shape,
            Some("history_limit"),
        ),
        bad_params(
            "an unknown variant",
            json!({"variant": "elo"}),
            shape,
            Some("variant"),
        ),
        bad_params(
            "an unknown tie rule",
            json!({"ties": "maybe"}),
            shape,
            Some("ties"),
        ),
        bad_params(
            "an unknown parameter",
            json!({"alpha": 1}),
            shape,
            Some("alpha"),
        ),
        bad_params("parameters that are a list", json!([200, 35]), shape, None),
        bad_params(
            "every parameter in a list, in the struct's order",
            json!(["gaussian", 200, 35, 1, 1500, 350, 0, 500, "both"]),
            shape,
            None,
        ),
        Case::new(
            "beta = 1e308 for a pool that does not exist yet",
            put_json("/v1/pools/fresh", Some(ADMIN_KEY), &json!({"beta": 1e308})),
            StatusCode::UNPROCESSABLE_ENTITY,
            invalid,
            Some("beta"),
        ),
        Case::new(
            "sigma_init = 1e300 for a pool without rounds",
            put_json(
                &format!("/v1/pools/{OTHER}"),
                Some(ADMIN_KEY),
                &json!({"sigma_init": 1e300}),
            ),
            StatusCode::UNPROCESSABLE_ENTITY,
            invalid,
            Some("sigma_init"),
        ),
        Case::new(
            "a valid change to a pool with rounds",
            put_json(PUT_MAIN, Some(ADMIN_KEY), &json!({"beta": 300.0})),
            StatusCode::CONFLICT,
            "params_locked",
            None,
        ),
    ]
}

/// Display settings refused with 422 `code` at `field`.
fn bad_display(name: &str, body: Value, code: &'static str, field: Option<&str>) -> Case {
    Case::new(
        name,
        put_json(DISPLAY, Some(ADMIN_KEY), &body),
        StatusCode::UNPROCESSABLE_ENTITY,
        code,
        field,
    )
}

/// Keys that cannot be created (`POST /v1/keys`).
fn new_key_cases() -> Vec<Case> {
    let bad = |name: &str, body: Value, field: &str| {
        Case::new(
            name,
            post_json("/v1/keys", Some(ADMIN_KEY), &body),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_request",
            Some(field),
        )
    };
    vec![
        bad(
            "a key name with a space",
            json!({"name": "my key", "role": "read"}),
            "name",
        ),
        bad(
            "a key name of 65 characters",
            json!({"name": "k".repeat(65), "role": "read"}),
            "name",
        ),
        bad(
            "a role that does not exist",
            json!({"name": "k", "role": "owner"}),
            "role",
        ),
        bad("a key without a role", json!({"name": "k"}), "role"),
        bad(
            "a key with a chosen secret",
            json!({"name": "k", "role": "read", "key": "x"}),
            "key",
        ),
        Case::new(
            "a key named like a configured one",
            post_json(
                "/v1/keys",
                Some(ADMIN_KEY),
                &json!({"name": "ops", "role": "read"}),
            ),
            StatusCode::CONFLICT,
            "key_conflict",
            Some("name"),
        ),
        Case::new(
            "a key made with a write key",
            post_json(
                "/v1/keys",
                Some(WRITE_KEY),
                &json!({"name": "k", "role": "admin"}),
            ),
            StatusCode::FORBIDDEN,
            "forbidden",
            None,
        ),
    ]
}

/// Batch reads refused: 1,001 players or candidate matches, none, a bad id, an unknown field.
fn batch_read_cases() -> Vec<Case> {
    const RATINGS: &str = "/v1/pools/main/player-ratings";
    let players: Vec<String> = (0..1001).map(|i| format!("p{i}")).collect();
    [
        (
            "1,001 players at once",
            json!({"players": players}),
            "players",
        ),
        ("no player", json!({"players": []}), "players"),
        (
            "an id of 257 bytes",
            json!({"players": ["ann", "x".repeat(257)]}),
            "players[1]",
        ),
        (
            "an unknown field",
            json!({"players": ["ann"], "as_of": "r1"}),
            "as_of",
        ),
    ]
    .into_iter()
    .map(|(name, body, field)| {
        Case::new(
            name,
            post_json(RATINGS, None, &body),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_request",
            Some(field),
        )
    })
    .chain([Case::new(
        "1,001 candidate matches at once",
        post_json(
            "/v1/pools/main/match-qualities",
            None,
            &json!({"groups": vec![json!({"sides": [["ann"], ["bob"]]}); 1001]}),
        ),
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_prediction",
        Some("groups"),
    )])
    .collect()
}

/// Every route of the other pool that the API document lists, by every method, with a key that
/// reaches the main pool alone: each answers as a pool that does not exist, whatever its body.
fn scoped_key_cases(document: &Value) -> Vec<Case> {
    let mut cases = Vec::new();
    for (path, item) in document["paths"].as_object().expect("paths") {
        if !path.contains("{pool}") {
            continue;
        }
        let uri = path
            .replace("{pool}", OTHER)
            .replace("{player}", "ann")
            .replace("{id}", "r1")
            .replace("{number}", "1");
        for method in item.as_object().expect("a path item").keys() {
            let method: Method = method.to_uppercase().parse().expect("a method");
            let body = if method == Method::GET || method == Method::DELETE {
                Body::empty()
            } else {
                Body::from("{}")
            };
            cases.push(Case::new(
                format!("a key of the main pool alone on {method} {path}"),
                request(method, &uri, Some(MAIN_ONLY_KEY), JSON, body),
                StatusCode::NOT_FOUND,
                "pool_not_found",
                None,
            ));
        }
    }
    assert!(cases.len() >= 28, "{} routes of a pool", cases.len());
    cases
}

/// Reads of the audit log that are refused: a page size or cursor out of range, an action it
/// does not record, a malformed pool, a key that is not an admin's or none, and a key of the
/// main pool alone asking for another pool's entries (as if it did not exist).
fn audit_cases() -> Vec<Case> {
    let admin = |uri: &str| request(Method::GET, uri, Some(ADMIN_KEY), None, Body::empty());
    let bad = |name: &str, uri: &str, field: &str| {
        Case::new(
            name,
            admin(uri),
            StatusCode::BAD_REQUEST,
            "invalid_query",
            Some(field),
        )
    };
    vec![
        bad("an audit page of 0", "/v1/audit?limit=0", "limit"),
        bad("an audit page of 1,001", "/v1/audit?limit=1001", "limit"),
        bad("a negative audit cursor", "/v1/audit?before=-1", "before"),
        bad(
            "an audit cursor that is no number",
            "/v1/audit?before=x",
            "before",
        ),
        bad(
            "an action the log does not record",
            "/v1/audit?action=pool.drop",
            "action",
        ),
        bad(
            "a pool name that no pool can have",
            "/v1/audit?pool=Bad!",
            "pool",
        ),
        Case::new(
            "the audit log without a key",
            get("/v1/audit"),
            StatusCode::UNAUTHORIZED,
            "unauthenticated",
            None,
        ),
        Case::new(
            "the audit log with a write key",
            request(
                Method::GET,
                "/v1/audit",
                Some(WRITE_KEY),
                None,
                Body::empty(),
            ),
            StatusCode::FORBIDDEN,
            "forbidden",
            None,
        ),
        Case::new(
            "another pool's audit entries with a key of the main pool alone",
            request(
                Method::GET,
                &format!("/v1/audit?pool={OTHER}"),
                Some(MAIN_ONLY_KEY),
                None,
                Body::empty(),
            ),
            StatusCode::NOT_FOUND,
            "pool_not_found",
            None,
        ),
    ]
}

/// Season starts that are refused: fractions out of range or of the wrong type, a missing or
/// empty id, unknown fields, an id taken by a round, a write key, an unknown pool, and
/// leaderboards of seasons that do not exist.
fn season_cases() -> Vec<Case> {
    let seasons = "/v1/pools/main/seasons";
    let bad = |name: &str, body: Value, field: &str| {
        Case::new(
            name,
            post_json(seasons, Some(ADMIN_KEY), &body),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_season",
            Some(field),
        )
    };
    let missing = |name: &str, uri: &str, code: &'static str| {
        Case::new(name, get(uri), StatusCode::NOT_FOUND, code, None)
    };
    vec![
        bad(
            "a μ reset above 1",
            json!({"id": "s", "mu_reset": 1.5}),
            "mu_reset",
        ),
        bad(
            "a negative σ reset",
            json!({"id": "s", "sigma_reset": -0.1}),
            "sigma_reset",
        ),
        bad(
            "a σ reset as a string",
            json!({"id": "s", "sigma_reset": "0.5"}),
            "sigma_reset",
        ),
        bad(
            "a μ reset that is not a number",
            json!({"id": "s", "mu_reset": [1]}),
            "mu_reset",
        ),
        bad("a season without an id", json!({"mu_reset": 0.5}), "id"),
        bad("a season with an empty id", json!({"id": ""}), "id"),
        bad(
            "a season id of 257 bytes",
            json!({"id": "s".repeat(257)}),
            "id",
        ),
        bad(
            "a season with an unknown field",
            json!({"id": "s", "length": 30}),
            "length",
        ),
        Case::new(
            "a season that is not an object",
            post_json(seasons, Some(ADMIN_KEY), &json!(["s"])),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_season",
            None,
        ),
        Case::new(
            "a season under a round's id",
            post_json(seasons, Some(ADMIN_KEY), &json!({"id": "r1"})),
            StatusCode::CONFLICT,
            "round_conflict",
            Some("id"),
        ),
        Case::new(
            "a season started with a write key",
            post_json(seasons, Some(WRITE_KEY), &json!({"id": "s"})),
            StatusCode::FORBIDDEN,
            "forbidden",
            None,
        ),
        Case::new(
            "a season in a pool that does not exist",
            post_json(
                "/v1/pools/nowhere/seasons",
                Some(ADMIN_KEY),
                &json!({"id": "s"}),
            ),
            StatusCode::NOT_FOUND,
            "pool_not_found",
            None,
        ),
        missing(
            "the leaderboard of a season not started",
            "/v1/pools/main/seasons/2/leaderboard",
            "season_not_found",
        ),
        missing(
            "the leaderboard of season 0",
            "/v1/pools/main/seasons/0/leaderboard",
            "season_not_found",
        ),
        missing(
            "the leaderboard of season -1",
            "/v1/pools/main/seasons/-1/leaderboard",
            "season_not_found",
        ),
        missing(
            "the seasons of a pool that does not exist",
            "/v1/pools/nowhere/seasons",
            "pool_not_found",
        ),
    ]
}

/// Corrections refused before anything is stored: unknown actions and fields, missing or bad
/// ids, rounds and players the pool does not have, a taken name, bad parameters, a write key.
fn correction_cases() -> Vec<Case> {
    let corrections = "/v1/pools/main/corrections";
    let refused =
        |name: &str, body: Value, status: StatusCode, code: &'static str, field: Option<&str>| {
            Case::new(
                name,
                post_json(corrections, Some(ADMIN_KEY), &body),
                status,
                code,
                field,
            )
        };
    let invalid = |name: &str, body: Value, field: &str| {
        refused(
            name,
            body,
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_correction",
            Some(field),
        )
    };
    let missing = |name: &str, body: Value, code: &'static str| {
        refused(name, body, StatusCode::NOT_FOUND, code, None)
    };
    let delete = |name: &str,
                  uri: &str,
                  key: &str,
                  status: StatusCode,
                  code: &'static str,
                  field: Option<&str>| {
        Case::new(
            name,
            request(Method::DELETE, uri, Some(key), None, Body::empty()),
            status,
            code,
            field,
        )
    };
    vec![
        invalid(
            "a rename to a name not in NFC",
            json!({"id": "c", "action": "rename", "player": "a", "to": "e\u{301}"}),
            "to",
        ),
        invalid(
            "an unknown action",
            json!({"id": "c", "action": "undo"}),
            "action",
        ),
        invalid("no action", json!({"id": "c", "round": "r1"}), "action"),
        invalid("no id", json!({"action": "void", "round": "r1"}), "id"),
        invalid(
            "an empty id",
            json!({"id": "", "action": "void", "round": "r1"}),
            "id",
        ),
        invalid(
            "a void without a round",
            json!({"id": "c", "action": "void"}),
            "round",
        ),
        invalid(
            "a field the action does not take",
            json!({"id": "c", "action": "void", "round": "r1", "player": "ann"}),
            "player",
        ),
        invalid(
            "a rename to oneself",
            json!({"id": "c", "action": "rename", "player": "ann", "to": "ann"}),
            "to",
        ),
        invalid(
            "a rename to a player of the pool",
            json!({"id": "c", "action": "rename", "player": "ann", "to": "bob"}),
            "to",
        ),
        invalid(
            "a disqualification of a player who did not play",
            json!({"id": "c", "action": "disqualify", "round": "r2", "player": "bob"}),
            "player",
        ),
        invalid(
            "parameters out of range",
            json!({"id": "c", "action": "params", "params": {"beta": -1}}),
            "params.beta",
        ),
        invalid(
            "parameters of the wrong type",
            json!({"id": "c", "action": "params", "params": {"beta": "high"}}),
            "params.beta",
        ),
        invalid(
            "a parameter no system has",
            json!({"id": "c", "action": "params", "params": {"system": "trueskill", "bogus": 1}}),
            "params.bogus",
        ),
        invalid(
            "new parameters missing",
            json!({"id": "c", "action": "params"}),
            "params",
        ),
        invalid(
            "new parameters that are not an object",
            json!({"id": "c", "action": "params", "params": [1]}),
            "params",
        ),
        invalid(
            "stored parameters given directly",
            json!({"id": "c", "action": "void", "round": "r1", "system": {}}),
            "system",
        ),
        invalid(
            "stored parameters beside the new ones",
            json!({"id": "c", "action": "params", "params": {}, "system": {"system": "elo"}}),
            "system",
        ),
        missing(
            "a void of a round that does not exist",
            json!({"id": "c", "action": "void", "round": "r99"}),
            "round_not_found",
        ),
        missing(
            "a rename of a player who does not exist",
            json!({"id": "c", "action": "rename", "player": "zed", "to": "z"}),
            "player_not_found",
        ),
        missing(
            "a merge into a player who does not exist",
            json!({"id": "c", "action": "merge", "player": "ann", "into": "zed"}),
            "player_not_found",
        ),
        refused(
            "a correction under a round's id",
            json!({"id": "r1", "action": "void", "round": "r2"}),
            StatusCode::CONFLICT,
            "round_conflict",
            Some("id"),
        ),
        Case::new(
            "a correction with a write key",
            post_json(
                corrections,
                Some(WRITE_KEY),
                &json!({"id": "c", "action": "void", "round": "r1"}),
            ),
            StatusCode::FORBIDDEN,
            "forbidden",
            None,
        ),
        delete(
            "a void of an unknown round",
            "/v1/pools/main/rounds/r99",
            ADMIN_KEY,
            StatusCode::NOT_FOUND,
            "round_not_found",
            None,
        ),
        delete(
            "a void with a write key",
            "/v1/pools/main/rounds/r1",
            WRITE_KEY,
            StatusCode::FORBIDDEN,
            "forbidden",
            None,
        ),
        delete(
            "a void in a pool that does not exist",
            "/v1/pools/nowhere/rounds/r1",
            ADMIN_KEY,
            StatusCode::NOT_FOUND,
            "pool_not_found",
            None,
        ),
    ]
}

/// Display settings out of range or of the wrong shape, and changes nobody may make.
fn display_cases() -> Vec<Case> {
    let invalid = "invalid_display";
    let shape = "invalid_request";
    vec![
        bad_display(
            "a negative conservative k",
            json!({"conservative_k": -1}),
            invalid,
            Some("conservative_k"),
        ),
        bad_display(
            "a conservative k so large μ − kσ would overflow",
            json!({"conservative_k": 1e307}),
            invalid,
            Some("conservative_k"),
        ),
        bad_display(
            "a conservative k as text",
            json!({"conservative_k": "three"}),
            shape,
            Some("conservative_k"),
        ),
        bad_display(
            "a fixed range of width 0",
            json!({"fixed_range": {"max": 0}}),
            invalid,
            Some("fixed_range.max"),
        ),
        bad_display(
            "a negative scale",
            json!({"fixed_range": {"scale": -5}}),
            invalid,
            Some("fixed_range.scale"),
        ),
        bad_display(
            "a scale that is neither a number nor auto",
            json!({"fixed_range": {"scale": "wide"}}),
            shape,
            Some("fixed_range.scale"),
        ),
        bad_display(
            "a center that is neither a number nor auto",
            json!({"fixed_range": {"center": "middle"}}),
            shape,
            Some("fixed_range.center"),
        ),
        bad_display(
            "a max sigma of 0",
            json!({"provisional": {"max_sigma": 0}}),
            invalid,
            Some("provisional.max_sigma"),
        ),
        bad_display(
            "a negative round count",
            json!({"provisional": {"min_rounds": -1}}),
            shape,
            Some("provisional.min_rounds"),
        ),
        bad_display(
            "an unknown setting",
            json!({"conservative_k": 2, "colour": "gold"}),
            shape,
            Some("colour"),
        ),
        bad_display(
            "no leagues in a league list",
            json!({"leagues": {"tiers": []}}),
            invalid,
            Some("leagues.tiers"),
        ),
        bad_display(
            "league thresholds out of order",
            json!({"leagues": {"tiers": [{"name": "bronze"}, {"name": "silver", "threshold": 1500},
                {"name": "gold", "threshold": 1400}]}}),
            invalid,
            Some("leagues.tiers[2].threshold"),
        ),
        bad_display(
            "a league without a threshold above the lowest",
            json!({"leagues": {"tiers": [{"name": "bronze"}, {"name": "silver"}]}}),
            invalid,
            Some("leagues.tiers[1].threshold"),
        ),
        bad_display(
            "a threshold on the lowest league",
            json!({"leagues": {"tiers": [{"name": "bronze", "threshold": 0}]}}),
            invalid,
            Some("leagues.tiers[0].threshold"),
        ),
        bad_display(
            "two leagues of one name",
            json!({"leagues": {"tiers": [{"name": "gold"}, {"name": "gold", "threshold": 1}]}}),
            invalid,
            Some("leagues.tiers[1].name"),
        ),
        bad_display(
            "a league name with a space",
            json!({"leagues": {"tiers": [{"name": "Gold League"}]}}),
            invalid,
            Some("leagues.tiers[0].name"),
        ),
        bad_display(
            "a division size of 0",
            json!({"leagues": {"division_size": 0, "tiers": [{"name": "bronze"}]}}),
            invalid,
            Some("leagues.division_size"),
        ),
        bad_display(
            "ladder points moving by 0",
            json!({"leagues": {"tiers": [{"name": "bronze"}], "points": {"k": 0}}}),
            invalid,
            Some("leagues.points.k"),
        ),
        bad_display(
            "a bonus pool starting at no time",
            json!({"leagues": {"tiers": [{"name": "bronze"}],
                "points": {"bonus_per_day": 5, "bonus_since": "last monday"}}}),
            invalid,
            Some("leagues.points.bonus_since"),
        ),
        bad_display(
            "a negative league k",
            json!({"leagues": {"k": -1, "tiers": [{"name": "bronze"}]}}),
            invalid,
            Some("leagues.k"),
        ),
        bad_display(
            "a league list without its leagues",
            json!({"leagues": {"division_size": 10}}),
            shape,
            Some("leagues.tiers"),
        ),
        bad_display(
            "an unknown fixed-range setting",
            json!({"fixed_range": {"offset": 3}}),
            shape,
            Some("fixed_range.offset"),
        ),
        Case::new(
            "display settings of a pool that does not exist",
            put_json("/v1/pools/nowhere/display", Some(ADMIN_KEY), &json!({})),
            StatusCode::NOT_FOUND,
            "pool_not_found",
            None,
        ),
        Case::new(
            "display settings with a write key",
            put_json(DISPLAY, Some(WRITE_KEY), &json!({"conservative_k": 1})),
            StatusCode::FORBIDDEN,
            "forbidden",
            None,
        ),
        Case::new(
            "display settings with no key",
            put_json(DISPLAY, None, &json!({"conservative_k": 1})),
            StatusCode::UNAUTHORIZED,
            "unauthenticated",
            None,
        ),
        bad_forecast(
            "an empty waiting list",
            "/v1/pools/main/matchmaking",
            &json!({"waiting": []}),
            "invalid_matchmaking",
            "waiting",
        ),
        bad_forecast(
            "a player waiting twice",
            "/v1/pools/main/matchmaking",
            &json!({"waiting": [{"player": "ann"}, {"player": "ann"}]}),
            "invalid_matchmaking",
            "waiting[1].player",
        ),
        bad_forecast(
            "waiting players that do not make whole teams",
            "/v1/pools/main/matchmaking",
            &json!({"waiting": [{"player": "ann"}, {"player": "bob"}, {"player": "cy"}], "team_size": 2}),
            "invalid_matchmaking",
            "team_size",
        ),
        Case::new(
            "a leaderboard as of a round that does not exist",
            get(&format!("{LEADERBOARD}?as_of=nope")),
            StatusCode::NOT_FOUND,
            "round_not_found",
            None,
        ),
        bad_query(
            "a player as of a round still queued",
            "/v1/pools/main/players/ann?as_of=r4",
            "as_of",
        ),
        bad_query(
            "a leaderboard as of no round at all",
            &format!("{LEADERBOARD}?as_of="),
            "as_of",
        ),
        bad_query(
            "an established filter that is not a boolean",
            &format!("{LEADERBOARD}?established=maybe"),
            "established",
        ),
        bad_query(
            "a league the pool does not have",
            &format!("{LEADERBOARD}?league=gold"),
            "league",
        ),
        bad_query(
            "a league filter with the established filter",
            &format!("{LEADERBOARD}?league=gold&established=true"),
            "established",
        ),
    ]
}

/// Predictions and match qualities that cannot be computed.
fn forecast_cases() -> Vec<Case> {
    let entrants = |players: Value| -> Value {
        json!({"entrants": players.as_array().expect("a list").iter()
            .map(|p| json!({"players": p})).collect::<Vec<_>>()})
    };
    let prediction = "invalid_prediction";
    let shape = "invalid_request";
    vec![
        bad_forecast(
            "a prediction of no entrants",
            PREDICTIONS,
            &json!({"entrants": []}),
            prediction,
            "entrants",
        ),
        bad_forecast(
            "a prediction of one entrant",
            PREDICTIONS,
            &entrants(json!([["ann"]])),
            prediction,
            "entrants",
        ),
        bad_forecast(
            "a prediction of 1001 entrants",
            PREDICTIONS,
            &entrants(sides(1001)),
            prediction,
            "entrants",
        ),
        bad_forecast(
            "a prediction with a player in two entrants",
            PREDICTIONS,
            &entrants(json!([["ann"], ["eve", "ann"]])),
            prediction,
            "entrants[1].players",
        ),
        bad_forecast(
            "a prediction with an empty entrant",
            PREDICTIONS,
            &entrants(json!([[], ["ann"]])),
            prediction,
            "entrants[0].players",
        ),
        bad_forecast(
            "a prediction whose entrants are not a list",
            PREDICTIONS,
            &json!({"entrants": "ann,eve"}),
            shape,
            "entrants",
        ),
        bad_forecast(
            "a prediction with a numeric player",
            PREDICTIONS,
            &entrants(json!([[1], ["ann"]])),
            shape,
            "entrants[0].players[0]",
        ),
        bad_forecast(
            "a prediction with an unknown field",
            PREDICTIONS,
            &json!({"entrants": [], "seed": 1}),
            shape,
            "seed",
        ),
        bad_forecast(
            "a match of no sides",
            MATCH_QUALITY,
            &json!({"sides": []}),
            prediction,
            "sides",
        ),
        bad_forecast(
            "a match of one side",
            MATCH_QUALITY,
            &json!({"sides": [["ann", "eve"]]}),
            prediction,
            "sides",
        ),
        bad_forecast(
            "a match of 1001 sides",
            MATCH_QUALITY,
            &json!({"sides": sides(1001)}),
            prediction,
            "sides",
        ),
        bad_forecast(
            "a player on both sides",
            MATCH_QUALITY,
            &json!({"sides": [["ann"], ["ann"]]}),
            prediction,
            "sides[1]",
        ),
        bad_forecast(
            "an empty side",
            MATCH_QUALITY,
            &json!({"sides": [[], ["ann"]]}),
            prediction,
            "sides[0]",
        ),
        bad_forecast(
            "a match without sides",
            MATCH_QUALITY,
            &json!({"teams": [["ann"], ["eve"]]}),
            shape,
            "teams",
        ),
    ]
}

/// Requests without a key good enough for them.
fn key_cases() -> Vec<Case> {
    let valid = round("hostile", &["ann", "eve"]);
    let with_authorization = |value: &str| {
        let mut request = post_json(ROUNDS, None, &valid);
        request.headers_mut().insert(
            header::AUTHORIZATION,
            value.parse().expect("a valid header value"),
        );
        request
    };
    let unauthenticated = |name: &str, request: Request<Body>| {
        Case::new(
            name,
            request,
            StatusCode::UNAUTHORIZED,
            "unauthenticated",
            None,
        )
    };
    let forbidden = |name: &str, request: Request<Body>| {
        Case::new(name, request, StatusCode::FORBIDDEN, "forbidden", None)
    };
    vec![
        unauthenticated("a round without a key", post_json(ROUNDS, None, &valid)),
        unauthenticated(
            "a round with an unknown key",
            post_json(ROUNDS, Some("guess"), &valid),
        ),
        unauthenticated(
            "a round with a Basic credential",
            with_authorization("Basic d3JpdGU6c2VjcmV0"),
        ),
        unauthenticated(
            "a round with an empty bearer token",
            with_authorization("Bearer "),
        ),
        unauthenticated(
            "a round with the write key's hash as the key",
            with_authorization(&format!(
                "Bearer {}",
                mmr_service::api::auth::hash_key(WRITE_KEY)
            )),
        ),
        unauthenticated(
            "a malformed round with an unknown key",
            request(Method::POST, ROUNDS, Some("guess"), JSON, "{"),
        ),
        forbidden(
            "a round with a read key",
            post_json(ROUNDS, Some(READ_KEY), &valid),
        ),
        unauthenticated(
            "pool parameters without a key",
            put_json(PUT_MAIN, None, &json!({})),
        ),
        forbidden(
            "pool parameters with a write key",
            put_json(
                &format!("/v1/pools/{OTHER}"),
                Some(WRITE_KEY),
                &json!({"beta": 100.0}),
            ),
        ),
        forbidden(
            "a new pool with a read key",
            put_json("/v1/pools/fresh", Some(READ_KEY), &json!({})),
        ),
    ]
}

/// Batches of rounds (`POST …/round-batches`) that must store none of their rounds.
fn batch_cases() -> Vec<Case> {
    const BATCHES: &str = "/v1/pools/main/round-batches";
    let batch = |name: &str, body: Value, code: &'static str, field: Option<&str>| {
        Case::new(
            name,
            post_json(BATCHES, Some(WRITE_KEY), &body),
            StatusCode::UNPROCESSABLE_ENTITY,
            code,
            field,
        )
    };
    let good = |id: &str| round(id, &["ann", "eve"]);
    let mut zero = good("b2");
    zero["standings"][0]["rank"] = json!(0);
    let mut changed = round("r1", &["ann", "bob"]);
    changed["weight"] = json!(3.0);
    vec![
        batch(
            "a batch with a round ranked 0",
            json!({"rounds": [good("b1"), zero]}),
            "invalid_round",
            Some("rounds[1].standings[0].rank"),
        ),
        batch(
            "a batch with one id twice",
            json!({"rounds": [good("b1"), good("b2"), good("b1")]}),
            "invalid_round",
            Some("rounds[2].id"),
        ),
        batch(
            "a batch of no rounds",
            json!({"rounds": []}),
            "invalid_request",
            Some("rounds"),
        ),
        batch(
            "a batch with an unknown field",
            json!({"rounds": [good("b1")], "atomic": false}),
            "invalid_request",
            Some("atomic"),
        ),
        batch(
            "a batch sent as a bare array",
            json!([good("b1")]),
            "invalid_request",
            None,
        ),
        Case::new(
            "a batch re-posting an applied round with other content",
            post_json(
                BATCHES,
                Some(WRITE_KEY),
                &json!({"rounds": [good("b1"), changed]}),
            ),
            StatusCode::CONFLICT,
            "round_conflict",
            Some("rounds[1].id"),
        ),
        Case::new(
            "a batch cut short",
            request(
                Method::POST,
                BATCHES,
                Some(WRITE_KEY),
                JSON,
                r#"{"rounds": [{"id": "b1", "standings": ["#,
            ),
            StatusCode::BAD_REQUEST,
            "malformed_json",
            None,
        ),
        Case::new(
            "a batch for an unknown pool",
            post_json(
                "/v1/pools/nowhere/round-batches",
                Some(WRITE_KEY),
                &json!({"rounds": [good("b1")]}),
            ),
            StatusCode::NOT_FOUND,
            "pool_not_found",
            None,
        ),
    ]
}

/// The service with pool `main` holding three applied rounds (with a time, a team and a
/// weight) and one queued, and pool `other` with no rounds.
async fn populated() -> TestApp {
    let mut settings = settings(&[]);
    settings.auth.keys.push(KeySettings {
        name: "main-only".to_owned(),
        role: Role::Admin,
        sha256: hash_key(MAIN_ONLY_KEY),
        pools: Scope::of(Some(vec![POOL.to_owned()])).expect("a scope"),
    });
    let app = TestApp::with_settings(settings).await;
    app.create_pool(POOL).await;
    app.put_pool(OTHER, json!({"variant": "gaussian", "rho": "inf"}))
        .await
        .assert_status(StatusCode::CREATED, "create the other pool");
    let mut teams = round("r3", &["ann", "bob", "cy"]);
    teams["weight"] = json!(0.5);
    teams["standings"][1]["team"] = json!("red");
    teams["standings"][2]["team"] = json!("red");
    teams["standings"][2]["rank"] = json!(2);
    app.play([
        round_at("r1", "2026-01-01T00:00:00Z", &["ann", "bob", "cy", "dan"]),
        round_at("r2", "2026-01-02T00:00:00Z", &["dan", "ann", "eve"]),
        teams,
    ])
    .await;
    app.queue_round(round("r4", &["eve", "dan"])).await;
    app
}

#[tokio::test]
async fn every_hostile_request_gets_its_4xx_naming_the_problem_and_changes_nothing() {
    let app = populated().await;
    let conservative = app
        .get(&format!(
            "{LEADERBOARD}?order=conservative&established=false&limit=1"
        ))
        .await;
    let cursor = conservative.assert_status(StatusCode::OK, "a page by μ − 3σ")["next_cursor"]
        .as_str()
        .expect("a cursor to the next page")
        .to_owned();
    let document = app.get("/openapi.json").await;
    let document = document
        .assert_status(StatusCode::OK, "the API document")
        .clone();
    let before = app.snapshot().await;
    let cases: Vec<Case> = [
        body_cases(),
        round_cases(),
        path_cases(),
        query_cases(&cursor),
        params_cases(),
        forecast_cases(),
        key_cases(),
        display_cases(),
        new_key_cases(),
        season_cases(),
        correction_cases(),
        batch_cases(),
        batch_read_cases(),
        scoped_key_cases(&document),
        audit_cases(),
    ]
    .into_iter()
    .flatten()
    .collect();
    assert!(cases.len() >= 60, "{} cases", cases.len());
    // The count docs/guarantees.md gives: `cargo test --test api hostile -- --nocapture`.
    println!("{} hostile requests", cases.len());
    for case in cases {
        let context = format!(
            "{} {}: {}",
            case.request.method(),
            case.request.uri(),
            case.name
        );
        let response = app.send_request(case.request).await;
        response.assert_error(case.status, case.code, case.field.as_deref(), &context);
        app.snapshot().await.assert_same_as(&before, &context);
    }
    app.post_round(POOL, round("r5", &["ann", "eve"]))
        .await
        .assert_status(
            StatusCode::ACCEPTED,
            "a valid round is still taken afterwards",
        );
}

#[tokio::test]
async fn sql_and_path_looking_ids_are_stored_and_read_back_verbatim() {
    let app = TestApp::new().await;
    app.create_pool(POOL).await;
    let (round_id, players) = (
        "'; DROP TABLE rounds;--",
        [
            "../../etc/passwd",
            "a/b",
            "%2F",
            "Robert'); DROP TABLE players;--",
        ],
    );
    app.play([round(round_id, &players)]).await;
    let status = app
        .get("/v1/pools/main/rounds/%27%3B%20DROP%20TABLE%20rounds%3B--")
        .await;
    assert_eq!(
        status.assert_status(StatusCode::OK, "the round")["status"],
        "applied"
    );
    for (player, path) in players.iter().zip([
        "..%2F..%2Fetc%2Fpasswd",
        "a%2Fb",
        "%252F",
        "Robert%27%29%3B%20DROP%20TABLE%20players%3B--",
    ]) {
        let response = app.get(&format!("/v1/pools/main/players/{path}")).await;
        assert_eq!(
            response.assert_status(StatusCode::OK, player)["player"],
            *player
        );
    }
    assert_eq!(
        app.pool_info(POOL).await["players"],
        players.len(),
        "every table is still there and counted"
    );
}

#[tokio::test]
async fn unknown_query_parameters_are_ignored() {
    let app = populated().await;
    let plain = app.get(&format!("{LEADERBOARD}?limit=2")).await;
    let extra = app
        .get(&format!("{LEADERBOARD}?limit=2&colour=red&limit_=9"))
        .await;
    assert_eq!(
        extra.assert_status(StatusCode::OK, "with unknown parameters"),
        plain.assert_status(StatusCode::OK, "without")
    );
}

#[tokio::test]
async fn the_largest_rank_a_database_stores_is_accepted_and_applied() {
    let app = TestApp::new().await;
    app.create_pool(POOL).await;
    let mut last = round("last", &["ann", "eve"]);
    last["standings"][1]["rank"] = json!(i64::MAX);
    app.play([last]).await;
    let status = app.get("/v1/pools/main/rounds/last").await;
    let body = status.assert_status(StatusCode::OK, "the round");
    assert_eq!(body["status"], "applied", "{body:#}");
    assert_eq!(body["results"][1]["rank"], json!(i64::MAX));
}

#[tokio::test]
async fn a_player_on_two_sides_is_reported_by_side() {
    let app = populated().await;
    let response = app
        .post(
            MATCH_QUALITY,
            None,
            json!({"sides": [["ann"], ["eve", "ann"]]}),
        )
        .await;
    response.assert_error(
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_prediction",
        Some("sides[1]"),
        "ann on both sides",
    );
    assert_eq!(
        response.body["error"]["message"],
        "lists `ann`, who is already in sides[0]"
    );
}
