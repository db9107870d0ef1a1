#!/usr/bin/env python3
"""Writes a synthetic history of rounds (our JSON Lines format) to stdout, for benchmarks.

    tools/synthetic-rounds.py ROUNDS ENTRANTS PLAYERS [SEED]

Each player has a hidden skill (normal, sd 400) that drifts a little between rounds; each round
draws ENTRANTS distinct players out of PLAYERS and ranks them by skill plus logistic noise
(scale 200). Deterministic for a given seed.
"""
import json
import math
import random
import sys


def main():
    rounds, entrants, players = (int(a) for a in sys.argv[1:4])
    rng = random.Random(int(sys.argv[4]) if len(sys.argv) > 4 else 1)
    skill = [rng.gauss(0.0, 400.0) for _ in range(players)]
    out = sys.stdout
    for r in range(rounds):
        field = rng.sample(range(players), entrants)
        scored = []
        for p in field:
            skill[p] += rng.gauss(0.0, 10.0)
            u = min(max(rng.random(), 1e-12), 1 - 1e-12)
            scored.append((skill[p] + 200.0 * math.log(u / (1 - u)), p))
        scored.sort(reverse=True)
        standings = [{"player": f"p{p}", "rank": i + 1} for i, (_, p) in enumerate(scored)]
        out.write(json.dumps({"id": f"synthetic-{r}", "standings": standings}) + "\n")


if __name__ == "__main__":
    main()
