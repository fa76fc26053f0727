#!/usr/bin/env python3
"""Writes runs/*.trace (and their function tables) and runs.txt: seven deterministic runs of demo's server::handle
and server::shutdown recorded on different dates, with labels. Run 4 is three times slower than the others (a dirty
run: a busy machine). Run from this directory: python3 runs.py"""

import calendar
import json
import os

TABLE = {
    "version": 1,
    "plan_id": "5ca1ab1e",
    "roots": ["server::handle", "server::shutdown"],
    "depth": 3,
    "filter": "^demo::",
    "functions": [
        {"index": 0, "path": "demo::server::handle", "display": "server::handle", "file": "/ws/demo/src/server.rs", "line": 12, "root": True},
        {"index": 1, "path": "demo::parse::parse_request", "display": "parse::parse_request", "file": "/ws/demo/src/parse.rs", "line": 5, "root": False},
        {"index": 2, "path": "demo::parse::header", "display": "parse::header", "file": "/ws/demo/src/parse.rs", "line": 40, "root": False},
        {"index": 3, "path": "demo::render::render", "display": "render::render", "file": "/ws/demo/src/render.rs", "line": 3, "root": False},
        {"index": 4, "path": "demo::server::shutdown", "display": "server::shutdown", "file": "/ws/demo/src/server.rs", "line": 60, "root": True},
    ],
}

# name, UTC date, label, time scale, roots recorded
RUNS = [
    ("run-1", (2026, 3, 1, 10, 0, 0), "main", 1.00, ["handle"]),
    ("run-2", (2026, 3, 2, 10, 0, 0), "main", 1.02, ["handle"]),
    ("run-3", (2026, 3, 3, 9, 0, 0), "pr-42", 0.98, ["handle"]),
    ("run-4", (2026, 3, 4, 23, 59, 59), "main", 3.00, ["handle"]),
    ("run-5", (2026, 3, 5, 0, 0, 0), "pr-42", 1.01, ["handle"]),
    ("run-6", (2026, 3, 6, 12, 0, 0), "", 0.99, ["handle", "shutdown"]),
    ("run-7", (2026, 3, 7, 8, 30, 0), "main", 1.00, ["shutdown"]),
]


def handle(seq, start, scale):
    """One invocation: handle -> parse_request -> header x (1 + seq % 3), render. Returns (lines, duration)."""
    headers = 1 + seq % 3
    nodes = []
    at = start + 1_000
    p_start = at
    h_nodes = []
    h_at = p_start + 500
    for h in range(headers):
        d = int((20_000 + 1_000 * ((seq * 7 + h * 3) % 10)) * scale)
        h_nodes.append((2, 2, h_at, d))
        h_at += d + 300
    p_dur = h_at - p_start + 2_000
    nodes.append((1, 1, p_start, p_dur))
    nodes.extend(h_nodes)
    at = p_start + p_dur + 1_000
    r_dur = int((30_000 + 2_000 * (seq % 4)) * scale)
    nodes.append((1, 3, at, r_dur))
    at += r_dur + 1_000
    total = at - start
    return [(0, 0, start, total)] + nodes, total


def trace(name, date, scale, roots):
    epoch = calendar.timegm(date) * 1_000_000_000
    lines = [
        "calltime-trace 1",
        f"process 4000 {epoch} /ws/demo/target/calltime/build/debug/demo",
        "plan 5ca1ab1e /ws/demo/target/calltime/plan.functions.json",
    ]
    seq = 0
    t = 10_000
    for root in roots:
        for _ in range(5 if root == "handle" else 2):
            if root == "handle":
                nodes, total = handle(seq, t, scale)
            else:
                total = int(5_000 * scale)
                nodes = [(0, 4, t, total)]
            lines.append(f"inv {seq} thread 1 {t} {total} {len(nodes)} 0 0 main")
            lines.extend(f"n {d} {f} {s} {dur} 0" for d, f, s, dur in nodes)
            lines.append(f"end {seq}")
            seq += 1
            t += total + 5_000
    lines.append(f"stats {seq} {seq} 0 0 0")
    return "\n".join(lines) + "\n"


os.makedirs("runs", exist_ok=True)
manifest = []
for name, date, label, scale, roots in RUNS:
    with open(f"runs/{name}.trace", "w") as f:
        f.write(trace(name, date, scale, roots))
    with open(f"runs/{name}.trace.functions.json", "w") as f:
        json.dump(TABLE, f, indent=2)
        f.write("\n")
    manifest.append(f"runs/{name}.trace {label or '-'}")
with open("runs.txt", "w") as f:
    f.write("# trace label ('-': no label); written by runs.py\n" + "\n".join(manifest) + "\n")
