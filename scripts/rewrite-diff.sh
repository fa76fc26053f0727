#!/bin/bash
# Whether two cargo-calltime binaries rewrite a workspace alike: each rewrites a copy of WORKSPACE for the default
# plan from ROOT (`calltime build --release --root ROOT --depth 5 ARGS`) with a rustc that refuses to compile, so
# only the shadow copies are made (the build then fails, as expected); prints how many rewritten files differ and
# by how many lines (the plan table's path normalised), and leaves the two shadows under WORK_DIR for `diff -r`.
# A change of form that leaves a program's rewrite byte-identical cannot change its figures.
# usage: scripts/rewrite-diff.sh TOOL_A TOOL_B WORKSPACE ROOT [CARGO_ARGS...]   (WORK_DIR=/tmp/rewrite-diff)
set -euo pipefail
[ $# -ge 4 ] || { echo "usage: $0 TOOL_A TOOL_B WORKSPACE ROOT [CARGO_ARGS...]" >&2; exit 2; }
tool_a=$(realpath "$1") tool_b=$(realpath "$2") src=$3 root=$4; shift 4
work=${WORK_DIR:-/tmp/rewrite-diff}
name=$(basename "$src")
mkdir -p "$work"
rustc_stub=$work/no-compile-rustc
cat > "$rustc_stub" <<'SH'
#!/bin/bash
# Answers cargo's queries (`-vV`, the target info probe with crate name `___`), refuses to compile anything else.
for a in "$@"; do case "$a" in ___) exec rustc "$@";; esac; done
for a in "$@"; do case "$a" in --crate-name) echo "rewrite-diff: no compile" >&2; exit 1;; esac; done
exec rustc "$@"
SH
chmod +x "$rustc_stub"
rm -rf "$work/src-$name" && cp -r "$src" "$work/src-$name" && rm -rf "$work/src-$name/target"
for side in a b; do
  tool=$tool_a; [ $side = b ] && tool=$tool_b
  out=$work/$name-$side
  rm -rf "$out"
  (cd "$work/src-$name" && CARGO_TARGET_DIR=$out RUSTC=$rustc_stub "$tool" calltime build -q --release --root "$root" \
    --depth 5 "$@" > /dev/null 2> "$out.log") || true
  [ -d "$out/calltime/shadow" ] || { echo "rewrite-diff: $tool made no shadow copy (see $out.log)" >&2; exit 1; }
  find "$out/calltime/shadow" -name '.*.calltime.rs' -exec sed -i "s|$out/|TARGET/|g" {} +
done
files=$(find "$work/$name-b/calltime/shadow" -name '.*.calltime.rs' | wc -l)
lines=$( (diff -r "$work/$name-a/calltime/shadow" "$work/$name-b/calltime/shadow" || true) | grep -c '^[<>]' || true)
echo "$name: $files rewritten files, $lines differing lines (diff -r $work/$name-a/calltime/shadow $work/$name-b/calltime/shadow)"
