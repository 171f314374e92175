#!/usr/bin/env python3
"""Scores osbench's change-point detection against Apache Otava's on a
synthetic corpus with known steps (scripts/changepoint-corpus.py).

Both are scored as Otava's ICPE 2023 paper scores: a detection is a hit
when it lies within 2 runs of a true step (each step matched once).
On the whole series: precision, recall, F1 and false alerts per flat
series (drift counts as flat: a drift reported as a step is a false
alert), by noise kind and by step size. Fed one run a night, as a nightly
job is: what each would have announced (osbench: confirmed change points,
each once per identity; Otava: every change point the first night it is
reported, a point within 2 runs of one reported before in the same
direction being the same one), the share of announcements with no true
step near them, the announcement ids per step found, and the delay — runs
of the new level seen when a step is first announced.

osbench runs as `cargo run --release --example changepoint_feed` (or
--feed BIN); Otava is imported from the Python running this script
(`pip install apache-otava`), with its defaults (window 50, p <= 0.001).

Usage: score-changepoints.py [--corpus FILE | --series N --seed S]
           [--feed BIN] [--no-otava] [--markdown OUT] [--json OUT]
"""

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HIT = 2


def corpus(args):
    if args.corpus:
        return json.loads(Path(args.corpus).read_text())
    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts/changepoint-corpus.py"), "--series",
         str(args.series), "--seed", str(args.seed), "--min-runs", str(args.min_runs),
         "--max-runs", str(args.max_runs)],
        check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def osbench(data, feed_bin, nightly):
    cmd = [feed_bin] if feed_bin else [
        "cargo", "run", "--quiet", "--release", "--example", "changepoint_feed", "--"]
    if not nightly:
        cmd.append("--final-only")
    out = subprocess.run(cmd, input=json.dumps(data), check=True, capture_output=True,
                         text=True, cwd=ROOT).stdout
    return {r["name"]: r for r in json.loads(out)}


def otava_points(values):
    from otava.analysis import compute_change_points
    try:
        points, _ = compute_change_points([float(v) for v in values], window_len=50,
                                          max_pvalue=0.001, min_magnitude=0.0)
    except ValueError:
        # Otava 0.8 raises where a side of a split is left empty: no change point.
        return []
    return [(p.index, p.stats.forward_rel_change() > 0) for p in points]


def otava(data, nightly):
    results = {}
    for s in data["series"]:
        values = s["values"]
        final = otava_points(values)
        announced, known = [], []
        if nightly:
            for night in range(8, len(values) + 1):
                for index, slower in otava_points(values[:night]):
                    same = [k for k in known if k[1] == slower and abs(k[0] - index) <= HIT]
                    if same:
                        known[known.index(same[0])] = (index, slower)
                        continue
                    known.append((index, slower))
                    announced.append({"night": night, "id": len(known), "index": index,
                                      "slower": slower})
        results[s["name"]] = {
            "points": [{"index": i, "confirmed": True} for i, _ in final],
            "drifts": [],
            "announced": announced,
        }
    return results


def matches(found, truth):
    """Pairs (found, true) within HIT runs, each used once, nearest first."""
    pairs = sorted((abs(f - t), f, t) for f in found for t in truth if abs(f - t) <= HIT)
    used_f, used_t, out = set(), set(), []
    for _, f, t in pairs:
        if f not in used_f and t not in used_t:
            used_f.add(f)
            used_t.add(t)
            out.append((f, t))
    return out


def tally(rows):
    tp = sum(r["tp"] for r in rows)
    found = sum(r["found"] for r in rows)
    truth = sum(r["truth"] for r in rows)
    precision = tp / found if found else float("nan")
    recall = tp / truth if truth else float("nan")
    f1 = 2 * precision * recall / (precision + recall) if found and truth and tp else 0.0
    flat = [r for r in rows if r["truth"] == 0]
    return {
        "precision": precision, "recall": recall, "f1": f1,
        "false_per_flat": sum(r["found"] for r in flat) / len(flat) if flat else float("nan"),
        "drifts_reported_flat": sum(r["drifts"] for r in flat) / len(flat) if flat else float("nan"),
    }


