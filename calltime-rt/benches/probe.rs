//! Cost of one probed call, against the floor (two clock reads) and other instrumentation, in one run:
//! `cargo bench -p calltime-rt --bench probe`. Results and method: docs/performance.md, "Runtime probe cost".

use calltime_rt::__private::{
    enter, enter_root, hold_writer, init_clock, now, quiet_now, retire_now, run, run_quiet_in, PlanInfo, States,
};
use divan::{black_box, Bencher};

static PLAN: PlanInfo = PlanInfo { id: "bench", table: "", functions: 5 };
/// The state table the rewrite declares in each crate root (`__CALLTIME_STATE`), for the `run_quiet_in` rows.
static STATES: States<5> = States::new();

/// Probes per root invocation in the recording benchmark: below the default fold (4096 calls), so every probe is
/// stored as its own node (96 KB of nodes); the root is then restarted, which adds well under 0.1 ns per probe.
const PROBES_PER_INVOCATION: u32 = 4_000;
/// Probes per root invocation in the folded benchmark: past the first 4096, each is counted on its call path and
/// 1 in 64 is timed.
const FOLDED_PROBES_PER_INVOCATION: u32 = 1_000_000;

fn main() {
    std::env::set_var("CALLTIME_OUT", std::env::temp_dir().join("calltime-rt-bench.trace"));
    // The benchmarks start millions of invocations; past the default maximum (100000) probes would stop recording.
    std::env::set_var("CALLTIME_MAX_INVOCATIONS", u64::MAX.to_string());
    // Probes never retire by themselves here, so each benchmark measures the kind it names; `retired_probe_pair`
    // retires its function explicitly.
    std::env::set_var("CALLTIME_EXACT", "1");
    init_clock();
    // Trees are handed off but not formatted, so the writer thread does not compete for the CPU; once the queue is
    // full, finished invocations are dropped and their buffers reused.
    hold_writer(true);
    divan::main();
}

/// A function as written.
#[inline(never)]
fn bare_fn() {
    black_box(());
}

/// The same function as cargo-calltime's rewrite leaves it: a guard declared first.
#[inline(never)]
fn probed_fn() {
    let __calltime_guard = enter(1);
    black_box(());
}

/// A function whose probe `retired_probe_pair` retires.
#[inline(never)]
fn retired_fn() {
    let __calltime_guard = enter(2);
    black_box(());
}

/// A function whose probe `quiet_probe_pair` retires and quiets.
#[inline(never)]
fn quiet_fn() {
    let __calltime_guard = enter(3);
    black_box(());
}

/// `probed_fn` as the rewrite leaves a body that fits a closure: `run(index, move || { body })`.
#[inline(never)]
fn run_probed_fn() {
    run(1, move || {
        black_box(());
    })
}

/// `quiet_fn`'s body in the runtime's closure.
#[inline(never)]
fn run_quiet_fn() {
    run(3, move || {
        black_box(());
    })
}

/// `probed_fn` as the rewrite leaves a body under `IN_PLACE_BODY` bytes: `run_quiet_in(&crate::__CALLTIME_STATE,
/// index, move || { body })`.
#[inline(never)]
fn run_quiet_in_probed_fn() {
    run_quiet_in(&STATES, 1, move || {
        black_box(());
    })
}

/// A function whose `run_quiet_in` probe `run_quiet_in_quiet_probe_pair` quiets.
#[inline(never)]
fn run_quiet_in_quiet_fn() {
    run_quiet_in(&STATES, 4, move || {
        black_box(());
    })
}

/// A bare `#[inline(never)]` call: what every probed function costs anyway.
#[divan::bench]
fn bare_call() {
    bare_fn();
}

/// Two reads of the runtime's clock (the TSC where invariant): the floor of any enter/exit timing.
#[divan::bench]
fn two_clock_reads() -> (u64, u64) {
    (black_box(now()), black_box(now()))
}

/// A probed call inside a root invocation: the node is stored and its exit patched (subtract `bare_call` for the
/// probe pair alone). A fixed sample size, as for `folded_probe_pair`: divan otherwise picks one iteration per
/// sample here, below the timer's precision. Each restart of the root folds its 4,000 nodes into the whole-run
/// aggregate, about 3.5 ns a call of this row; with `CALLTIME_AGGREGATE=0` the row reads two clock reads
/// (docs/performance.md, "Tenth round").
#[divan::bench(sample_size = 4096)]
fn recording_probe_pair(bencher: Bencher) {
    // Steady state: every buffer the runtime may allocate exists and has been written once (first-touch page
    // faults are a start-up cost), and the thread's buffer is reused for each invocation.
    exhaust_spare_recorders();
    probed_calls_in_invocations(bencher, PROBES_PER_INVOCATION, 200);
}

