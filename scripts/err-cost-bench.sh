#!/bin/bash
# The cost of counting `Err` returns (issue 13), in instructions under callgrind (stable on a loaded machine):
# test-crates/bench-calls copied twice with `files::search_line` returning `Result<u64, Miss>` (an `Err` for a
# line without the needle, about 1 in 4), once through an alias ending in `Result` (counted), once through an
# alias that does not (`SearchRes`: not wrapped, the same code otherwise). Both built instrumented (root
# search_file, depth 5) and run with CALLTIME_EXACT=1 (no probe retires, so both record the same calls); the
# figure is search_line's inclusive instructions per call, and err_returned's per `Err`.
#
# usage: [CARGO_CALLTIME=path] scripts/err-cost-bench.sh [WORK_DIR]   (default: a new directory under /tmp; delete it
# afterwards)
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-$(mktemp -d /tmp/err-cost-bench.XXXXXX)}
fail() { echo "err-cost-bench: $*" >&2; exit 1; }
command -v valgrind >/dev/null || fail "valgrind is needed (callgrind); install it"
command -v python3 >/dev/null || fail "python3 is needed to edit the copies"
# CARGO_CALLTIME=path uses that build of the tool instead of building it (the figures do not depend on it).
CC=${CARGO_CALLTIME:-$repo/target/release/cargo-calltime}
if [ -z "${CARGO_CALLTIME:-}" ]; then
  (cd "$repo" && cargo build --release -q -p cargo-calltime) || fail "cannot build cargo-calltime in $repo"
fi
for variant in counted:SearchResult alias:SearchRes; do
  name=${variant%%:*} alias=${variant##*:}
  rm -rf "$work/$name" && mkdir -p "$work" && cp -r "$repo/test-crates/bench-calls" "$work/$name"
  rm -rf "$work/$name/target"
  python3 - "$work/$name/src/files.rs" "$alias" <<'PY' || fail "cannot edit the copy of files.rs"
import sys
path, alias = sys.argv[1], sys.argv[2]
s = open(path).read()
old = """pub fn search_line(line: &[u8], needle: u8) -> u64 {
    line.iter().filter(|&&b| b == needle).count() as u64
}"""
new = f"""pub fn search_line(line: &[u8], needle: u8) -> {alias}<u64> {{
    let hits = line.iter().filter(|&&b| b == needle).count() as u64;
    if hits == 0 {{
        return Err(Miss);
    }}
    Ok(hits)
}}

#[derive(Debug)]
pub struct Miss;

type {alias}<T> = Result<T, Miss>;"""
assert old in s, "search_line changed: update this script"
s = s.replace(old, new).replace("hits += search_line(line, needle);", "hits += search_line(line, needle).unwrap_or(0);")
open(path, "w").write(s)
PY
  bin=$(cd "$work/$name" && CARGO_TARGET_DIR=$work/target-$name "$CC" calltime build -q --release --root search_file \
    --depth 5 | tail -1) || fail "cannot build the $name copy instrumented"
  CALLTIME_EXACT=1 CALLTIME_OUT=$work/$name.trace valgrind --tool=callgrind --toggle-collect='*search_file*' \
    --callgrind-out-file="$work/$name.callgrind" "$bin" many-roots 20000 > /dev/null 2> "$work/$name.valgrind"
done
python3 - "$work" <<'PY'
import re, subprocess, sys
work = sys.argv[1]
def inclusive(name, function):
    out = subprocess.run(["callgrind_annotate", "--inclusive=yes", f"{work}/{name}.callgrind"],
                         capture_output=True, text=True).stdout
    line = next((l for l in out.splitlines() if l.rstrip().split(" [")[0].endswith(function)), None)
    return int(line.split()[0].replace(",", "")) if line else 0
def calls(name, function):
    out = subprocess.run(["callgrind_annotate", "--tree=caller", f"{work}/{name}.callgrind"],
                         capture_output=True, text=True).stdout
    m = re.search(r"\((\d[\d,]*)x\).*\n.*\* +\?\?\?:" + re.escape(function), out)
    return int(m.group(1).replace(",", "")) if m else 0
lines = 8 * 20000
counted, alias = inclusive("counted", "search_line"), inclusive("alias", "search_line")
err_ir, errs = inclusive("counted", "err_returned"), calls("counted", "calltime_rt::outcome::err_returned")
print(f"search_line per call, instrumented: counted {counted / lines:.2f} Ir, not counted {alias / lines:.2f} Ir, "
      f"difference {(counted - alias) / lines:.2f} Ir")
if errs:
    print(f"err_returned: {errs} calls, {err_ir / errs:.1f} Ir each; an Ok return costs "
          f"{(counted - err_ir - alias) / lines:.2f} Ir")
PY