def score(data, results):
    rows, feed = [], {"announced": 0, "spurious": 0, "delays": [], "ids": [], "missed": 0,
                      "shown_delays": []}
    by_size = {}
    for s in data["series"]:
        r = results[s["name"]]
        found = [p["index"] for p in r["points"] if p["confirmed"]]
        hits = matches(found, s["steps"])
        rows.append({"kind": s["kind"], "tp": len(hits), "found": len(found),
                     "truth": len(s["steps"]), "drifts": len(r["drifts"])})
        hit_steps = {t for _, t in hits}
        for step, size in zip(s["steps"], s["sizes"]):
            by_size.setdefault(size, [0, 0])
            by_size[size][0] += step in hit_steps
            by_size[size][1] += 1
        for a in r["announced"]:
            feed["announced"] += 1
            feed["spurious"] += not any(abs(a["index"] - t) <= HIT for t in s["steps"])
        for step in s["steps"]:
            near = [a for a in r["announced"] if abs(a["index"] - step) <= HIT]
            if near:
                feed["delays"].append(min(a["night"] for a in near) - step)
                feed["ids"].append(len({a["id"] for a in near}))
            else:
                feed["missed"] += 1
            seen = [a for a in r.get("shown", r["announced"]) if abs(a["index"] - step) <= HIT]
            if seen:
                feed["shown_delays"].append(min(a["night"] for a in seen) - step)
    kinds = {k: tally([r for r in rows if r["kind"] == k])
             for k in ["plain", "bimodal", "outliers", "drift"]}
    return {
        "all": tally(rows), "kinds": kinds,
        "recall_by_size": {f"{size:+.0%}": f"{a}/{b}" for size, (a, b) in sorted(by_size.items())},
        "feed": {
            "announced": feed["announced"],
            "spurious_share": feed["spurious"] / feed["announced"] if feed["announced"] else 0.0,
            "median_delay": statistics.median(feed["delays"]) if feed["delays"] else None,
            "median_shown_delay": (statistics.median(feed["shown_delays"])
                                   if feed["shown_delays"] else None),
            "ids_per_step": statistics.mean(feed["ids"]) if feed["ids"] else None,
            "steps_never_announced": feed["missed"],
        },
    }


def fmt(x):
    return "—" if x is None or x != x else f"{x:.2f}"


def markdown(scores, data):
    n = len(data["series"])
    steps = sum(len(s["steps"]) for s in data["series"])
    lines = [f"Corpus: {n} series (seed {data['seed']}), {steps} true steps.", "",
             "| detector | precision | recall | F1 | false alerts per flat series "
             "| announcements | with no step near | ids per step | median delay: announced "
             "| median delay: first shown | steps never announced |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, sc in scores.items():
        a, f = sc["all"], sc["feed"]
        lines.append(f"| {name} | {fmt(a['precision'])} | {fmt(a['recall'])} | {fmt(a['f1'])} "
                     f"| {fmt(a['false_per_flat'])} | {f['announced']} "
                     f"| {fmt(f['spurious_share'])} | {fmt(f['ids_per_step'])} "
                     f"| {fmt(f['median_delay'])} | {fmt(f['median_shown_delay'])} "
                     f"| {f['steps_never_announced']} |")
    lines += ["", "By noise kind (F1; false alerts per flat series):", "",
              "| detector | " + " | ".join(["plain", "bimodal", "outliers", "drift"]) + " |",
              "|---|---|---|---|---|"]
    for name, sc in scores.items():
        cells = [f"{fmt(k['f1'])}; {fmt(k['false_per_flat'])}" for k in sc["kinds"].values()]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += ["", "Recall by step size:", "",
              "| detector | " + " | ".join(next(iter(scores.values()))["recall_by_size"]) + " |",
              "|---|" + "---|" * len(next(iter(scores.values()))["recall_by_size"])]
    for name, sc in scores.items():
        lines.append(f"| {name} | " + " | ".join(sc["recall_by_size"].values()) + " |")
    return "\n".join(lines) + "\n"


def finite(value):
    """`value` with NaN (a share of nothing) as null, which JSON can hold."""
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, float) and value != value:
        return None
    return value


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus")
    p.add_argument("--series", type=int, default=64)
    p.add_argument("--seed", type=int, default=2026)
    p.add_argument("--min-runs", type=int, default=40)
    p.add_argument("--max-runs", type=int, default=120)
    p.add_argument("--feed", help="the changepoint_feed binary (default: cargo run --release)")
    p.add_argument("--no-otava", action="store_true")
    p.add_argument("--no-nightly", action="store_true", help="score whole series only")
    p.add_argument("--markdown")
    p.add_argument("--json")
    args = p.parse_args()
    data = corpus(args)
    nightly = not args.no_nightly
    scores = {"osbench": score(data, osbench(data, args.feed, nightly))}
    if not args.no_otava:
        scores["Otava 0.8 defaults"] = score(data, otava(data, nightly))
    text = markdown(scores, data)
    print(text)
    if args.markdown:
        Path(args.markdown).write_text(text)
    if args.json:
        Path(args.json).write_text(json.dumps(finite(scores), indent=1))


if __name__ == "__main__":
    main()