/// With the writer held, each invocation too big for the thread's outbox is handed over in its buffer and the
/// thread takes a fresh one (allocated, grown and first touched) until the spare budget (`CALLTIME_QUEUE` + 65,
/// 1089 by default) is spent; after that the thread's buffer is reused. A warm-up of 200 invocations left the
/// measured ones each on a fresh buffer: 33.5 ns per recorded pair against 20.2 ns once the budget is spent (the
/// same bench with `CALLTIME_QUEUE=1`), against 20.2 ns for two clock reads. Spent here with invocations just over
/// the outbox's limit (2048 nodes by default), about 55 MB touched once.
fn exhaust_spare_recorders() {
    const SPARE_RECORDERS: u32 = 1024 + 65 + 8;
    for _ in 0..SPARE_RECORDERS {
        let _root = enter_root(0, &PLAN);
        for _ in 0..2_100 {
            probed_fn();
        }
    }
}

/// `recording_probe_pair` with the body in the runtime's closure (`run`): one more call, to `run_probed`.
#[divan::bench(sample_size = 4096)]
fn run_recording_probe_pair(bencher: Bencher) {
    exhaust_spare_recorders();
    calls_in_invocations(bencher, run_probed_fn, PROBES_PER_INVOCATION, 200);
}

/// Benchmarks `probed_fn` inside root invocations of `per_invocation` calls each, after `warm_up` such invocations.
fn probed_calls_in_invocations(bencher: Bencher, per_invocation: u32, warm_up: u32) {
    calls_in_invocations(bencher, probed_fn, per_invocation, warm_up);
}

/// Benchmarks `probed` inside root invocations of `per_invocation` calls each, after `warm_up` such invocations.
fn calls_in_invocations(bencher: Bencher, probed: fn(), per_invocation: u32, warm_up: u32) {
    for _ in 0..warm_up {
        let _root = enter_root(0, &PLAN);
        for _ in 0..per_invocation {
            probed();
        }
    }
    let mut root = Some(enter_root(0, &PLAN));
    let mut probes = 0;
    bencher.bench_local(|| {
        probed();
        probes += 1;
        if probes == per_invocation {
            probes = 0;
            root = None;
            root = Some(enter_root(0, &PLAN));
        }
    });
    drop(root);
}

/// A probed call inside a big invocation, after it folded into call paths: counted on its path, timed 1 in 64
/// (the average over both kinds of call; subtract `bare_call` for the probe pair alone). A fixed sample size: with
/// the few iterations divan otherwise picks for it, a sample's timer reads outweigh the calls.
#[divan::bench(sample_size = 4096)]
fn folded_probe_pair(bencher: Bencher) {
    probed_calls_in_invocations(bencher, FOLDED_PROBES_PER_INVOCATION, 3);
}

/// A probed call of a retired function inside a root invocation: counted, not recorded (subtract `bare_call`).
#[divan::bench]
fn retired_probe_pair(bencher: Bencher) {
    retire_now(2);
    let root = enter_root(0, &PLAN);
    bencher.bench_local(retired_fn);
    drop(root);
}

/// A probed call of a retired function that went quiet (no longer counted) inside a root invocation: a byte load and
/// a branch (subtract `bare_call`).
#[divan::bench]
fn quiet_probe_pair(bencher: Bencher) {
    quiet_now(3);
    let root = enter_root(0, &PLAN);
    bencher.bench_local(quiet_fn);
    drop(root);
}

/// `quiet_probe_pair` with the body in the runtime's closure (`run`): the byte's test, no guard.
#[divan::bench]
fn run_quiet_probe_pair(bencher: Bencher) {
    quiet_now(3);
    let root = enter_root(0, &PLAN);
    bencher.bench_local(run_quiet_fn);
    drop(root);
}

/// `probe_outside_root` with the body in the runtime's closure (`run`).
#[divan::bench]
fn run_outside_root() {
    run_probed_fn();
}

