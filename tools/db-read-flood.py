#!/usr/bin/env python3
"""Reads of the database against writes: how long rounds take to be acknowledged and applied
while many connections read a round's results over and over (BENCHMARKS.md, "Hardening
bounds"). Python's standard library only.

It serves BINARY on a fresh Postgres database (or a SQLite file), stores the first 900 rounds
of ../shared/data/ctftime in batches and waits until they are applied, then opens CONNECTIONS
connections spread over ADDRESSES loopback addresses (127.0.1.10, …) that each read the first
page of the largest of those rounds again and again for --seconds, posts the 90 rounds left
one at a time while they do, and waits until the last is applied (read from the pool's
snapshot, a player of that round, so the wait itself reads no database). It prints the POSTs'
latencies, how long until the last round was applied, the readers' answers, and the worker's
commit times of those 90 rounds from the service's log. `--connections 0` measures the same
without readers.

    tools/db-read-flood.py --binary target/release/mmr-service --connections 256 --addresses 16
"""

import argparse
import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse

from served import Service

POOL = "ctf"
PORT = 8097
STORED = 900


async def read_loop(path, address, until, answers):
    """One connection from `address`: GET `path` over and over, keep-alive, until `until`."""
    while time.time() < until:
        try:
            reader, writer = await asyncio.open_connection(
                "127.0.0.1", PORT, local_addr=(address, 0))
            while time.time() < until:
                writer.write(f"GET {path} HTTP/1.1\r\nHost: flood\r\n\r\n".encode())
                await writer.drain()
                status = int((await reader.readline()).split()[1])
                length = 0
                while (line := await reader.readline()) not in (b"\r\n", b""):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                await reader.readexactly(length)
                answers[status] = answers.get(status, 0) + 1
        except (OSError, asyncio.IncompleteReadError, IndexError, ValueError) as error:
            kind = type(error).__name__
            answers[kind] = answers.get(kind, 0) + 1
            await asyncio.sleep(0.05)


def flood(path, connections, addresses, seconds, answers):
    until = time.time() + seconds

    async def all_of_them():
        await asyncio.gather(*(
            read_loop(path, f"127.0.1.{10 + c % addresses}", until, answers)
            for c in range(connections)))

    asyncio.run(all_of_them())


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--binary", required=True)
    parser.add_argument("--database-url", default="postgres://postgres@127.0.0.1:5432/mmr_flood",
                        help="a Postgres database, or sqlite://PATH, to drop and create")
    parser.add_argument("--connections", type=int, default=256)
    parser.add_argument("--addresses", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=20)
    args = parser.parse_args()

    here = os.path.dirname(os.path.abspath(__file__))
    data = os.path.join(here, "..", "..", "shared", "data", "ctftime", "rounds.jsonl")
    if not os.path.exists(data):
        sys.exit(f"SKIPPED: {data} is absent")
    rounds = [json.loads(line) for line in open(data) if line.strip()]

    url = args.database_url
    if url.startswith("postgres"):
        name = urllib.parse.urlparse(url).path.lstrip("/")
        for sql in (f'DROP DATABASE IF EXISTS "{name}"', f'CREATE DATABASE "{name}"'):
            subprocess.run(["psql", "-q", "-h", "127.0.0.1", "-U", "postgres", "-c", sql],
                           check=True, capture_output=True)
    else:
        path = url.removeprefix("sqlite://")
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(path + suffix):
                os.remove(path + suffix)
    with Service(args.binary, PORT, url) as service:
        request = service.request
        assert request("PUT", f"/v1/pools/{POOL}", {})[0] in (200, 201)
        for i in range(0, STORED, 100):
            status, body = request("POST", f"/v1/pools/{POOL}/round-batches",
                                   {"rounds": rounds[i:min(i + 100, STORED)]})
            assert status in (200, 202), (status, body[:300])
        while json.loads(request("GET", f"/v1/pools/{POOL}")[1])["rounds_queued"]:
            time.sleep(0.2)

        largest = max(rounds[:STORED], key=lambda r: len(r["standings"]))
        answers = {}
        readers = None
        if args.connections:
            path = f"/v1/pools/{POOL}/rounds/{urllib.parse.quote(largest['id'])}?limit=1000"
            readers = threading.Thread(target=flood, args=(
                path, args.connections, args.addresses, args.seconds, answers))
            readers.start()
            time.sleep(2)
        latencies = []
        started = time.time()
        for r in rounds[STORED:]:
            sent = time.time()
            status, body = request("POST", f"/v1/pools/{POOL}/rounds", r)
            assert status == 202, (status, body[:300])
            latencies.append(time.time() - sent)
        last = rounds[-1]
        player = urllib.parse.quote(last["standings"][0]["player"], safe="")
        while True:
            status, body = request("GET", f"/v1/pools/{POOL}/players/{player}")
            if status == 200 and json.loads(body)["last_round"]["id"] == last["id"]:
                break
            time.sleep(0.02)
        applied = time.time() - started
        if readers:
            readers.join()

    latencies.sort()
    commits = sorted(
        float(m.group(2)) for m in re.finditer(
            r"round\.first=(\d+).*?commit_ms=([\d.]+)", open(service.log_path).read())
        if int(m.group(1)) > STORED)
    print(f"{args.connections} reading connections from {args.addresses} addresses; "
          f"{len(latencies)} rounds posted: POST p50 {statistics.median(latencies) * 1000:.0f} ms, "
          f"max {latencies[-1] * 1000:.0f} ms; the last applied {applied:.2f} s after the first "
          f"POST; {len(commits)} commits: median {statistics.median(commits):.0f} ms, "
          f"max {commits[-1]:.0f} ms; reads by answer {answers}")


if __name__ == "__main__":
    main()
