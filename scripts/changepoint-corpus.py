#!/usr/bin/env python3
"""A synthetic corpus of nightly histories with known steps, for scoring
change-point detection (scripts/score-changepoints.py).

Each series is one value a night (a run's median, in ns), with log-normal
noise at a CV of 1-5 %, of one of four kinds, a quarter each: plain;
bimodal (each run lands on one of two levels 8 % either side of the
series' level, as unpinned cross-CPU wake-ups do on the development VM);
outliers (a run in 25 is x1.5); drift (+0.05 % a run). Half the series are
flat, half have 1-3 steps of +2, +5, +10 or -5 %, at least 8 runs apart
and from either end. Each run also carries what osbench knows of it: the
relative half-width of its median's interval and whether its samples fell
in two clusters. Left out: anything measured; seeds are our own.

Usage: changepoint-corpus.py [--series N] [--seed S] [--min-runs A] [--max-runs B] > corpus.json
"""

import argparse
import json
import math
import random

KINDS = ["plain", "bimodal", "outliers", "drift"]
STEPS = [0.02, 0.05, 0.10, -0.05]
GAP = 8


def step_positions(rng, n, count):
    """`count` indices at least GAP apart and from either end, or fewer if they do not fit."""
    for _ in range(200):
        picks = sorted(rng.sample(range(GAP, n - GAP + 1), count))
        if all(b - a >= GAP for a, b in zip(picks, picks[1:])):
            return picks
    return step_positions(rng, n, count - 1) if count > 1 else []


def series(rng, index, kind, stepped, min_runs, max_runs):
    n = rng.randint(min_runs, max_runs)
    cv = rng.uniform(0.01, 0.05)
    steps = step_positions(rng, n, rng.randint(1, 3)) if stepped else []
    sizes = [rng.choice(STEPS) for _ in steps]
    sigma = math.sqrt(math.log(1 + cv * cv))
    level, values, spread, two_clusters = 100.0, [], [], []
    for i in range(n):
        for at, size in zip(steps, sizes):
            if i == at:
                level *= 1 + size
        value = level * (1 + 0.0005 * i if kind == "drift" else 1.0)
        bimodal = kind == "bimodal"
        if bimodal:
            value *= rng.choice([0.92, 1.08])
        if kind == "outliers" and rng.random() < 0.04:
            value *= 1.5
        value *= math.exp(rng.gauss(-sigma * sigma / 2, sigma))
        values.append(value)
        # A run's own interval is narrower than the night-to-night spread; a
        # run whose samples fell in two clusters has one as wide as the gap.
        spread.append(0.08 if bimodal else cv * rng.uniform(0.3, 0.6))
        two_clusters.append(bimodal)
    return {
        "name": f"s{index:03}-{kind}-{'steps' if stepped else 'flat'}",
        "kind": kind,
        "cv": round(cv, 4),
        "steps": steps,
        "sizes": sizes,
        "values": [round(v, 4) for v in values],
        "spread": [round(s, 4) for s in spread],
        "two_clusters": two_clusters,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--series", type=int, default=64)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--min-runs", type=int, default=40)
    parser.add_argument("--max-runs", type=int, default=120)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    out = []
    for i in range(args.series):
        kind = KINDS[i % 4]
        stepped = (i // 4) % 2 == 1
        out.append(series(rng, i, kind, stepped, args.min_runs, args.max_runs))
    json.dump({"seed": args.seed, "series": out}, __import__("sys").stdout, indent=None)


if __name__ == "__main__":
    main()
