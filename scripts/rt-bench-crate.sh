# Sourced by the runtime cost benches (adopt-cost-bench.sh, parallel-cost-bench.sh): writes the manifest of a
# one-binary crate in "$2" that depends on this checkout's calltime-rt (path "$3"), named "$1", release build with
# line tables so callgrind can name functions. The caller writes "$2/src/main.rs".
rt_bench_crate() {
  local name=$1 work=$2 repo=$3
  mkdir -p "$work/src"
  cat > "$work/Cargo.toml" <<TOML
[package]
name = "$name"
version = "0.1.0"
edition = "2021"

[workspace]

[dependencies]
calltime-rt = { path = "$repo/calltime-rt" }

[profile.release]
debug = 1
TOML
}
