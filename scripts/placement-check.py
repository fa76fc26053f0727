#!/usr/bin/env python3
"""docs/truth-bench.md's "Eighth round": checks `cargo calltime report --format json` output of a default-plan run
against an `--exact` run (CALLTIME_EXACT=1) of the same binary and input.

usage: scripts/placement-check.py DEFAULT.json [EXACT.json [MAX_DEPTH]]

For DEFAULT.json alone: every tree (invocations, aggregate, whole run) is checked for own-thread children adding up
to more than their parent, a child's time over its parent's, a mean outside the timed extremes, and `estimated`
marks missing on estimates or present on exact times; prints the count and the first 15.
With EXACT.json: the first invocation's call counts by call path (display names) against the exact run's, over the
paths both have (up to MAX_DEPTH deep: an exact run that hit the path cap counts deeper paths short): the mean
|log(placed / exact)| and how many are off by more than 3x, and the 10 worst.
"""
import json
import math
import sys


def walk(node, where, issues, path):
    kids = [c for c in node.get("children", []) if "lane" not in c]
    total = node.get("total_ns", 0)
    name = " > ".join((path + [node.get("display")])[-3:])
    if sum(c.get("total_ns", 0) for c in kids) > total + node.get("children_overlap_ns", 0) + 1:
        issues.append(f"{where}: children add up to more than their parent at {name}")
    for c in kids:
        if c.get("total_ns", 0) > total + 1:
            issues.append(f"{where}: {c['display']} takes longer than its parent at {name}")
    if node.get("timed_calls", 0) > 0 and "mean_ns" in node and not node["min_ns"] <= node["mean_ns"] <= node["max_ns"]:
        issues.append(f"{where}: mean outside its extremes at {name}")
    recorded = node.get("calls", 0) - node.get("retired_calls", 0)
    if node.get("estimated") is False and node.get("timed_calls", 0) < recorded:
        issues.append(f"{where}: untimed calls not marked estimated at {name}")
    if node.get("estimated") and node.get("timed_calls") == recorded:
        issues.append(f"{where}: marked estimated with every call timed at {name}")
    for c in node.get("children", []):
        walk(c, where, issues, path + [node.get("display")])


def first_tree_calls(doc):
    out = {}

    def paths(node, prefix):
        p = prefix + (node["display"],)
        out[p] = out.get(p, 0) + node["calls"]
        for c in node.get("children", []):
            paths(c, p)

    paths(min(doc["invocations"], key=lambda i: i["index"])["tree"], ())
    return out


def main():
    default = json.load(open(sys.argv[1]))
    issues = []
    for inv in default["invocations"]:
        walk(inv["tree"], f"invocation {inv['index']}", issues, [])
    for agg in default.get("aggregate") or []:
        walk(agg["tree"], "aggregate", issues, [])
    for agg in (default.get("whole_run") or {}).get("aggregate") or []:
        walk(agg["tree"], "whole run", issues, [])
    print(f"{sys.argv[1]}: {len(issues)} issues")
    for issue in issues[:15]:
        print(f"  {issue}")
    if len(sys.argv) < 3:
        return
    exact = first_tree_calls(json.load(open(sys.argv[2])))
    placed = first_tree_calls(default)
    max_depth = int(sys.argv[3]) if len(sys.argv) > 3 else 1 << 30
    rows = [(abs(math.log(n / exact[p])), n, exact[p], p) for p, n in placed.items()
            if len(p) <= max_depth and exact.get(p, 0) > 0 and n > 0]
    if not rows:
        print("no call path in both")
        return
    off = sum(r[0] > math.log(3) for r in rows)
    print(f"first tree: {len(rows)} paths in both, mean |log(placed/exact)| {sum(r[0] for r in rows) / len(rows):.2f}, "
          f"{off} off by more than 3x")
    for r, n, e, p in sorted(rows, reverse=True)[:10]:
        print(f"  {n:>9} placed {e:>9} exact  {' > '.join(s.split('::')[-1] for s in p[-3:])} (depth {len(p)})")


main()
