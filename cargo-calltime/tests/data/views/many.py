#!/usr/bin/env python3
"""Writes many.trace: 20 deterministic invocations of demo's server::handle on two threads and two tasks, one of
server::shutdown, one truncated tree, one with filtered nodes, counters with sampling and drops, and a record cut
off at the end (a crash while writing). Run from this directory: python3 many.py > many.trace"""

lines = [
    "calltime-trace 1",
    "process 777 1700000000000000000 /ws/demo/target/calltime/debug/demo",
    "plan 3fa2c1d0 /ws/demo/target/calltime/plan.functions.json",
]
threads = [("thread", 1, "main"), ("thread", 2, "worker-1"), ("task", 7, ""), ("task", 9, "")]
t = 10_000
for seq in range(20):
    kind, tid, name = threads[seq % 4]
    nodes = []
    start = t
    at = start + 1_000
    # parse_request with 1..3 headers
    headers = 1 + seq % 3
    p_start = at
    hs = []
    h_at = p_start + 500
    for h in range(headers):
        d = 20_000 + 1_000 * ((seq * 7 + h * 3) % 10)
        hs.append((2, 2, h_at, d, 0))
        h_at += d + 300
    p_dur = h_at - p_start + 2_000
    nodes.append((1, 1, p_start, p_dur, 0))
    nodes.extend(hs)
    at = p_start + p_dur + 1_000
    # every third invocation queries the db (decode twice); the slow one is seq 9
    if seq % 3 == 0:
        q_start = at
        d1 = 50_000 + 5_000 * (seq % 4)
        d2 = 60_000 if seq != 9 else 900_000
        nodes.append((1, 3, q_start, d1 + d2 + 10_000, 0))
        nodes.append((2, 4, q_start + 2_000, d1, 0))
        nodes.append((2, 4, q_start + 4_000 + d1, d2, 1 if seq == 12 else 0))
        at = q_start + d1 + d2 + 10_000 + 1_000
    r_dur = 30_000 + 2_000 * seq
    nodes.append((1, 5, at, r_dur, 0))
    nodes.append((2, 7, at + 1_000, 5_000, 0))
    at += r_dur + 1_000
    duration = at - start
    truncated = 250 if seq == 5 else 0
    filtered = 3 if seq == 6 else 0
    root = (0, 0, start, duration, 0)
    all_nodes = [root] + nodes
    lines.append(f"inv {seq} {kind} {tid} {start} {duration} {len(all_nodes)} {truncated} {filtered} {name}".rstrip())
    lines += [f"n {d} {i} {s} {du} {f}" for (d, i, s, du, f) in all_nodes]
    lines.append(f"end {seq}")
    t = at + 5_000 + 1_000 * (seq % 5)
# one call of the second root
lines.append(f"inv 20 thread 1 {t} 40000 2 0 0 main")
lines.append(f"n 0 8 {t} 40000 0")
lines.append(f"n 1 6 {t + 1000} 3000 0")
lines.append("end 20")
lines.append("stats 46 21 20 5 1")
# a record cut off by a crash: no `end`, last line torn
lines.append(f"inv 21 thread 2 {t + 50000} 90000 4 0 0 worker-1")
lines.append(f"n 0 0 {t + 50000} 90000 0")
lines.append(f"n 1 1 {t + 51000} 300")
print("\n".join(lines))
