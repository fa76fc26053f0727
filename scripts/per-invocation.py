#!/usr/bin/env python3
"""Per-invocation times of the tokenizer's `tokenize` and `busy` in truth-bench reports, to tell the tool's cost from
the machine's noise (docs/truth-bench.md, "Seventh round").

usage: per-invocation.py REPORT.json [REPORT.json ...]   (`cargo calltime report TRACE --format json`, as
       scripts/truth-bench.sh writes them: WORK_DIR/tokenizer.[123].json)

Prints per report: the first five invocations' `tokenize` (us), its median, minimum and mean over the invocations,
and `busy`'s median and minimum. `busy` is a register-only loop with no probe in it: a run in which it keeps its
time while `tokenize` does not was slowed by something other than the clock or the probes.
"""
import json
import statistics
import sys


def child_totals(report, suffix):
    out = []
    for inv in report["invocations"]:
        for child in inv["tree"].get("children", []):
            if child["path"].endswith(suffix):
                out.append(child["total_ns"] / 1000)
    return out


def main(paths):
    if not paths:
        sys.exit("per-invocation: pass at least one report's JSON file")
    for path in paths:
        with open(path) as f:
            report = json.load(f)
        tokenize, busy = child_totals(report, "::tokenize"), child_totals(report, "::busy")
        if not tokenize or not busy:
            print(f"{path}: no tokenize or busy under the root")
            continue
        first = " ".join(f"{t:.0f}" for t in tokenize[:5])
        print(
            f"{path}: tokenize first [{first}] median {statistics.median(tokenize):.0f} min {min(tokenize):.0f} "
            f"mean {statistics.mean(tokenize):.0f} us; busy median {statistics.median(busy):.0f} "
            f"min {min(busy):.0f} us"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