/// `recording_probe_pair` with `run_quiet_in`: the byte's compare, then one call to `run_unquiet_in`.
#[divan::bench(sample_size = 4096)]
fn run_quiet_in_recording_probe_pair(bencher: Bencher) {
    exhaust_spare_recorders();
    calls_in_invocations(bencher, run_quiet_in_probed_fn, PROBES_PER_INVOCATION, 200);
}

/// `quiet_probe_pair` with `run_quiet_in`: one compare of the byte in memory and a branch.
#[divan::bench]
fn run_quiet_in_quiet_probe_pair(bencher: Bencher) {
    // A recorded call first: the crate's table registers there, as in a program, and then follows `quiet_now`.
    {
        let _root = enter_root(0, &PLAN);
        run_quiet_in_quiet_fn();
    }
    quiet_now(4);
    let root = enter_root(0, &PLAN);
    bencher.bench_local(run_quiet_in_quiet_fn);
    drop(root);
}

/// `probe_outside_root` with `run_quiet_in`.
#[divan::bench]
fn run_quiet_in_outside_root() {
    run_quiet_in_probed_fn();
}

/// A probed call with no invocation in progress: a thread-local load and a branch (subtract `bare_call`).
#[divan::bench]
fn probe_outside_root(bencher: Bencher) {
    // Past the first call, which registers the crate's table and starts the runtime: when divan's calibration met
    // it, it judged one call to take microseconds and sampled one call at a time (timer-bound: 19.7 ns read).
    for _ in 0..300 {
        probed_fn();
    }
    bencher.bench_local(probed_fn);
}

/// A whole root invocation with no other probe: start (sampling and admission counters, buffer reset) and end
/// (buffer swap under the pool lock and queue hand-off; here, with the writer held, mostly the drop path).
#[divan::bench(sample_size = 1000)]
fn empty_root_invocation(bencher: Bencher) {
    // Past start-up: every buffer the runtime may allocate exists (the first ones cost an allocation each).
    for _ in 0..300 {
        drop(enter_root(0, &PLAN));
    }
    bencher.bench_local(|| drop(black_box(enter_root(0, &PLAN))));
}

/// A root and 9 probed calls (10 nodes), as a search tool's root per file: the whole cost of an invocation to the
/// thread that runs it (start, admission, 10 probe pairs, completion and hand-off to the writer), with the writer
/// running (on another core when there is one) and invocations past what it keeps up with dropped. Subtract 10 x
/// `bare_call` for the probes' share of what the functions cost anyway.
#[divan::bench(threads = [1, 4], sample_size = 1000)]
fn root_invocation_10_nodes(bencher: Bencher) {
    hold_writer(false);
    bencher.bench(ten_node_root);
    hold_writer(true);
}

#[inline(never)]
fn ten_node_root() {
    let _root = enter_root(0, &PLAN);
    for _ in 0..9 {
        probed_fn();
    }
}

/// A `tracing` span created and entered under a `tracing_subscriber` registry. (A fixed sample size: the first,
/// allocating, iteration would otherwise make divan pick one iteration per sample, below the timer's precision.)
#[divan::bench(sample_size = 1000)]
fn tracing_span_registry(bencher: Bencher) {
    let subscriber = tracing_subscriber::registry();
    tracing::subscriber::with_default(subscriber, || {
        bencher.bench_local(|| {
            let span = tracing::info_span!("probe");
            let _entered = black_box(span.enter());
        });
    });
}

struct DiscardReporter;

impl fastrace::collector::Reporter for DiscardReporter {
    fn report(&mut self, spans: Vec<fastrace::collector::SpanRecord>) {
        black_box(spans);
    }
}

/// A `fastrace` `LocalSpan` under a root span (the root is restarted like ours, below fastrace's local span limit).
#[divan::bench]
fn fastrace_local_span(bencher: Bencher) {
    fastrace::set_reporter(DiscardReporter, fastrace::collector::Config::default());
    let new_root = || {
        let span = fastrace::Span::root("root", fastrace::collector::SpanContext::random());
        let guard = span.set_local_parent();
        (span, guard)
    };
    let mut root = Some(new_root());
    let mut spans = 0;
    bencher.bench_local(|| {
        drop(black_box(fastrace::local::LocalSpan::enter_with_local_parent("probe")));
        spans += 1;
        if spans == 5_000 {
            spans = 0;
            // The guard drops before its span.
            if let Some((span, guard)) = root.take() {
                drop(guard);
                drop(span);
            }
            root = Some(new_root());
        }
    });
    drop(root);
}
