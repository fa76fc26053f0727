#!/bin/bash
# docs/performance.md's "Overhead on real programs", default plan only: pulldown-cmark 0.13.6, tokei 15.0.0 and
# serde_json 1.0.154 built plainly and with `cargo calltime build --root R --depth 5` (no plan flag: first run,
# fresh calltime target dir), run side by side alternating; prints the wall and CPU ratios and whether the output
# is byte-identical. A measurement: it exits non-zero only when it cannot set up (fetch, copy or build fails).
#
# BEFORE_CC=PATH (optional): another cargo-calltime binary (say main's) whose default plan runs in the same
# alternation, as `before`, for a before/after comparison under the same load. CALLTIME_CC=PATH (optional): the
# cargo-calltime binary whose default plan is `d5` (default: this checkout's, built first).
# usage: scripts/real-crates-bench.sh [WORK_DIR]   (default /tmp/real-crates-bench; kept between runs so that the
#        plain builds and inputs are reused; the instrumented builds are always redone from scratch)
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-/tmp/real-crates-bench}
fail() { echo "real-crates-bench: $*" >&2; exit 1; }
mkdir -p "$work" || fail "cannot create the work directory $work"
work=$(cd "$work" && pwd)
command -v python3 >/dev/null || fail "python3 is needed for the inputs and the run loop; install it"

echo "== setup (work dir $work)"
. "$repo/scripts/bench-tool.sh"   # sets CC: CALLTIME_CC, or this checkout's tool
registry() { ls -d "$HOME"/.cargo/registry/src/*/"$1" 2>/dev/null | head -1 || true; }
if [ -z "$(registry pulldown-cmark-0.13.6)" ] || [ -z "$(registry tokei-15.0.0)" ] || [ -z "$(registry serde_json-1.0.154)" ]; then
  rm -rf "$work/fetch" && cargo new -q "$work/fetch" && (cd "$work/fetch" && cargo add -q pulldown-cmark@0.13.6 \
    && cargo add -q tokei@15.0.0 && cargo add -q serde_json@1.0.154 && cargo fetch -q) \
    || fail "cannot fetch the crates from crates.io (a scratch cargo new + cargo add + cargo fetch in $work/fetch)"
fi
copy() { [ -d "$2" ] || cp -r "$(registry "$1")" "$2" || fail "cannot copy $1 from the registry"; }
copy pulldown-cmark-0.13.6 "$work/pc"
copy tokei-15.0.0 "$work/tk"
mkdir -p "$work/sj/bench/src" && copy serde_json-1.0.154 "$work/sj/serde_json"
printf '[workspace]\nmembers = ["serde_json", "bench"]\nresolver = "2"\n' > "$work/sj/Cargo.toml"
printf '[package]\nname = "bench"\nversion = "0.1.0"\nedition = "2021"\n[dependencies]\nserde_json = { path = "../serde_json" }\n' \
  > "$work/sj/bench/Cargo.toml"
cat > "$work/sj/bench/src/main.rs" <<'RS'
// One `from_str::<Value>` per line of the file named by the first argument; prints the number of top-level keys.
fn main() {
    let path = std::env::args().nth(1).expect("usage: bench FILE.jsonl");
    let text = std::fs::read_to_string(&path).expect("cannot read the input file");
    let mut keys = 0;
    for line in text.lines() {
        let value: serde_json::Value = serde_json::from_str(line).expect("invalid JSON line");
        keys += value.as_object().map_or(0, |o| o.len());
    }
    println!("{keys}");
}
RS

echo "== inputs"
# pulldown-cmark: the registry's READMEs and CHANGELOGs, concatenated as often as it takes to reach 6 MB.
if [ ! -s "$work/big.md" ]; then
  find -L "$HOME"/.cargo/registry/src -maxdepth 3 -name '*.md' -print0 | sort -z | xargs -0 cat > "$work/one.md"
  [ -s "$work/one.md" ] || fail "no *.md files in ~/.cargo/registry/src for the pulldown-cmark input"
  : > "$work/big.md"
  while [ "$(wc -c < "$work/big.md" 2>/dev/null || echo 0)" -lt 6000000 ]; do cat "$work/one.md" >> "$work/big.md"; done
fi
# tokei: performance.md's list of crate directories; the versions this registry lacks are skipped, and further
# registry directories (in name order) are added until there are at least 889 files, as there were there.
if [ ! -d "$work/tkin" ]; then
  mkdir "$work/tkin"
  for d in clap_builder-4.5.53 clap_builder-4.6.7 proc-macro2-1.0.79 proc-macro2-1.0.86 proc-macro2-1.0.106 \
    proc-macro2-1.0.107 rayon-1.10.0 rayon-1.12.0 regex-automata-0.4.7 regex-automata-0.4.18 regex-automata-0.4.19 \
    regex-syntax-0.8.11; do
    src=$(registry "$d")
    if [ -n "$src" ]; then cp -r "$src" "$work/tkin/"; fi
  done
  for src in $(ls -d "$HOME"/.cargo/registry/src/*/*/ | sort); do
    [ "$(find "$work/tkin" -type f | wc -l)" -ge 889 ] && break
    [ -d "$work/tkin/$(basename "$src")" ] || cp -r "$src" "$work/tkin/"
  done
