#!/usr/bin/env bash
# The RustSec advisory check of `cargo deny`, against the live database when it can be fetched
# and otherwise against the snapshot in ../shared/advisory-db (machines that cannot reach
# GitHub, ours and our CI's). cargo-deny reads its database as a git clone, so the snapshot is
# committed into a throwaway repository where cargo-deny looks for its clone, under a copy of
# deny.toml whose `db-path` is a temporary directory, and the check runs offline. Prints which
# database was used and its date, so that a green run never hides how old the database was.
#
#   tools/advisories.sh            check this project (exit 0: no advisory applies)
#   tools/advisories.sh --canary   check tools/advisory-canary, whose lockfile pins a crate
#                                  with a published advisory: exit 0 only if the check FAILS,
#                                  which shows the wiring catches what it should
#
# Exit 2: no database at all (neither the live one nor the snapshot).
set -euo pipefail
cd "$(dirname "$0")/.."

manifest=Cargo.toml
canary=false
if [ "${1:-}" = "--canary" ]; then
    manifest=tools/advisory-canary/Cargo.toml
    canary=true
    # Its one dependency must be in cargo's cache for an offline check (crates.io answers).
    cargo fetch --manifest-path "$manifest" --locked
fi
snapshot=../shared/advisory-db
# The advisory that tools/advisory-canary's lockfile (smallvec 1.6.0) must trip.
CANARY_ADVISORY=RUSTSEC-2021-0003

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
config="$work/deny.toml"

if cargo deny --manifest-path "$manifest" fetch db >/dev/null 2>&1; then
    echo "advisories: the live RustSec database, fetched $(date -u +%Y-%m-%dT%H:%MZ)"
    cp deny.toml "$config"
    args=(--offline)
elif [ -f "$snapshot/SNAPSHOT.txt" ]; then
    described=$(grep -o 'commit [0-9a-f]*, [0-9-]*' "$snapshot/SNAPSHOT.txt" || true)
    echo "advisories: the snapshot in $snapshot (${described:-undated}); GitHub cannot be reached"
    # deny.toml's [advisories] table, with the database kept in the temporary directory.
    sed "s|^\[advisories\]$|[advisories]\ndb-path = \"$work/dbs\"|" deny.toml >"$config"
    # Where cargo-deny looks for its clone (a folder named after the database's URL): asked of
    # cargo-deny itself, whose offline check names the folder it cannot find.
    probe=$(cargo deny --manifest-path "$manifest" --config "$config" --offline \
        check advisories 2>&1 || true)
    clone=$(printf '%s\n' "$probe" | grep -o "cannot change to '[^']*'" | head -n 1 | cut -d"'" -f2 || true)
    if [ -z "$clone" ]; then
        printf 'advisories: cannot tell where cargo-deny keeps its database:\n%s\n' "$probe" >&2
        exit 1
    fi
    mkdir -p "$clone"
    cp -r "$snapshot/." "$clone/"
    git -C "$clone" init -q -b main
    git -C "$clone" add -A
    git -C "$clone" -c user.name=snapshot -c user.email=snapshot@localhost \
        commit -q -m "RustSec advisory database snapshot: ${described:-undated}"
    args=(--offline)
else
    echo "BLOCKED: cargo deny check advisories (no RustSec database: GitHub cannot be reached and $snapshot is absent)"
    exit 2
fi

status=0
if $canary; then
    # The canary's report is meant to fail; it is kept out of the log unless it surprises.
    cargo deny --manifest-path "$manifest" --config "$config" "${args[@]}" check advisories \
        >"$work/report" 2>&1 || status=$?
else
    cargo deny --manifest-path "$manifest" --config "$config" "${args[@]}" check advisories \
        2>&1 | tee "$work/report" || status=${PIPESTATUS[0]}
fi
if $canary; then
    # Failing is not enough: it must fail on the canary's advisory.
    if [ "$status" -eq 0 ] || ! grep -q "$CANARY_ADVISORY" "$work/report"; then
        cat "$work/report" >&2
        echo "advisories: the canary's $CANARY_ADVISORY was NOT reported: the check is miswired" >&2
        exit 1
    fi
    echo "advisories: the canary's $CANARY_ADVISORY was caught, as it should be"
    exit 0
fi
exit "$status"
