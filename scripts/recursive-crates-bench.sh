#!/bin/bash
# docs/truth-bench.md's "Seventh round": recursive programs whose invocations fold (thousands of calls each), built
# plainly and with the default plan (`cargo calltime build --release --root R --depth D`, no plan flag: first run,
# fresh calltime target dir):
#   syn 2.0.119 parsing 5 of its own source files 20 times (root `parse_file`, depth 5),
#   rhai 1.x running fib(25) and loops (root `Engine::run_ast`, depth 5; fetched from crates.io),
#   minijinja 3.1.0 rendering a recursive template 200 times (root `Template::render`, depth 10).
# For each: whether the outputs are byte-identical, callgrind's instruction ratio (instrumented / plain), CPU ratio
# of side-by-side runs (scripts/alternate-runs.py), and the root's tree mean against the plain build's own timing of
# the root (each bench binary prints `root_mean_ns N` on stderr: its calls of the root timed from outside).
# A measurement: it exits non-zero only when it cannot set up (fetch, copy or build fails).
#
# BEFORE_CC=PATH (optional): another cargo-calltime binary (say main's) measured alongside as `before`.
# CALLTIME_CC=PATH (optional): the cargo-calltime binary measured as `d` (default: this checkout's, built first).
# ONLY="syn rhai mj" (optional): the programs to measure.
# usage: scripts/recursive-crates-bench.sh [WORK_DIR]   (default /tmp/recursive-crates-bench; plain builds reused)
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-/tmp/recursive-crates-bench}
only=${ONLY:-syn rhai mj}
fail() { echo "recursive-crates-bench: $*" >&2; exit 1; }
mkdir -p "$work" || fail "cannot create the work directory $work"
work=$(cd "$work" && pwd)
command -v python3 >/dev/null || fail "python3 is needed for the run loop; install it"
command -v valgrind >/dev/null || fail "valgrind is needed for the instruction counts; install it (apt-get install valgrind)"

