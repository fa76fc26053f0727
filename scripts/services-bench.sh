#!/bin/bash
# docs/performance.md's "Services": throughput of test-crates/e2e-server (a std-only TCP server on loopback with its
# own load generator) built plain (`cargo build --release`) against the same server instrumented at depth 5
# (`cargo calltime build --release --root handle_request --depth 5`), both run ROUNDS times, alternating, with the
# runtime's defaults (whole-run aggregate on, 100,000 trees at most, 50 MB per hour). Prints each run's requests per
# second, the medians and their ratio.
#
# usage: CC=target/debug/cargo-calltime scripts/services-bench.sh [REQUESTS [CLIENTS [ROUNDS]]]
#        (works on a copy in /tmp/services-bench, removed at the end; needs python3)
set -euo pipefail
CC=$(realpath "${CC:?set CC to the cargo-calltime binary}")
requests=${1:-200000} clients=${2:-2} rounds=${3:-7}
repo=$(cd "$(dirname "$0")/.." && pwd)
w=/tmp/services-bench
rm -rf "$w"; mkdir -p "$w"; cp -r "$repo/test-crates/e2e-server" "$w/"; rm -rf "$w/e2e-server/target"
cd "$w/e2e-server"
unset CARGO_TARGET_DIR RUSTFLAGS
cargo build -q --release
plain=$w/e2e-server/target/release/e2e-server
instrumented=$("$CC" calltime build -q --release --root handle_request --depth 5 | tail -1)
# Alternating runs; per run the program's requests per second (it prints `served N in MS ms`) and the CPU time
# (user + system, all threads) per request: on a shared machine CPU time is the steadier figure.
python3 - "$plain" "$instrumented" "$requests" "$clients" "$rounds" "$w" <<'PY'
import os, resource, statistics, subprocess, sys
plain, inst, requests, clients, rounds, work = sys.argv[1:7]
env = dict(os.environ, CALLTIME_OUT=f"{work}/run.trace", CALLTIME_CONTROL_DIR=f"{work}/control")
def once(binary):
    for name in os.listdir(work):
        if name.startswith("run.trace"):
            os.remove(os.path.join(work, name))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run([binary, "serve", requests, clients], env=env, capture_output=True, text=True, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    words = out.stdout.split()
    served, ms = int(words[1]), max(int(words[3]), 1)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return served * 1000 / ms, cpu * 1e6 / served
runs = {"plain": [], "instrumented": []}
for _ in range(int(rounds)):
    runs["plain"].append(once(plain))
    runs["instrumented"].append(once(inst))
print(f"requests={requests} clients={clients} rounds={rounds}")
medians = {}
for name, values in runs.items():
    rates, cpus = [r for r, _ in values], [c for _, c in values]
    medians[name] = (statistics.median(rates), statistics.median(cpus))
    print(f"{name:>12} req/s: {' '.join(f'{r:.0f}' for r in rates)}")
    print(f"{name:>12} CPU us/request: {' '.join(f'{c:.2f}' for c in cpus)}")
(pr, pc), (ir, ic) = medians["plain"], medians["instrumented"]
print(f"median throughput: plain {pr:.0f} req/s, instrumented {ir:.0f} req/s: {ir / pr:.3f}x")
print(f"median CPU per request: plain {pc:.2f} us, instrumented {ic:.2f} us: {ic / pc:.3f}x")
size = sum(os.path.getsize(os.path.join(work, n)) for n in os.listdir(work) if n.startswith("run.trace"))
print(f"last instrumented run's trace: {size} bytes")
PY
rm -rf "$w"