fi
[ -s "$work/sj.jsonl" ] || python3 - "$work/sj.jsonl" <<'PY'
import json, random, sys
random.seed(11)
word = lambda: "".join(random.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(random.randint(3, 12)))
with open(sys.argv[1], "w") as f:
    for i in range(20000):
        obj = {"id": i, "name": word(), "title": " ".join(word() for _ in range(4)), "score": random.random() * 1000,
               "ratio": random.uniform(-1, 1), "tags": [random.randint(0, 100000) for _ in range(10)],
               "owner": {"login": word(), "site_admin": random.random() < 0.1, "followers": random.randint(0, 9999)},
               "active": random.random() < 0.5}
        f.write(json.dumps(obj) + "\n")
PY
echo "big.md $(wc -c < "$work/big.md") bytes; tkin $(find "$work/tkin" -type f | wc -l) files, $(du -sh "$work/tkin" | cut -f1); sj.jsonl $(wc -l < "$work/sj.jsonl") lines, $(wc -c < "$work/sj.jsonl") bytes"

echo "== builds (plain, then the default plan from a fresh calltime target dir)"
build() { # DIR NAME BIN ROOT CARGO_ARGS...
  local dir=$1 name=$2 bin=$3 root=$4; shift 4
  (cd "$dir" && cargo build -q --release "$@") 2> "$work/build-$name.log" \
    || fail "cannot build $name plainly in $dir (see $work/build-$name.log)"
  cp "$dir/target/release/$bin" "$work/$name-plain"
  if [ -n "${BEFORE_CC:-}" ]; then instrument_with "$BEFORE_CC" before "$@"; fi
  instrument_with "$CC" d5 "$@"
}
instrument_with() { # TOOL SUFFIX CARGO_ARGS... (dir, name and root from build)
  local tool=$1 suffix=$2 built; shift 2
  rm -rf "$dir/target/calltime"
  built=$(cd "$dir" && "$tool" calltime build -q --release --root "$root" --depth 5 "$@" 2>> "$work/build-$name.log" | tail -1) \
    || fail "cannot build $name instrumented from $root with $tool (see $work/build-$name.log)"
  cp "$built" "$work/$name-$suffix"
}
build "$work/pc" pc pulldown-cmark write_html_io --features getopts
build "$work/tk" tk tokei LanguageType::parse --features cli
build "$work/sj" sj bench Value::deserialize --bin bench

echo "== output check and side-by-side runs (alternating; medians: wall ms, cpu ms, fastest wall ms, failures)"
export CALLTIME_OUT=$work/scratch.trace
check() { # NAME ARGS (input redirection allowed)
  if [ "$(sh -c "exec $work/$1-plain $2" | md5sum)" = "$(sh -c "exec $work/$1-d5 $2" | md5sum)" ]; then
    echo "$1: output identical"
  else
    echo "$1: output DIFFERENT"
  fi
}
compare() { # NAME RUNS ARGS
  check "$1" "$3"
  local before=()
  if [ -n "${BEFORE_CC:-}" ]; then before=(before="$work/$1-before $3"); fi
  python3 "$repo/scripts/alternate-runs.py" --runs "$2" --warmup 2 plain="$work/$1-plain $3" d5="$work/$1-d5 $3" \
    "${before[@]}" | tee "$work/runs.$1" | sed "s/^/  /"
  awk -v n="$1" '{ w[$1] = $2; c[$1] = $3 } END { printf "%s default plan: wall %.2fx, cpu %.2fx\n", n, w["d5"] / w["plain"], c["d5"] / c["plain"]
    if ("before" in w) printf "%s default plan with BEFORE_CC: wall %.2fx, cpu %.2fx\n", n, w["before"] / w["plain"], c["before"] / c["plain"] }' \
    "$work/runs.$1"
  sh -c "CALLTIME_OUT=$work/$1.trace exec $work/$1-d5 $3" > /dev/null
  echo "  trace $(grep -a '^stats ' "$work/$1.trace" | tail -1) (seen kept sampled_out dropped truncated)"
}
compare pc 20 "< $work/big.md"
compare tk 10 "$work/tkin"
compare sj 5 "$work/sj.jsonl"
echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), $(date -u '+%Y-%m-%d %H:%M UTC')"
