#!/usr/bin/env python3
"""Compare the mean times of an instrumented run's tree with a plain build's own measure of the same functions.

usage: truth-compare.py REPORT.json [REPORT.json ...] TRUTH_FILE [TRUTH_FILE ...]

REPORT.json: `cargo calltime report TRACE --format json` (docs/json.md) of one run; with several, each call
path's mean is the median over the runs. TRUTH_FILE: the output of `bench-calls truth`, whose lines
`truth <path> <mean ns> <calls>` are a plain build's means; with several files, the median of each function's means. Prints one row per aggregate call path: calls per invocation, the
tree's mean, the plain mean, their ratio, and what the children's totals add up to against the node's own total.
"""
import json
import statistics
import sys


def read_truth(paths):
    means = {}
    for path in paths:
        with open(path) as f:
            for line in f:
                fields = line.split()
                if len(fields) == 4 and fields[0] == "truth":
                    means.setdefault(fields[1], []).append(float(fields[2]))
    return {name: statistics.median(values) for name, values in means.items()}


def fmt_ns(ns):
    if ns is None:
        return "-"
    if ns >= 1e6:
        return f"{ns / 1e6:.2f} ms"
    if ns >= 1e3:
        return f"{ns / 1e3:.1f} us"
    return f"{ns:.1f} ns"


def collect_means(node, prefix, means):
    key = prefix + (node["path"],)
    means.setdefault(key, []).append(node["mean_ns"])
    for child in node.get("children", []):
        collect_means(child, key, means)


def rows(node, prefix, truth, means, out):
    key = prefix + (node["path"],)
    mean = statistics.median(means[key])
    children_total = sum(child["total_ns"] for child in node.get("children", []))
    children_share = f"{children_total / node['total_ns']:.2f}" if node.get("children") and node["total_ns"] else "-"
    plain = truth.get(node["path"])
    ratio = f"{mean / plain:.2f}x" if plain else "-"
    name = "  " * len(prefix) + node["path"].split("::", 1)[-1] + ("  ~" if node.get("estimated") else "")
    out.append((name, f"{node['calls_per_invocation']:.0f}", fmt_ns(mean), fmt_ns(plain), ratio, children_share))
    for child in node.get("children", []):
        rows(child, key, truth, means, out)


def main(argv):
    if len(argv) < 2:
        sys.exit("truth-compare: pass the report's JSON file and at least one truth file")
    reports = []
    for path in (a for a in argv if a.endswith(".json")):
        with open(path) as f:
            reports.append(json.load(f))
    if not reports:
        sys.exit("truth-compare: no REPORT.json among the arguments")
    truth = read_truth([a for a in argv if not a.endswith(".json")])
    means = {}
    for report in reports:
        for aggregate in report["aggregate"]:
            collect_means(aggregate["tree"], (), means)
    report = reports[0]
    out = [("call path (~ estimated)", "calls/inv", "tree mean", "plain mean", "ratio", "children/total")]
    for aggregate in report["aggregate"]:
        rows(aggregate["tree"], (), truth, means, out)
    widths = [max(len(row[i]) for row in out) for i in range(len(out[0]))]
    for row in out:
        print("  ".join(cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths))))
    print(f"tree means: median of {len(reports)} runs; children/total and calls from the first run")
    print(f"settings: {json.dumps(report.get('settings', {}), sort_keys=True)}")
    print(f"stats: {json.dumps(report.get('stats', {}), sort_keys=True)}")


if __name__ == "__main__":
    main(sys.argv[1:])
