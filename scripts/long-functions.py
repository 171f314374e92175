#!/usr/bin/env python3
"""Lists functions longer than a limit (default 80 lines, signature to closing
brace) outside test modules, in the .rs files or directories given.
Used to keep src/experiment, src/measure and src/cli* readable:
    scripts/long-functions.py src/experiment src/measure src/cli src/main.rs
Exit status 1 when any function is over the limit."""
import os
import re
import sys

LIMIT = int(os.environ.get("LIMIT", "80"))
FN = re.compile(r"^(\s*)(pub(\([^)]*\))?\s+)?(const\s+|unsafe\s+|async\s+|extern\s+\"C\"\s+)*fn\s+(\w+)")


def files(paths):
    for p in paths:
        if os.path.isdir(p):
            for root, _, names in os.walk(p):
                yield from (os.path.join(root, n) for n in sorted(names) if n.endswith(".rs"))
        elif os.path.exists(p):
            yield p


def long_functions(path):
    lines = open(path).read().split("\n")
    out = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if re.match(r"^\s*#\[cfg\(test\)\]", line) and i + 1 < len(lines) and re.match(r"^\s*mod \w+", lines[i + 1]):
            break  # test modules sit at the end of a file
        m = FN.match(line)
        if m and not line.rstrip().endswith(";"):
            indent = m.group(1)
            j = i
            while j < len(lines) and not (lines[j].startswith(indent + "}") and len(lines[j].rstrip()) == len(indent) + 1) \
                    and not (j > i and lines[j].rstrip().endswith("}") and lines[j].startswith(indent + "}")):
                if j == i and line.rstrip().endswith("}"):
                    break
                j += 1
            n = j - i + 1
            if n > LIMIT:
                out.append((path, i + 1, m.group(5), n))
        i += 1
    return out


found = [f for p in files(sys.argv[1:] or ["src"]) for f in long_functions(p)]
for path, line, name, n in found:
    print(f"{path}:{line}: {name} is {n} lines (limit {LIMIT})")
sys.exit(1 if found else 0)
