#!/usr/bin/env python3
"""What 4 threads pay per invocation against 1 (issue 11 item 3), with the spread that says whether it is told.

usage: thread-scaling.py [--runs N] [--roots R] [--threads T] plain=BINARY NAME=BINARY [NAME=BINARY ...]

Each BINARY is a bench-calls build (scripts/truth-bench.sh's `plain` and `files`). A round runs, in an order
shuffled per round, `BINARY threads 1 R` and `BINARY threads T R` of every binary; CPU (user + system, all
threads) and minor page faults come from wait4's rusage. Per round and build: CPU per invocation over plain,
(instrumented - plain) / R, on 1 thread and on T threads, from the same round's plain runs. Prints per build the
medians over rounds, T/1 (ratio of the medians) with a 90% bootstrap interval over rounds (the spread: a figure is
told when its interval is far narrower than the 10% it must tell), and the page faults' medians. The default
1,000,000 roots (5x truth-bench's) spread each thread's set-up over more invocations.
"""
import os
import random
import statistics
import subprocess
import sys


def run_once(binary, threads, roots):
    child = subprocess.Popen(
        [binary, "threads", str(threads), str(roots)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    _, status, usage = os.wait4(child.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"thread-scaling: {binary} threads {threads} {roots} failed; run it by hand to see why")
    return (usage.ru_utime + usage.ru_stime) * 1e9, usage.ru_minflt


def interval(samples, statistic, draws=2000):
    """90% bootstrap interval of statistic(resampled rounds)."""
    rng = random.Random(1)
    values = sorted(statistic([rng.choice(samples) for _ in samples]) for _ in range(draws))
    return values[int(0.05 * draws)], values[int(0.95 * draws) - 1]


def main(argv):
    runs, roots, threads, builds = 30, 1_000_000, 4, []
    args = iter(argv)
    for arg in args:
        if arg == "--runs":
            runs = int(next(args))
        elif arg == "--roots":
            roots = int(next(args))
        elif arg == "--threads":
            threads = int(next(args))
        elif "=" in arg:
            builds.append(tuple(arg.split("=", 1)))
        else:
            sys.exit(f"thread-scaling: unexpected argument `{arg}`; pass plain=BINARY NAME=BINARY ...")
    names = [name for name, _ in builds]
    if "plain" not in names or len(builds) < 2:
        sys.exit("thread-scaling: pass plain=BINARY and at least one NAME=BINARY")
    os.environ.setdefault("CALLTIME_OUT", f"/tmp/thread-scaling-{os.getpid()}.trace")
    jobs = [(name, binary, t) for name, binary in builds for t in (1, threads)]
    for name, binary, t in jobs:  # warm-up: page cache, the first run's set-up
        run_once(binary, t, roots)
    rounds = []
    for _ in range(runs):
        order = jobs[:]
        random.shuffle(order)
        rounds.append({(name, t): run_once(binary, t, roots) for name, binary, t in order})
    print(f"{runs} rounds of {roots:,} roots, 1 and {threads} threads; ns of CPU per invocation over plain "
          f"(medians), {threads}/1 with its 90% interval over rounds; minor page faults (medians)")
    plain_faults = [statistics.median(r[("plain", t)][1] for r in rounds) for t in (1, threads)]
    print(f"plain: page faults {plain_faults[0]:.0f} / {plain_faults[1]:.0f}")
    for name in names:
        if name == "plain":
            continue
        per = {t: [(r[(name, t)][0] - r[("plain", t)][0]) / roots for r in rounds] for t in (1, threads)}
        pairs = list(zip(per[1], per[threads]))

        def ratio(sample):
            return statistics.median(b for _, b in sample) / statistics.median(a for a, _ in sample)

        low, high = interval(pairs, ratio)
        faults = [statistics.median(r[(name, t)][1] for r in rounds) for t in (1, threads)]
        print(f"{name}: {statistics.median(per[1]):.1f} ns on 1 thread, {statistics.median(per[threads]):.1f} ns on "
              f"{threads}: {threads}/1 {ratio(pairs):.3f}x (90%: {low:.3f}-{high:.3f}x); page faults "
              f"{faults[0]:.0f} / {faults[1]:.0f}")


if __name__ == "__main__":
    main(sys.argv[1:])
