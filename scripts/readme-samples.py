#!/usr/bin/env python3
"""Re-makes README.md's sample outputs on this machine.

Each sample in README.md sits after a marker line
`<!-- sample: NAME -->` as a fenced block; this script runs the command
that makes sample NAME with the release binary (built first), keeps the
lines the README shows (a sample may keep only its first cases and its
summary), and writes the block back. The sentence before each sample says
which machine it came from: the script rewrites the marker's neighbour
line `<!-- machine -->…` with this machine's CPU model and CPU count.

Usage: scripts/readme-samples.py [--dry-run] [NAME...]
  (no NAME: every sample; --dry-run prints instead of writing README.md)

Measure alone: no build or test running meanwhile. The `explained` sample
needs root (perf sampling of the kernel) and a few minutes. Left out:
choosing which run to show; the samples are whatever this run gave.
"""

import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OSBENCH = os.path.join(ROOT, "target", "release", "osbench")
README = os.path.join(ROOT, "README.md")


def run(args, store=None):
    env = dict(os.environ)
    if store:
        env["OSBENCH_STORE"] = store
    out = subprocess.run(
        [OSBENCH] + args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    if out.returncode not in (0, 1, 3):
        sys.exit(f"osbench {' '.join(args)} failed ({out.returncode}):\n{out.stderr}")
    return out.stdout


def keep_cases(text, cases, tail_from=None):
    """The blocks of `text` for `cases` (a block starts at an unindented
    line naming the case and runs to the next unindented line), taken from
    the lines before the summary table (its header starts with `benchmark `);
    then, with `tail_from`, `…` and the lines from the one starting with it."""
    lines = text.splitlines()
    end = next((i for i, l in enumerate(lines) if l.startswith("benchmark ")), len(lines))
    kept, keeping = [], False
    for line in lines[:end]:
        if not line.startswith(" "):
            keeping = any(line.startswith(c + " ") for c in cases)
        if keeping:
            kept.append(line)
    if tail_from:
        start = next((i for i, l in enumerate(lines) if l.startswith(tail_from)), None)
        if start is not None:
            kept.append("…")
            kept.extend(lines[start:])
    return "\n".join(kept)


def until(text, marker):
    """`text` up to the line starting with `marker` (all of it without one)."""
    lines = text.splitlines()
    end = next((i for i, l in enumerate(lines) if l.startswith(marker)), len(lines))
    return "\n".join(lines[:end]).rstrip()


def sample_table():
    return until(run(["run", "syscall", "--no-store", "--width", "90"]), "Counters per op")


def sample_aa():
    text = run(["run", "syscall", "--config", "a=true", "--config", "b=true",
                "--rounds", "6", "--no-store", "--width", "100"])
    return keep_cases(text, ["syscall null", "syscall read"], tail_from="benchmark ")


def sample_labelled():
    with tempfile.TemporaryDirectory() as d:
        store = os.path.join(d, "store.sqlite")
        for _ in range(5):
            for label in ("without5", "with5"):
                run(["run", "ctx", "--label", label, "-q"], store)
        text = run(["compare", "without5", "with5", "--width", "100"], store)
    return keep_cases(text, ["ctx 2p/16K"])


def sample_explained():
    guest = "seccomp=command:{osbench} sandbox --seccomp 300 -- {osbench} agent"
    text = run(["run", "syscall:case=null", "--config", "native=", "--guest", guest,
                "--rounds", "10", "--profile", "--no-store", "--width", "100"])
    return keep_cases(text, ["syscall null"])


SAMPLES = {
    "table": sample_table,
    "aa": sample_aa,
    "labelled": sample_labelled,
    "explained": sample_explained,
}


def machine():
    model = "unknown CPU"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return f"{model}, {os.cpu_count()} CPUs"


def main():
    args = [a for a in sys.argv[1:] if a != "--dry-run"]
    dry = "--dry-run" in sys.argv
    names = args or list(SAMPLES)
    unknown = [n for n in names if n not in SAMPLES]
    if unknown:
        sys.exit(f"unknown samples {unknown}; known: {', '.join(SAMPLES)}")
    subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
    readme = open(README).read()
    readme = re.sub(r"<!-- machine -->[^\n]*",
                    f"<!-- machine -->Samples made on {machine()} by scripts/readme-samples.py.",
                    readme)
    for name in names:
        block = SAMPLES[name]()
        pattern = re.compile(r"(<!-- sample: %s -->\n```\n)(.*?)(\n```)" % re.escape(name), re.S)
        if not pattern.search(readme):
            sys.exit(f"README.md has no '<!-- sample: {name} -->' marker before a fenced block")
        readme = pattern.sub(lambda m: m.group(1) + block + m.group(3), readme)
        if dry:
            print(f"--- {name}\n{block}")
    if not dry:
        with open(README, "w") as f:
            f.write(readme)


if __name__ == "__main__":
    main()
