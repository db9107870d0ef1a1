#!/usr/bin/env python3
"""Connections opened without end from one address or many, against a platform posting
rounds: whether the platform's rounds are still acknowledged and applied (BENCHMARKS.md,
"Hardening bounds"). Python's standard library only; synthetic
rounds, no data set needed.

It serves BINARY on a fresh SQLite file, its soft limit on open files at --service-files
(systemd's default, 1024) and its hard limit at the client's, and creates a pool. Then for
--seconds a client at 127.0.1.2 (or at --addresses of them: 127.0.1.2, 127.0.1.3, ...) opens
connections that send nothing, as fast as it can, up to --connections, opening another
whenever the service closes one, while a platform at 127.0.0.1 posts a round of 10 players
every 200 ms, each on a new connection, with a 5 s timeout. Afterwards the flood stops and it
waits up to 30 s for the pool to apply what was acknowledged. It prints the most connections
the flood had open at once (by its own count), the platform's POSTs by outcome with their
latencies, and the rounds applied. The client needs a limit on open files above --connections
(`ulimit -n`). The service listens on 127.0.0.1:8098.

    tools/connection-flood.py --binary target/release/mmr-service --connections 19000
"""

import argparse
import asyncio
import json
import resource
import statistics
import threading
import time

from served import Service

POOL = "main"
PORT = 8098


def flood(connections, addresses, until, held_most):
    """Opens connections from `addresses` up to `connections`, reopening closed ones."""

    async def one(slots, connecting, address):
        while time.time() < until:
            try:
                # A few hundred connecting at once: thousands overflow the listener's backlog,
                # and every one of them then waits for its SYN to be sent again.
                async with connecting:
                    reader, writer = await asyncio.wait_for(asyncio.open_connection(
                        "127.0.0.1", PORT, local_addr=(address, 0)), timeout=1)
            except (OSError, asyncio.TimeoutError):
                await asyncio.sleep(0.05)
                continue
            slots[0] += 1
            held_most[0] = max(held_most[0], slots[0])
            try:
                await asyncio.wait_for(reader.read(1), timeout=max(until - time.time(), 0.01))
            except (OSError, asyncio.TimeoutError):
                pass
            slots[0] -= 1
            writer.close()

    async def all_of_them():
        slots, connecting = [0], asyncio.Semaphore(256)
        await asyncio.gather(*(one(slots, connecting, addresses[i % len(addresses)])
                               for i in range(connections)))

    asyncio.run(all_of_them())


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--binary", required=True)
    parser.add_argument("--connections", type=int, default=19000)
    parser.add_argument("--addresses", type=int, default=1,
                        help="loopback addresses the flood comes from (127.0.1.2, …)")
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--service-files", type=int, default=1024,
                        help="the service's soft limit on open files (systemd's default: 1024)")
    args = parser.parse_args()
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))

    with Service(args.binary, PORT, preexec_fn=lambda: resource.setrlimit(
            resource.RLIMIT_NOFILE, (args.service_files, hard))) as service:
        request = service.request
        assert request("PUT", f"/v1/pools/{POOL}", {})[0] in (200, 201)

        held_most = [0]
        until = time.time() + args.seconds
        addresses = [f"127.0.1.{2 + i}" for i in range(args.addresses)]
        flooder = threading.Thread(target=flood,
                                   args=(args.connections, addresses, until, held_most))
        flooder.start()
        time.sleep(2)
        outcomes, latencies, accepted = {}, [], 0
        n = 0
        while time.time() < until - 1:
            body = {"id": f"r{n}", "standings": [
                {"player": f"p{(n * 3 + i) % 40}", "rank": i + 1} for i in range(10)]}
            sent = time.time()
            try:
                status, _ = request("POST", f"/v1/pools/{POOL}/rounds", body, timeout=5)
                outcome = str(status)
                accepted += status == 202
            except OSError as error:
                outcome = type(getattr(error, "reason", error)).__name__
            latencies.append(time.time() - sent)
            outcomes[outcome] = outcomes.get(outcome, 0) + 1
            n += 1
            time.sleep(max(0.0, 0.2 - (time.time() - sent)))
        flooder.join()
        applied = None
        for _ in range(300):
            try:
                applied = json.loads(request("GET", f"/v1/pools/{POOL}")[1])["rounds_applied"]
                if applied >= accepted:
                    break
            except OSError:
                pass
            time.sleep(0.1)

    if not latencies:
        raise SystemExit("the platform posted nothing: was --seconds under 3?")
    latencies.sort()
    print(f"flood from {args.addresses} address(es): at most {held_most[0]} connections "
          f"held at once; platform: {n} POSTs by outcome {outcomes}, latency p50 "
          f"{statistics.median(latencies) * 1000:.0f} ms, max {latencies[-1] * 1000:.0f} ms; "
          f"{accepted} acknowledged, {applied} applied once the flood stopped")


if __name__ == "__main__":
    main()