echo "== setup (work dir $work)"
. "$repo/scripts/bench-tool.sh"   # sets CC: CALLTIME_CC, or this checkout's tool
registry() { ls -d "$HOME"/.cargo/registry/src/*/$1 2>/dev/null | sort -V | tail -1 || true; }
if [ -z "$(registry syn-2.0.119)" ] || [ -z "$(registry minijinja-3.1.0)" ] || [ -z "$(registry 'rhai-1.*')" ]; then
  rm -rf "$work/fetch" && cargo new -q "$work/fetch" && (cd "$work/fetch" && cargo add -q syn@2.0.119 \
    && cargo add -q minijinja@3.1.0 && cargo add -q rhai@1 && cargo fetch -q) \
    || fail "cannot fetch the crates from crates.io (a scratch cargo new + cargo add + cargo fetch in $work/fetch)"
fi
copy() { mkdir -p "$(dirname "$2")"; [ -d "$2" ] || cp -r "$(registry "$1")" "$2" || fail "cannot copy $1 from the registry"; }
workspace() { # DIR CRATE_DIR DEPENDENCY_LINE
  mkdir -p "$work/$1/bench/src"
  printf '[workspace]\nmembers = ["%s", "bench"]\nresolver = "2"\n' "$2" > "$work/$1/Cargo.toml"
  printf '[package]\nname = "bench"\nversion = "0.1.0"\nedition = "2021"\n[dependencies]\n%s\n' "$3" \
    > "$work/$1/bench/Cargo.toml"
}

# syn: the bench parses 5 of syn's own files (copied as inputs) 20 times.
copy syn-2.0.119 "$work/syn/syn"
workspace syn syn 'syn = { path = "../syn", features = ["full", "parsing"] }'
mkdir -p "$work/syn-in"
for f in expr.rs item.rs ty.rs pat.rs generics.rs; do cp "$work/syn/syn/src/$f" "$work/syn-in/$f"; done
cat > "$work/syn/bench/src/main.rs" <<'RS'
// Parses each file named on the command line 20 times with `syn::parse_file`; prints the items per round.
fn main() {
    let texts: Vec<String> = std::env::args().skip(1).map(|p| std::fs::read_to_string(p).expect("read")).collect();
    let (mut items, mut ns, mut calls) = (0, 0u128, 0u128);
    for _ in 0..20 {
        for text in &texts {
            let start = std::time::Instant::now();
            let file = syn::parse_file(text).expect("parse");
            ns += start.elapsed().as_nanos();
            calls += 1;
            items += file.items.len();
        }
    }
    println!("{items}");
    eprintln!("root_mean_ns {}", ns / calls);
}
RS

# rhai: the issue's script (fib(25) plus loops), compiled once, run 3 times by `Engine::run_ast`.
if [[ " $only " == *" rhai "* ]]; then
  copy "$(basename "$(registry 'rhai-1.*')")" "$work/rhai/rhai"
  workspace rhai rhai 'rhai = { path = "../rhai" }'
  cat > "$work/rhai/bench/src/main.rs" <<'RS'
// Runs a script (fib(25), then loops over arrays and strings) 3 times with `Engine::run_ast`; prints its output.
fn main() {
    let script = r#"
        fn fib(n) { if n < 2 { n } else { fib(n - 1) + fib(n - 2) } }
        let total = fib(25);
        let a = [];
        for i in 0..20000 { a.push(i * 2 % 7); }
        let s = 0;
        for x in a { if x > 3 { s += x; } else { s -= 1; } }
        let text = "";
        for i in 0..2000 { text += `${i % 10}`; }
        print(`${total} ${s} ${text.len()}`);
    "#;
    let engine = rhai::Engine::new();
    let ast = engine.compile(script).expect("compile");
    let (mut ns, mut calls) = (0u128, 0u128);
    for _ in 0..3 {
        let start = std::time::Instant::now();
        engine.run_ast(&ast).expect("run");
        ns += start.elapsed().as_nanos();
        calls += 1;
    }
    eprintln!("root_mean_ns {}", ns / calls);
}
RS
fi

# minijinja: a recursive template (a tree of menus through a recursive loop, a macro, filters) rendered 200 times.
if [[ " $only " == *" mj "* ]]; then
  copy minijinja-3.1.0 "$work/mj/minijinja"
  workspace mj minijinja 'minijinja = { path = "../minijinja" }'
  cat > "$work/mj/bench/src/main.rs" <<'RS'
// Renders a recursive template (a menu tree 5 levels deep, 4 children each) 200 times; prints the bytes rendered.
use minijinja::{context, Environment, Value};

fn tree(depth: u32) -> Vec<Value> {
    (0..if depth == 0 { 0 } else { 4 })
        .map(|i| context! { title => format!("item {depth}.{i}"), href => format!("/{depth}/{i}"), children => tree(depth - 1) })
        .collect()
}

fn main() {
    let mut env = Environment::new();
    env.add_template(
        "menu",
        "{% macro link(item) %}<a href=\"{{ item.href|e }}\">{{ item.title|upper }}</a>{% endmacro %}\
         <ul>{% for item in items recursive %}<li>{{ link(item) }}{% if item.children %}\
         <ul>{{ loop(item.children) }}</ul>{% endif %}{{ loop.index * 2 + loop.depth }}</li>{% endfor %}</ul>",
    )
    .expect("template");
    let template = env.get_template("menu").expect("get");
    let items = tree(5);
    let (mut bytes, mut ns, mut calls) = (0, 0u128, 0u128);
    for _ in 0..200 {
        let start = std::time::Instant::now();
        let out = template.render(context! { items => items.clone() }).expect("render");
        ns += start.elapsed().as_nanos();
        calls += 1;
        bytes += out.len();
    }
    println!("{bytes}");
    eprintln!("root_mean_ns {}", ns / calls);
}
RS
fi

echo "== builds (plain, then the default plan from a fresh calltime target dir)"
build() { # NAME ROOT DEPTH
  local name=$1 root=$2 depth=$3 dir=$work/$1
  (cd "$dir" && cargo build -q --release --bin bench) 2> "$work/build-$name.log" \
    || fail "cannot build $name plainly in $dir (see $work/build-$name.log)"
  cp "$dir/target/release/bench" "$work/$name-plain"
  if [ -n "${BEFORE_CC:-}" ]; then instrument_with "$BEFORE_CC" before; fi
  instrument_with "$CC" d
}
instrument_with() { # TOOL SUFFIX (dir, name, root and depth from build)
  local tool=$1 suffix=$2 built
  rm -rf "$dir/target/calltime"
  built=$(cd "$dir" && "$tool" calltime build -q --release --root "$root" --depth "$depth" --bin bench \
    2>> "$work/build-$name.log" | tail -1) || fail "cannot build $name instrumented with $tool (see $work/build-$name.log)"
  cp "$built" "$work/$name-$suffix"
}
args_of() {
  case $1 in
    syn) echo "$work/syn-in/expr.rs $work/syn-in/item.rs $work/syn-in/ty.rs $work/syn-in/pat.rs $work/syn-in/generics.rs" ;;
    *) echo "" ;;
  esac
}
for name in $only; do
  case $name in
    syn) build syn parse_file 5 ;;
    rhai) build rhai Engine::run_ast 5 ;;
    mj) build mj Template::render 10 ;;
  esac
done

echo "== per program: output check, instructions (callgrind), side-by-side CPU, the root's tree mean"
export CALLTIME_OUT=$work/scratch.trace
variants="plain d"
if [ -n "${BEFORE_CC:-}" ]; then variants="plain before d"; fi
for name in $only; do
  args=$(args_of "$name")
  plain_out=$("$work/$name-plain" $args 2>/dev/null | md5sum)
  for v in $variants; do
    [ "$v" = plain ] && continue
    if [ "$("$work/$name-$v" $args 2>/dev/null | md5sum)" = "$plain_out" ]; then
      echo "$name-$v: output identical"
    else
      echo "$name-$v: output DIFFERENT"
    fi
  done
  declare -A ir=()
  for v in $variants; do
    valgrind --tool=callgrind --callgrind-out-file="$work/cg.$name-$v" "$work/$name-$v" $args \
      > /dev/null 2> "$work/cg.$name-$v.log" || fail "callgrind failed on $name-$v (see $work/cg.$name-$v.log)"
    ir[$v]=$(grep -oE 'Collected : [0-9]+' "$work/cg.$name-$v.log" | grep -oE '[0-9]+$')
  done
  for v in $variants; do
    printf '  %s-%s: %s instructions (%.2fx plain)\n' "$name" "$v" "${ir[$v]}" "$(echo "${ir[$v]} / ${ir[plain]}" | bc -l)"
  done
  runs=()
  for v in $variants; do runs+=("$v=$work/$name-$v $args"); done
  python3 "$repo/scripts/alternate-runs.py" --runs 5 --warmup 1 "${runs[@]}" 2>/dev/null | tee "$work/runs.$name" | sed "s/^/  /"
  awk -v n="$name" '{ c[$1] = $3 } END { for (v in c) if (v != "plain") printf "  %s-%s cpu %.2fx plain\n", n, v, c[v] / c["plain"] }' \
    "$work/runs.$name"
  plain_mean=$("$work/$name-plain" $args 2>&1 >/dev/null | grep -oE 'root_mean_ns [0-9]+' | grep -oE '[0-9]+$')
  CALLTIME_OUT=$work/$name.trace "$work/$name-d" $args > /dev/null 2>&1
  "$CC" calltime report "$work/$name.trace" > "$work/$name.report" 2>&1 || true
  echo "  plain root mean ${plain_mean} ns; tree (first lines of $work/$name.report):"
  head -12 "$work/$name.report" | sed 's/^/    /'
done
echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), $(date -u '+%Y-%m-%d %H:%M UTC')"
