#!/bin/bash
# Rebuild time after a one-line change: plain `cargo build` vs `cargo calltime build` after the same kind of change.
# usage: rebuild-bench.sh CRATE_DIR FILE ROOT N [cargo flags...]
set -e
dir=$1; file=$2; root=$3; n=$4; shift 4
T=${CALLTIME:-cargo-calltime}
cd "$dir"
cargo build -q --offline "$@" 2>/dev/null
$T calltime build -q --offline --root "$root" "$@" >/dev/null
now() { date +%s.%N; }
plain=(); ct=()
for i in $(seq 1 $n); do
  echo "// edit p$i" >> "$file"; s=$(now); cargo build -q --offline "$@" 2>/dev/null; e=$(now); plain+=($(echo "$e - $s" | bc))
  echo "// edit c$i" >> "$file"; s=$(now); $T calltime build -q --offline --root "$root" "$@" >/dev/null; e=$(now); ct+=($(echo "$e - $s" | bc))
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
mp=$(median "${plain[@]}"); mc=$(median "${ct[@]}")
echo "plain:    ${plain[*]}"
echo "calltime: ${ct[*]}"
echo "median plain ${mp}s calltime ${mc}s ratio $(echo "scale=2; $mc / $mp" | bc)"
