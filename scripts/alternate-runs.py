#!/usr/bin/env python3
"""Run commands side by side, alternating (a, b, a, b, ...), and print each one's medians.

usage: alternate-runs.py [--runs N] [--warmup W] NAME=COMMAND [NAME=COMMAND ...]

Each COMMAND is a shell command (run as `exec COMMAND`, so redirections work and the shell's own cost is an exec).
Alternating rather than running all of one command first spreads the machine's load changes over every command.
Prints one line per command: `NAME wall_ms cpu_ms min_wall_ms failures`, medians over the runs, where cpu is the
user + system time of the process and all its threads (the writer thread's work included).
"""
import os
import statistics
import subprocess
import sys
import time


def run_once(command):
    started = time.perf_counter_ns()
    child = subprocess.Popen(
        ["/bin/sh", "-c", "exec " + command], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    wall_ms = (time.perf_counter_ns() - started) / 1e6
    cpu_ms = (usage.ru_utime + usage.ru_stime) * 1e3
    return wall_ms, cpu_ms, child.returncode


def main(argv):
    runs, warmup, commands = 20, 2, []
    args = iter(argv)
    for arg in args:
        if arg == "--runs":
            runs = int(next(args))
        elif arg == "--warmup":
            warmup = int(next(args))
        elif "=" in arg:
            name, command = arg.split("=", 1)
            commands.append((name, command))
        else:
            sys.exit(f"alternate-runs: unexpected argument `{arg}`; pass NAME=COMMAND")
    if not commands:
        sys.exit("alternate-runs: no commands; pass NAME=COMMAND pairs")
    for _ in range(warmup):
        for _, command in commands:
            run_once(command)
    results = {name: ([], [], 0) for name, _ in commands}
    for _ in range(runs):
        for name, command in commands:
            wall, cpu, code = run_once(command)
            walls, cpus, failures = results[name]
            walls.append(wall)
            cpus.append(cpu)
            results[name] = (walls, cpus, failures + (code != 0))
    for name, _ in commands:
        walls, cpus, failures = results[name]
        print(f"{name} {statistics.median(walls):.3f} {statistics.median(cpus):.3f} {min(walls):.3f} {failures}")


if __name__ == "__main__":
    main(sys.argv[1:])
