#!/usr/bin/env python3
"""Sets the rows scripts/crosscheck.sh recorded (CROSSCHECK_RECORD) out as a
Markdown table with one column per machine kind, the shape of
docs/crosscheck.md's "By machine kind" table, so a day on another kind of
machine fills its column from its records rather than by hand.

A machine kind is the record's machine field without its microcode (vendor
and model name). For each check and kind the newest row counts (by its start
time; a later build's row replaces an earlier one, but a row of a check
that could not run replaces none that measured). A check agrees on a kind
when its ratio is within the check's tolerance there (the verdict "yes" or
"ratio yes, interval wider"); it is faithful when it agrees on every kind
that measured it, and the last column says which kinds have not (a row
recorded as unavailable, its anchor missing there, is not a measurement). It reads
only the records: what a row's difference is named by lives in
docs/crosscheck.md and `osbench list`, not here.

    scripts/crosscheck-kinds.py [RECORD.tsv ...]   (default docs/crosscheck-records.tsv)
"""

import csv
import sys
from pathlib import Path

DEFAULT = Path(__file__).resolve().parent.parent / "docs" / "crosscheck-records.tsv"


def kind_of(machine):
    """The machine kind of a record: its vendor and model, not its microcode."""
    return machine.split(", microcode")[0].strip()


def ran(row):
    """Whether a row is a measurement, not a check that could not run."""
    return not row["verdict"].startswith("unavailable")


def rank(row):
    """A measured row outranks a row of a check that could not run; then the newer wins."""
    return (ran(row), row["started"])


def newest_rows(paths):
    """{check: {kind: row}}, the newest row of each check on each kind, in
    the order checks first appear."""
    table = {}
    for path in paths:
        with open(path, newline="") as f:
            for row in csv.DictReader(f, delimiter="\t"):
                cell = table.setdefault(row["check"], {})
                kind = kind_of(row["machine"])
                if kind not in cell or rank(cell[kind]) <= rank(row):
                    cell[kind] = row
    return table


def agrees(row):
    """Whether a row's ratio (or, without an anchor, its CV) is within bounds."""
    verdict = row["verdict"]
    return verdict.startswith(("yes", "ratio yes"))


def cell_text(row):
    """One kind's cell: the ratio, its interval, rounds and date, the CV
    alone, or why the check could not run."""
    day = row["started"][:10]
    if not ran(row):
        return f"{row['verdict']} ({day})"
    if not row["ratio"]:
        return f"CV {float(row['osbench_cv_pct']):.1f} % ({row['rounds']} rounds, {day})"
    interval = f" [{float(row['ratio_ci_low']):.3f}–{float(row['ratio_ci_high']):.3f}]" if row["ratio_ci_low"] else ""
    cvs = f"CVs {float(row['osbench_cv_pct']):.1f} / {float(row['anchor_cv_pct']):.1f} %"
    return f"{float(row['ratio']):.3f}{interval}, {row['rounds']} rounds, {cvs} ({day})"


def render(table):
    """The Markdown table: a row per check, a column per kind, the verdict last."""
    kinds = sorted({kind for cells in table.values() for kind in cells})
    lines = [
        "| check | " + " | ".join(kinds) + " | faithful on every kind measured |",
        "|---|" + "---|" * (len(kinds) + 1),
    ]
    for check, cells in table.items():
        texts = [cell_text(cells[k]) if k in cells else "—" for k in kinds]
        measured = {k: row for k, row in cells.items() if ran(row)}
        failing = [k for k in kinds if k in measured and not agrees(measured[k])]
        missing = [k for k in kinds if k not in measured]
        verdict = "**no** on " + ", ".join(failing) if failing else "yes" if measured else ""
        if missing:
            verdict += ("; " if verdict else "") + "not measured on " + ", ".join(missing)
        lines.append(f"| `{check}` | " + " | ".join(texts) + f" | {verdict} |")
    return "\n".join(lines)


def main(argv):
    paths = argv[1:] or [DEFAULT]
    missing = [p for p in paths if not Path(p).is_file()]
    if missing:
        sys.exit(f"no record at {', '.join(map(str, missing))}: run scripts/crosscheck.sh with CROSSCHECK_RECORD=FILE")
    table = newest_rows(paths)
    if not table:
        sys.exit("the records hold no rows yet")
    print(render(table))


if __name__ == "__main__":
    main(sys.argv)
