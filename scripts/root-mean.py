#!/usr/bin/env python3
"""The root's tree mean (from `cargo calltime report --top 0` text files) against the plain build's own timing
(`truth <path> <mean ns> <calls>` lines); medians over the files given. usage: root-mean.py REPORT.txt... TRUTH..."""
import re
import statistics
import sys

UNITS = {"ns": 1, "µs": 1e3, "us": 1e3, "ms": 1e6, "s": 1e9}


def ns(text):
    number, unit = re.fullmatch(r"~?([\d.]+)(ns|µs|us|ms|s)", text).groups()
    return float(number) * UNITS[unit]


tree, plain, root = [], [], None
for path in sys.argv[1:]:
    lines = open(path, encoding="utf-8").read().splitlines()
    if any(line.startswith("truth ") for line in lines):
        plain += [float(line.split()[2]) for line in lines if line.startswith("truth ")]
        continue
    header = next(i for i, line in enumerate(lines) if line.lstrip().startswith("calls/inv"))
    fields = lines[header + 1].split()
    # A root sampled for cost: its row is over the recorded invocations, which one preempted call can carry; the
    # aggregate's header gives its mean over every invocation, each timed at the root, the plain build's measure.
    # (`~` when the skipped ones' roots were timed at random, 1 in 16).
    whole = [re.search(r"the root over all [\d,]+: mean (~?[\d.]+(?:ns|µs|us|ms|s))", line) for line in lines[:header]]
    whole = [m.group(1) for m in whole if m]
    tree.append(ns(whole[0]) if whole else ns(fields[3]))
    # The function is the row's last column, less the marks after it (`analyze [children overlap 140ms]`).
    name = re.sub(r"( \[[^\]]*\])+$", "", lines[header + 1]).split()[-1]
    root = name + (" (mean over every invocation: sampled for cost)" if whole else "")
if not tree or not plain:
    sys.exit("root-mean: need at least one report and one truth file")
t, p = statistics.median(tree), statistics.median(plain)
# Sub-microsecond roots (semver, csv: one record) in ns: 0.1 us of rounding would be the whole difference.
shown = (lambda v: f"{v:.0f} ns") if p < 10e3 else (lambda v: f"{v / 1e3:.1f} us")
print(f"root {root}: tree mean {shown(t)}, plain {shown(p)}: {t / p:.2f}x (medians of {len(tree)} runs each)")
