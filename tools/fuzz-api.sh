#!/usr/bin/env bash
# API fuzzing: schemathesis generates requests from the OpenAPI document of a live
# `mmr-service serve` (its own SQLite database in a temporary directory, an admin key, a pool
# with two applied rounds) and checks every answer: no 5xx, and a status, content type,
# headers and body that the document describes for that route. Bounded by the number of
# examples per route: 40 s to 2 min on the 2-core machines it has run on, with the default 100.
#
#   tools/fuzz-api.sh                         # a random seed, printed
#   FUZZ_SEED=1234 tools/fuzz-api.sh          # replay a run
#   FUZZ_MAX_EXAMPLES=300 tools/fuzz-api.sh   # more examples per route (default 100)
#   MMR_SERVICE_BINARY=target/debug/mmr-service tools/fuzz-api.sh   # a binary already built
#
# schemathesis is installed (pinned) into a virtualenv on first use, kept in the user's cache
# directory so that later runs (CI's fresh clones on the same machine included) reuse it.
set -euo pipefail
cd "$(dirname "$0")/.."

SCHEMATHESIS_VERSION=4.32.5
venv="${XDG_CACHE_HOME:-$HOME/.cache}/mmr-service/schemathesis-venv"
if [ "$("$venv/bin/schemathesis" --version 2>/dev/null)" != "schemathesis, version $SCHEMATHESIS_VERSION" ]; then
    rm -rf "$venv"
    mkdir -p "$(dirname "$venv")"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet "schemathesis==$SCHEMATHESIS_VERSION"
fi

# CI passes the binary `cargo test` built. `cargo build` would build it again: the tests'
# dependencies turn on features of shared crates (syn's among them) that a plain build leaves
# off, so after `cargo test` it compiled 68 crates again, the service's included (3 min 8 s
# here, `cargo build --bin mmr-service`).
binary=${MMR_SERVICE_BINARY:-}
if [ -z "$binary" ]; then
    cargo build --quiet --bin mmr-service
    binary=target/debug/mmr-service
fi

dir=$(mktemp -d)
server=
cleanup() {
    if [ -n "$server" ]; then
        kill "$server" 2>/dev/null || true
        wait "$server" 2>/dev/null || true
    fi
    rm -rf "$dir"
}
trap cleanup EXIT

key="fuzz-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
cat >"$dir/mmr.toml" <<EOF
[database]
url = "sqlite://$dir/mmr.sqlite3"

[queue]
poll_interval_ms = 100

# The handlers are fuzzed, not the limiter (tests/api/security.rs tests it).
[rate_limit]
writes_per_second = 0

[[auth.keys]]
name = "fuzz"
role = "admin"
sha256 = "$("$binary" hash-key "$key")"
EOF

RUST_LOG=warn,mmr_service=info "$binary" serve --config "$dir/mmr.toml" --addr 127.0.0.1:0 \
    2>"$dir/service.log" &
server=$!
addr=
for _ in $(seq 600); do
    addr=$(sed -n 's/.*serving addr=\([0-9.:]*\).*/\1/p' "$dir/service.log")
    [ -n "$addr" ] && break
    kill -0 "$server" 2>/dev/null || { cat "$dir/service.log"; echo "the service did not start"; exit 1; }
    sleep 0.1
done
[ -n "$addr" ] || { cat "$dir/service.log"; echo "the service did not listen in time"; exit 1; }
base="http://$addr"

send() { # METHOD PATH BODY
    curl -fsS -o /dev/null -X "$1" "$base$2" -H "Authorization: Bearer $key" \
        -H 'Content-Type: application/json' -d "$3"
}
send PUT /v1/pools/main '{}'
send POST /v1/pools/main/rounds \
    '{"id": "r1", "standings": [{"player": "ann", "rank": 1}, {"player": "bob", "rank": 2}]}'
send POST /v1/pools/main/rounds \
    '{"id": "r2", "time": "2026-01-01T00:00:00Z", "standings": [{"player": "cy", "rank": 1}, {"player": "ann", "rank": 2}, {"player": "bob", "rank": 2}]}'

seed=${FUZZ_SEED:-$((RANDOM * 32768 + RANDOM))}
echo "schemathesis $SCHEMATHESIS_VERSION against $base (seed $seed; FUZZ_SEED=$seed replays it)"
start=$SECONDS
status=0
# The change feed never ends an answer, so every request to it would wait out the timeout:
# tests/api/events.rs covers it instead (and its bad starting points are in the hostile table).
"$venv/bin/schemathesis" --no-color --config-file tools/schemathesis.toml run "$base/openapi.json" \
    --exclude-path '/v1/pools/{pool}/events' \
    --header "Authorization: Bearer $key" \
    --checks not_a_server_error,status_code_conformance,content_type_conformance,response_headers_conformance,response_schema_conformance \
    --max-examples "${FUZZ_MAX_EXAMPLES:-100}" \
    --seed "$seed" \
    --workers 2 \
    --request-timeout 30 || status=$?

if ! kill -0 "$server" 2>/dev/null; then
    echo "the service died during the run:"
    cat "$dir/service.log"
    exit 1
fi
if grep -q "panicked" "$dir/service.log"; then
    echo "a handler panicked:"
    grep -B2 -A5 "panicked" "$dir/service.log"
    exit 1
fi
echo "fuzzing took $((SECONDS - start)) s"
exit "$status"
