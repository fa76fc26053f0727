# Sourced by the bench scripts (needs `repo` and `fail` set): sets CC to the cargo-calltime binary to measure,
# CALLTIME_CC if given (say main's, to compare runtimes; kept fixed while other checkouts build), else this
# checkout's, built in release first.
if [ -n "${CALLTIME_CC:-}" ]; then
  CC=$CALLTIME_CC
else
  (cd "$repo" && cargo build --release -q -p cargo-calltime) || fail "cannot build cargo-calltime in $repo"
  CC=$repo/target/release/cargo-calltime
fi
