#!/usr/bin/env python3
"""A recall check that needs neither the rewrite stage nor the runtime: insert a printing guard at every sync
probe offset of a plan (dumped by `cargo test --test analysis -- --ignored dump_plan`), build and run the program,
rebuild the call stacks from the printed enter/exit lines, and list the caller -> callee edges observed at run time
that are not static edges. It edits the workspace in place: run it on a copy.

usage: recall_check.py WORKSPACE_COPY PLAN.json "cargo run -q --example demo"
"""
import collections, json, subprocess, sys

root, plan_file, run_cmd = sys.argv[1], sys.argv[2], sys.argv[3]
plan = json.load(open(plan_file))
fns = plan["functions"]
by_file = collections.defaultdict(list)
idx_to_pos = {}
for pos, f in enumerate(fns):
    p = f.get("probe")
    if not p:
        continue
    idx_to_pos[p["index"]] = pos
    if p["kind"] != "sync":
        continue
    guard = ("let __calltime_guard = { struct G(u32); impl Drop for G { fn drop(&mut self) { "
             "eprintln!(\"X {}\", self.0); } } " f"eprintln!(\"E {p['index']}\"); G({p['index']}) }};")
    by_file[f["file"]].append((p["open"], guard))
for file, edits in by_file.items():
    data = open(file, "rb").read()
    for off, text in sorted(edits, reverse=True):
        data = data[:off] + text.encode() + data[off:]
    open(file, "wb").write(data)
out = subprocess.run(run_cmd, shell=True, cwd=root, capture_output=True, text=True)
if out.returncode != 0:
    sys.exit("run failed:\n" + out.stderr[-3000:])
stack, observed = [], set()
for line in out.stderr.splitlines():
    parts = line.split()
    if len(parts) != 2 or parts[0] not in ("E", "X"):
        continue
    if parts[0] == "E":
        i = int(parts[1])
        if stack:
            observed.add((idx_to_pos[stack[-1]], idx_to_pos[i]))
        stack.append(i)
    else:
        stack.pop()
static = {(e["from"], e["to"]) for e in plan["edges"]}
missed = sorted(observed - static)
print(f"{root}: {len(observed)} observed edges, {len(static)} static edges, {len(missed)} missed")
for a, b in missed:
    print("  missed", fns[a]["path"], "->", fns[b]["path"])
sys.exit(1 if missed else 0)
