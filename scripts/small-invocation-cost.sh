#!/bin/bash
# The runtime's cost per small invocation in instructions (docs/performance.md, "Eighth round"): callgrind on
# instrumented binaries (say scripts/unseen-crates-bench.sh's `hp-d5`, kept from two checkouts), alternating, RUNS
# times each. Per run it prints the total, the recorded nodes per invocation (calls of `probe::leave_node_call`),
# and the runtime's functions on the per-invocation path split in two: those paid once an invocation (root start and
# end, hand-off, the aggregate fold's own part, the retirement note, the recorder's reset) and those paid per
# recorded node (the probes' recording entry and exit, the fold's walk). Retirement follows timings, which
# callgrind and the machine's load move, so the nodes per invocation differ between runs; the split says what the
# runtime costs whatever they are.
#
# usage: scripts/small-invocation-cost.sh INVOCATIONS NAME=BINARY [NAME=BINARY ...]   (RUNS=N, default 3)
set -euo pipefail
invocations=${1:?usage: scripts/small-invocation-cost.sh INVOCATIONS NAME=BINARY [NAME=BINARY ...]}
shift
runs=${RUNS:-3}
command -v valgrind >/dev/null || { echo "small-invocation-cost: valgrind is needed; install it" >&2; exit 1; }
out=$(mktemp -d /tmp/small-invocation-cost.XXXXXX)
for run in $(seq "$runs"); do
  for spec in "$@"; do
    name=${spec%%=*} binary=${spec#*=}
    CALLTIME_OUT=$out/trace valgrind --tool=callgrind --callgrind-out-file="$out/$name.$run" "$binary" > /dev/null 2>&1
    python3 - "$out/$name.$run" "$name" "$run" "$invocations" <<'PY'
import re, sys
path, name, run, invocations = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
once = re.compile(r"calltime_rt::(invocation::(start_thread_invocation|complete_thread_invocation|push_to_outbox)"
                  r"|aggregate::(fold|Trie::child|new_shape_slot)|retire::note_invocation|recorder::Recorder::begin"
                  r"|outbox::Outbox::publish)$|memset")
per_node = re.compile(r"calltime_rt::(probe::(record_enter_call|leave_node_call)|aggregate::fold_under)$")
names, own, fn, cfn, total, nodes, skip = {}, {}, None, None, 0, 0, False
for line in open(path):
    m = re.match(r"^(c?fn)=\((\d+)\)(?: (.*))?$", line.rstrip("\n"))
    if m:
        if m.group(3):
            names[m.group(2)] = m.group(3)
        if m.group(1) == "fn":
            fn = names.get(m.group(2))
        else:
            cfn = names.get(m.group(2))
        continue
    if line.startswith("calls="):
        skip = True
        if cfn and cfn.endswith("probe::leave_node_call"):
            nodes += int(line.split("=")[1].split()[0])
        continue
    parts = line.split()
    if len(parts) >= 2 and re.match(r"^(0x[0-9a-f]+|[+-]?\d+|\*)$", parts[0]):
        cost = int(parts[-1])
        if not skip:
            total += cost
            own[fn] = own.get(fn, 0) + cost
        skip = False
fixed = sum(c for f, c in own.items() if f and once.search(f)) / invocations
node = sum(c for f, c in own.items() if f and per_node.search(f)) / invocations
per = nodes / invocations
print(f"{name} run {run}: {total / 1e6:.1f} M instructions; {per:.2f} recorded nodes an invocation; runtime per "
      f"invocation: {fixed:.0f} once + {node:.0f} for its nodes ({node / max(per, 1e-9):.0f} a node)")
PY
  done
done
echo "callgrind files in $out"
