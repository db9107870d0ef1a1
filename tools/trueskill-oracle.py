"""Writes src/engine/tests/fixtures/trueskill-sublee.json: a seeded history of free-for-all and
team rounds with many ties, and the ratings the Python package `trueskill` 0.4.5 (sublee) gives
it with its `mpmath` backend (full-precision normal functions; its default backend's `erfc`
approximation is off by about 1e-7). Each round is rated twice, once with every tie group
listed by team name (the order the service chains tied entrants in) and once with each tie
group reversed, so the fixture shows how much the chain's order alone moves a rating.

    pip install trueskill==0.4.5 mpmath
    python3 tools/trueskill-oracle.py > src/engine/tests/fixtures/trueskill-sublee.json

`cargo test` reads only the JSON; Python is needed to regenerate it, never to test.
"""

import json
import random

import trueskill

ROUNDS = 30
PLAYERS = 40


def history(rng):
    rounds = []
    for r in range(ROUNDS):
        players = rng.sample(range(PLAYERS), rng.randint(4, 12))
        size = 1 if r % 3 else rng.randint(1, 3)
        teams = [players[i:i + size] for i in range(0, len(players), size)]
        top = max(2, len(teams) // 2)
        rounds.append([
            {"team": f"r{r}t{t:02}", "rank": rng.randint(1, top), "players": [f"p{p:02}" for p in team]}
            for t, team in enumerate(teams)
        ])
    return rounds


def rate(env, rounds, reverse_ties):
    ratings = {}
    for teams in rounds:
        # The package sorts by rank, stably: tied teams are chained in the order listed.
        listed = sorted(teams, key=lambda t: (t["rank"], t["team"]))
        if reverse_ties:
            listed = sorted(reversed(listed), key=lambda t: t["rank"])
        groups = [tuple(ratings.get(p, env.create_rating()) for p in t["players"]) for t in listed]
        rated = env.rate(groups, ranks=[t["rank"] for t in listed])
        for team, group in zip(listed, rated):
            for p, rating in zip(team["players"], group):
                ratings[p] = rating
    return {p: [float(r.mu), float(r.sigma)] for p, r in sorted(ratings.items())}


def main():
    env = trueskill.TrueSkill(draw_probability=0.1, backend="mpmath")
    rounds = history(random.Random(48))
    fields = {
        "oracle": f"trueskill {trueskill.__version__}, mpmath backend, draw_probability 0.1",
        "rounds": rounds,
        "ties_by_name": rate(env, rounds, False),
        "ties_reversed": rate(env, rounds, True),
    }
    # One field, round or player a line: the file diffs readably when regenerated.
    lines = []
    for key, value in fields.items():
        if isinstance(value, list):
            inner = ",\n".join(json.dumps(v) for v in value)
            lines.append(f"{json.dumps(key)}: [\n{inner}\n]")
        elif isinstance(value, dict):
            inner = ",\n".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in value.items())
            lines.append(f"{json.dumps(key)}: {{\n{inner}\n}}")
        else:
            lines.append(f"{json.dumps(key)}: {json.dumps(value)}")
    print("{\n" + ",\n".join(lines) + "\n}")


main()
