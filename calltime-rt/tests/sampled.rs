//! Invocations sampled for cost (`sampler.rs`, issue 11): a root called often whose recorded invocations would spend
//! far more than the budget of their time in probes records only a random minority of them; the others run
//! unrecorded, counted (`sampled_for_cost`, neither dropped nor sampled out) and timed, so the root's count stays
//! exact and its mean can be taken over all of them.

mod common;

use calltime_rt::__private::{enter, enter_root, PlanInfo};
use common::{is_child, run_child, run_ok, Trace};
use std::hint::black_box;

static PLAN: PlanInfo = PlanInfo { id: "plan-sampled", table: "", functions: 4 };

const ROOTS: u64 = 200_000;
/// Nodes per invocation: the root, 29 calls.
const NODES: u64 = 30;

/// Function indices: 0 the root, 1 a step called 14 times, 2 the leaf under each step, 3 a last call.
fn root(seed: u64) -> u64 {
    let __calltime_guard = enter_root(0, &PLAN);
    let mut sum = seed;
    for i in 0..14 {
        sum = step(sum ^ i);
    }
    last(sum)
}

fn step(x: u64) -> u64 {
    let __calltime_guard = enter(1);
    leaf(x).wrapping_mul(31)
}

fn leaf(x: u64) -> u64 {
    let __calltime_guard = enter(2);
    black_box(x.rotate_left(7) ^ 0x5bd1e995)
}

fn last(x: u64) -> u64 {
    let __calltime_guard = enter(3);
    black_box(x)
}

/// (kept, dropped, sampled for cost) of the last `stats` line (its 16th field: docs/trace-format.md).
fn counts(trace: &Trace) -> (u64, u64, u64) {
    let f = &trace.stats_fields;
    assert_eq!(f.len(), 16, "the stats line of a sampled run has 16 fields: {f:?}");
    (f[1], f[3], f[15])
}

#[test]
fn a_busy_root_records_a_minority_within_the_budget() {
    if is_child("a_busy_root_records_a_minority_within_the_budget") {
        let mut sum = 0;
        for i in 0..ROOTS {
            sum ^= root(i);
        }
        black_box(sum);
        return;
    }
    // Retirement would take the tiny calls out of the trees (retire.rs tests that): kept off its minimum, so every
    // recorded invocation has its 30 nodes; the trees are kept whatever their number (no limit).
    let trace = run_ok(
        "a_busy_root_records_a_minority_within_the_budget",
        &[
            ("CALLTIME_RETIRE_MIN_CALLS", "1000000000000"),
            ("CALLTIME_MAX_INVOCATIONS", "1000000"),
            ("CALLTIME_ROTATE_BYTES", "0"),
        ],
    );
    let [seen, _, sampled_out, _, _] = trace.stats.expect("a stats line at exit");
    let (kept, dropped, for_cost) = counts(&trace);
    assert_eq!((seen, sampled_out), (ROOTS, 0));
    assert_eq!(kept + dropped + for_cost, seen, "every root is recorded or sampled for cost");
    assert!(for_cost > ROOTS / 2, "a minority is recorded: {for_cost} of {ROOTS} skipped");
    assert!(trace.header.iter().any(|l| l.contains(" cost_budget_pct=5")), "{:?}", trace.header);
    // The root's count is exact: the skipped ones are in its `sampled` record, a random 1 in 16 of them timed
    // (`every_skipped_invocation_is_counted_and_a_random_sample_timed` checks the share).
    let [[func, skipped, timed, timed_ns, tasks]] = trace.sampled[..] else {
        panic!("one sampled root: {:?}", trace.sampled)
    };
    assert_eq!((func, skipped, tasks), (0, for_cost, 0));
    assert!(timed > 0 && timed < skipped, "{timed} of {skipped} timed");
    assert_eq!(trace.invocations.len() as u64, kept);
    assert!(trace.invocations.iter().all(|inv| inv.node_count == NODES), "recorded invocations are whole");
    // The first ones are always recorded (a short run keeps every tree).
    let first: Vec<u64> = trace.invocations.iter().take(100).map(|inv| inv.seq).collect();
    assert_eq!(first, (0..100).collect::<Vec<_>>());
    // What recording cost, measured: the recorded invocations' time beyond a skipped one's mean, against the time
    // of all the roots. Under the budget (5%), with room for a loaded machine's noise.
    let recorded_ns: u64 = trace.invocations.iter().map(|inv| inv.duration).sum();
    let skipped_mean = timed_ns as f64 / timed as f64;
    let extra = recorded_ns as f64 - kept as f64 * skipped_mean;
    let share = extra / (recorded_ns as f64 + skipped as f64 * skipped_mean);
    assert!(share < 0.075, "recording took {:.1}% of the roots' time", share * 100.0);
}

/// Roots each spawned thread runs after the main thread learned the root's cost.
const PER_THREAD: u64 = 300;

/// A thread that starts on a root another thread already learned the cost of begins from what that thread learned:
/// it records a few invocations before sampling, not its first 100 again (on main before branch percost each of 4
/// threads recorded at least 100 of its 300, so 4 threads recorded 300 more than 1 for the same work).
#[test]
fn a_thread_starting_on_a_learned_root_records_few_first() {
    if is_child("a_thread_starting_on_a_learned_root_records_few_first") {
        for i in 0..3_000 {
            black_box(root(i));
        }
        std::thread::scope(|scope| {
            for t in 1..=4 {
                scope.spawn(move || {
                    for i in 0..PER_THREAD {
                        black_box(root(t * 1_000_000 + i));
                    }
                });
            }
        });
        return;
    }
    let trace = run_ok(
        "a_thread_starting_on_a_learned_root_records_few_first",
        &[("CALLTIME_RETIRE_MIN_CALLS", "1000000000000"), ("CALLTIME_MAX_INVOCATIONS", "1000000")],
    );
    let (kept, dropped, for_cost) = counts(&trace);
    assert_eq!((kept + dropped + for_cost, dropped), (3_000 + 4 * PER_THREAD, 0));
    let main = trace.invocations.first().expect("the main thread's first invocations are recorded").id;
    let mut per_thread = std::collections::BTreeMap::new();
    for inv in &trace.invocations {
        *per_thread.entry(inv.id).or_insert(0u64) += 1;
    }
    assert!(per_thread[&main] >= 100, "the first thread records its first 100: {per_thread:?}");
    let spawned: Vec<u64> = per_thread.iter().filter(|(&id, _)| id != main).map(|(_, &n)| n).collect();
    assert_eq!(spawned.len(), 4, "each spawned thread records its first invocations: {per_thread:?}");
    assert!(spawned.iter().all(|&n| n < 60), "recorded of {PER_THREAD} per spawned thread: {spawned:?}");
}

/// Roots of `writer_root` per half of the run, and how long each spins.
const WRITER_ROOTS: u64 = 20_000;
const WRITER_ROOT_NS: u64 = 2_000;

/// Root 0: 3 probed calls, then it spins `WRITER_ROOT_NS` (so a recorded invocation's probes and the model's writer
/// work, about 0.3 us, take a few percent of it).
fn writer_root(seed: u64) -> u64 {
    let __calltime_guard = enter_root(0, &PLAN);
    let start = std::time::Instant::now();
    let mut sum = step(seed);
    sum = step(sum);
    sum = last(sum);
    while (start.elapsed().as_nanos() as u64) < WRITER_ROOT_NS {
        sum = black_box(sum.rotate_left(3));
    }
    sum
}

/// Invocations recorded (not skipped for cost) in the second half of a run of `writer_root` whose writer spends
/// `slow_ns` more CPU per tree: the child prints it.
fn recorded_in_second_half(name: &str, slow_ns: u64) -> u64 {
    let (output, _) = run_child(
        name,
        &[
            ("CALLTIME_RETIRE_MIN_CALLS", "1000000000000"),
            ("CALLTIME_MAX_INVOCATIONS", "1000000"),
            ("SLOW_WRITER_NS", &slow_ns.to_string()),
        ],
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}{}", String::from_utf8_lossy(&output.stderr));
    let line = stdout.lines().find_map(|l| l.split("recorded in the second half: ").nth(1));
    line.and_then(|n| n.trim().parse().ok()).unwrap_or_else(|| panic!("no count in the child's output: {stdout}"))
}

/// The budget charges a recorded invocation what the writer measured it cost (its thread's CPU per unit written)
/// when that is more than the model: a writer slowed on purpose by 100 us of CPU a tree (about 14 us a unit, where
/// the model says well under 1 us) must make the sampler record far fewer (a period of about 1,000 where the model
/// gives about 100 in the test's unoptimised build). Ignoring the measure, both runs record alike.
#[test]
fn a_slow_writer_lowers_how_many_invocations_are_recorded() {
    let name = "a_slow_writer_lowers_how_many_invocations_are_recorded";
    if is_child(name) {
        let slow: u64 = std::env::var("SLOW_WRITER_NS").ok().and_then(|v| v.parse().ok()).unwrap_or(0);
        calltime_rt::__private::slow_writer(slow);
        let recorded = || {
            let s = calltime_rt::stats();
            s.seen - s.sampled_for_cost
        };
        // The first half lets the writer measure itself and the period settle. Its 40 ms can end before the
        // writer's first wakes have written enough to measure (`WRITER_MIN_UNITS`) on an idle machine, where the
        // test failed 2 times in 3: the pause gives the writer its wakes (every 20 ms) before the second half.
        for i in 0..WRITER_ROOTS {
            black_box(writer_root(i));
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
        let before = recorded();
        for i in 0..WRITER_ROOTS {
            black_box(writer_root(i));
        }
        println!("recorded in the second half: {}", recorded() - before);
        return;
    }
    let normal = recorded_in_second_half(name, 0);
    let slowed = recorded_in_second_half(name, 100_000);
    assert!(normal >= 100, "a writer at its own pace: {normal} of {WRITER_ROOTS} recorded");
    assert!(slowed * 4 < normal, "a slowed writer: {slowed} recorded, against {normal} at its own pace");
}

#[test]
fn exact_records_every_invocation() {
    if is_child("exact_records_every_invocation") {
        for i in 0..20_000 {
            black_box(root(i));
        }
        return;
    }
    let trace = run_ok("exact_records_every_invocation", &[("CALLTIME_EXACT", "1")]);
    let [seen, kept, _, dropped, _] = trace.stats.expect("a stats line at exit");
    assert_eq!(seen, 20_000);
    assert_eq!(kept + dropped, seen, "none sampled for cost");
    assert!(trace.sampled.is_empty());
    assert!(trace.header.iter().any(|l| l.contains(" cost_budget_pct=0")), "{:?}", trace.header);
}

/// Roots run by `a_threshold_switched_on_while_running_records_every_invocation` after the switch.
const AFTER_SWITCH: u64 = 5_000;

/// `ctl slower-than` while the program runs, after sampling for cost has begun: from then on every invocation is
/// recorded (as with a threshold set at the start), so that a slow one is kept, not skipped and replaced by the
/// next. The child writes the command file itself, as `ctl` does, and waits for the status file to say it applied.
#[test]
fn a_threshold_switched_on_while_running_records_every_invocation() {
    let name = "a_threshold_switched_on_while_running_records_every_invocation";
    if is_child(name) {
        for i in 0..20_000 {
            black_box(root(i));
        }
        let dir = std::path::PathBuf::from(std::env::var_os("CALLTIME_CONTROL_DIR").unwrap());
        let pid = std::process::id();
        let tmp = dir.join(format!("{pid}.cmd.tmp"));
        // 50 ns: every 30-node invocation is slower, so every recorded one is kept.
        std::fs::write(&tmp, "1 slower-than 50\n").unwrap();
        std::fs::rename(&tmp, dir.join(format!("{pid}.cmd"))).unwrap();
        let status = dir.join(format!("{pid}.status"));
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !std::fs::read_to_string(&status).is_ok_and(|s| s.lines().any(|l| l == "applied=1")) {
            assert!(std::time::Instant::now() < deadline, "the runtime did not apply the command");
            // Roots keep the writer's threshold in ticks published; none of these is counted below.
            black_box(root(0));
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        for i in 0..AFTER_SWITCH {
            black_box(root(i));
        }
        return;
    }
    let dir = std::env::temp_dir().join(format!("calltime-sampled-control-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let trace = run_ok(
        name,
        &[
            ("CALLTIME_RETIRE_MIN_CALLS", "1000000000000"),
            ("CALLTIME_MAX_INVOCATIONS", "1000000"),
            ("CALLTIME_ROTATE_BYTES", "0"),
            ("CALLTIME_CONTROL_DIR", dir.to_str().unwrap()),
        ],
    );
    let _ = std::fs::remove_dir_all(&dir);
    let [seen, ..] = trace.stats.expect("a stats line at exit");
    let (kept, dropped, for_cost) = counts(&trace);
    assert!(for_cost > 0, "sampling for cost had begun before the switch");
    // The last `AFTER_SWITCH` roots are all recorded (kept, or dropped when the writer's queue was full): a sampler
    // still skipping would have recorded a few hundred of them.
    assert!(seen - for_cost >= AFTER_SWITCH, "{kept} kept, {dropped} dropped, {for_cost} sampled for cost of {seen}");
}

static WIDE_PLAN: PlanInfo = PlanInfo { id: "plan-sampled-wide", table: "", functions: 1 + WIDE };

/// Calls per invocation of `wide_root`, each of its own function: 1 to `WIDE`, in an order that turns every
/// invocation.
const WIDE: u32 = 800;
/// Invocations of `wide_root` timed by `the_budget_holds_for_the_whole_cost_of_a_recorded_invocation`.
const WIDE_ROOTS: u64 = 2_000;

/// Root 0 of `WIDE_PLAN`: each call of its own function, in an order given by `i` (a rotation by `37 i`), so
/// that no node of a recorded invocation folds into the whole-run aggregate where the last one's did: each finds
/// its call path among the root's 800 (`aggregate::Trie::child`), a root exit that costs far more than its probes.
fn wide_root(i: u64) -> u64 {
    let __calltime_guard = enter_root(0, &WIDE_PLAN);
    let mut sum = i;
    for k in 0..WIDE {
        sum = wide_call(1 + ((u64::from(k) + i.wrapping_mul(37)) % u64::from(WIDE)) as u32, sum);
    }
    sum
}

fn wide_call(index: u32, x: u64) -> u64 {
    let __calltime_guard = enter(index);
    wide_work(x)
}

fn wide_work(x: u64) -> u64 {
    let mut v = x;
    for _ in 0..40 {
        v = black_box(v.rotate_left(5) ^ 0x9e37_79b9);
    }
    v
}

/// The budget is over what a recorded invocation costs its program, measured: its root's exit included (here
/// the whole-run aggregate's fold of 800 nodes on paths it must look for, which costs far more than their probes).
/// Each root call is timed from outside (its exit's work done before it returns) and known recorded or skipped
/// from the sampler's count of skipped invocations (`stats`), so that what the recorded ones cost beyond a skipped
/// one (medians of each kind) is measured against the roots' time. A sampler that estimated a recorded invocation's
/// cost from its nodes (twice their probes' cost, plus 500 ns) recorded 12% of them here, which took 23-28% of the
/// roots' time (docs/performance.md, "Tenth round").
#[test]
fn the_budget_holds_for_the_whole_cost_of_a_recorded_invocation() {
    if is_child("the_budget_holds_for_the_whole_cost_of_a_recorded_invocation") {
        let mut seed = 1;
        // Past the first invocations (always recorded) and the sampler's first estimates.
        for _ in 0..200 {
            seed ^= black_box(wide_root(seed));
        }
        let (mut recorded, mut skipped) = (Vec::new(), Vec::new());
        for _ in 0..WIDE_ROOTS {
            let before = calltime_rt::stats().sampled_for_cost;
            let start = std::time::Instant::now();
            seed ^= black_box(wide_root(seed));
            let ns = start.elapsed().as_nanos() as u64;
            match calltime_rt::stats().sampled_for_cost == before {
                true => recorded.push(ns),
                false => skipped.push(ns),
            }
        }
        // Medians: a time slice lost inside one of a few dozen recorded invocations would move a sum.
        let median = |v: &mut Vec<u64>| {
            v.sort_unstable();
            v.get(v.len() / 2).copied().unwrap_or(0)
        };
        let (n_recorded, n_skipped) = (recorded.len(), skipped.len());
        let (recorded_ns, skipped_ns) = (median(&mut recorded), median(&mut skipped));
        println!("\nwide-cost {n_recorded} {recorded_ns} {n_skipped} {skipped_ns}");
        return;
    }
    let (output, _) = run_child(
        "the_budget_holds_for_the_whole_cost_of_a_recorded_invocation",
        &[("CALLTIME_RETIRE_MIN_CALLS", "1000000000000"), ("CALLTIME_ROTATE_BYTES", "0")],
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "child failed: {stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    let line = stdout.lines().find_map(|l| l.strip_prefix("wide-cost ")).expect("the child's timings");
    let [recorded, recorded_ns, skipped, skipped_ns] =
        line.split(' ').map(|n| n.parse::<f64>().unwrap()).collect::<Vec<_>>()[..]
    else {
        panic!("four figures: {line}")
    };
    // A recorded invocation here costs about as much as a plain root or more (its fold alone), so a budget of 5%
    // over its measured cost records a few percent: 12-66 of 2,000 at load 16-19. The modelled cost, far under the
    // real one, recorded 242-257, which took 23-28% of the roots' time. How much a recorded one costs beyond a
    // skipped one depends on the build and the machine (158 recorded, 2.2% of the time, in a fresh CI checkout
    // where the roots' own work weighs more), and the times vary on a loaded machine (a fold that waits for the
    // writer's snapshot, a lost time slice): the sampler fails only when it records many AND they cost well over
    // the budget.
    let extra = recorded * (recorded_ns - skipped_ns);
    let share = extra / (recorded * recorded_ns + skipped * skipped_ns);
    assert!(
        recorded < WIDE_ROOTS as f64 * 0.075 || share < 0.075,
        "{recorded} of {WIDE_ROOTS} recorded (medians: recorded {recorded_ns} ns, skipped {skipped_ns} ns; {:.1}% of the \
         roots' time)",
        share * 100.0
    );
}

static TIMING_PLAN: PlanInfo = PlanInfo { id: "plan-sampled-timing", table: "", functions: 2 };

/// Invocations of `timing_root` in `every_skipped_invocation_is_counted_and_a_random_sample_timed`.
const TIMING_ROOTS: u64 = 40_000;
/// Every this many invocations of `timing_root`, one is `LONG_NS` long, the others `SHORT_NS`: a period equal to the
/// sampler's timing period (`TIME_EVERY`), so that a sample timed at fixed gaps would see one phase only (the long
/// ones always, or never: a mean 6.4x or 0.64x the true one).
const PHASE: u64 = 16;
const SHORT_NS: u64 = 2_000;
const LONG_NS: u64 = 20_000;

/// Root 0 of `TIMING_PLAN`: spins until `ns` have passed (so its duration is known whatever the machine), after 30
/// probed calls of function 1 (which make a recorded invocation cost far more than the budget of its time).
fn timing_root(ns: u64) -> u64 {
    let __calltime_guard = enter_root(0, &TIMING_PLAN);
    let start = std::time::Instant::now();
    let mut sum = ns;
    for i in 0..30 {
        sum = timing_step(sum ^ i);
    }
    while (start.elapsed().as_nanos() as u64) < ns {
        sum = black_box(sum.rotate_left(3));
    }
    sum
}

fn timing_step(x: u64) -> u64 {
    let __calltime_guard = enter(1);
    black_box(x.wrapping_mul(31))
}

/// Every invocation skipped for cost is counted, and a random 1 in 16 of them has its root timed (on main before
/// branch smallroot, every one was: two clock reads each). The skipped ones' mean root time from that sample (the
/// `sampled` record's `timed_ns / timed`) is their true mean, measured from outside by the child, within a few
/// standard errors, on a workload whose long invocations come at the sampling's own period.
#[test]
fn every_skipped_invocation_is_counted_and_a_random_sample_timed() {
    let name = "every_skipped_invocation_is_counted_and_a_random_sample_timed";
    if is_child(name) {
        // Skipped invocations: all of them, and apart those that lost time to the machine (over twice the longest
        // root: a time slice lost inside), which can only push a mean up.
        let (mut skipped, mut kept_n, mut kept_ns, mut kept_sq, mut lost_ns) = (0u64, 0u64, 0f64, 0f64, 0f64);
        let mut sum = 0;
        for i in 0..TIMING_ROOTS {
            let ns = if i % PHASE == 5 { LONG_NS } else { SHORT_NS };
            let before = calltime_rt::stats().sampled_for_cost;
            let start = std::time::Instant::now();
            sum ^= timing_root(ns);
            let took = start.elapsed().as_nanos() as f64;
            if calltime_rt::stats().sampled_for_cost != before {
                skipped += 1;
                if took > 2.0 * LONG_NS as f64 {
                    lost_ns += took;
                } else {
                    kept_n += 1;
                    kept_ns += took;
                    kept_sq += took * took;
                }
            }
        }
        black_box(sum);
        println!("\nskipped {skipped} {kept_n} {kept_ns} {kept_sq} {lost_ns}");
        return;
    }
    let (output, text) =
        run_child(name, &[("CALLTIME_RETIRE_MIN_CALLS", "1000000000000"), ("CALLTIME_MAX_INVOCATIONS", "1000000")]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "child failed: {stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    let line = stdout.lines().find_map(|l| l.strip_prefix("skipped ")).expect("the child's timings");
    let [n, kept_n, kept_ns, kept_sq, lost_ns] =
        line.split(' ').map(|v| v.parse::<f64>().unwrap()).collect::<Vec<_>>()[..]
    else {
        panic!("five figures: {line}")
    };
    let trace = common::parse(&text);
    let [seen, ..] = trace.stats.expect("a stats line at exit");
    let (kept, dropped, for_cost) = counts(&trace);
    assert_eq!(seen, TIMING_ROOTS);
    assert_eq!(kept + dropped + for_cost, seen, "every root is recorded or sampled for cost");
    let [[_, skipped, timed, timed_ns, tasks]] = trace.sampled[..] else { panic!("one root: {:?}", trace.sampled) };
    assert_eq!((skipped, tasks), (for_cost, 0));
    assert_eq!(skipped as f64, n, "the child saw as many skipped as the trace counts");
    assert!(skipped > TIMING_ROOTS / 2, "most are skipped: {skipped}");
    // 1 in 16 on average, at random gaps: well within 1 in 8 and 1 in 32 over thousands.
    assert!(timed > skipped / 32 && timed < skipped / 8, "{timed} of {skipped} timed");
    // The true mean of the skipped invocations the machine left alone, and its standard error over a sample of
    // `timed`. A time slice lost inside a root can only raise the sampled mean, by at most all such time over the
    // timed ones (when every slow one was timed): so the estimate is bounded below tightly (a sample that missed
    // the long invocations, as fixed gaps could, reads 0.64x) and above by that much more (fixed gaps that always
    // hit them read 6.4x).
    let mean = kept_ns / kept_n;
    let standard_error = (kept_sq / kept_n - mean * mean).max(0.0).sqrt() / (timed as f64).sqrt();
    let estimate = timed_ns as f64 / timed as f64;
    let (low, high) = (0.9 * mean - 4.0 * standard_error, 1.1 * mean + 4.0 * standard_error + lost_ns / timed as f64);
    assert!(
        low < estimate && estimate < high,
        "the sampled mean {estimate:.0} ns against the true {mean:.0} ns (allowed {low:.0}-{high:.0} ns; {timed} of \
         {skipped} timed)"
    );
}

static TASK_PLAN: PlanInfo = PlanInfo { id: "plan-sampled-tasks", table: "", functions: 2 };

/// Root task 0 of `TASK_PLAN`, as the rewrite writes an async root: 30 probed calls of function 1, a yield (so it
/// is polled twice), then a spin until `ns` have passed since its first poll.
async fn timing_task(ns: u64) -> u64 {
    calltime_rt::__private::instrument_root(0, &TASK_PLAN, async move {
        let start = std::time::Instant::now();
        let mut sum = ns;
        for i in 0..30 {
            sum = task_step(sum ^ i);
        }
        YieldOnce(false).await;
        while (start.elapsed().as_nanos() as u64) < ns {
            sum = black_box(sum.rotate_left(3));
        }
        sum
    })
    .await
}

fn task_step(x: u64) -> u64 {
    let __calltime_guard = enter(1);
    black_box(x.wrapping_mul(31))
}

/// Pending once, then ready.
struct YieldOnce(bool);

impl std::future::Future for YieldOnce {
    type Output = ();
    fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<()> {
        if self.0 {
            return std::task::Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        std::task::Poll::Pending
    }
}

fn block_on<F: std::future::Future>(fut: F) -> F::Output {
    let mut fut = std::pin::pin!(fut);
    fn noop_raw() -> std::task::RawWaker {
        fn clone(_: *const ()) -> std::task::RawWaker {
            noop_raw()
        }
        fn noop(_: *const ()) {}
        static VTABLE: std::task::RawWakerVTable = std::task::RawWakerVTable::new(clone, noop, noop, noop);
        std::task::RawWaker::new(std::ptr::null(), &VTABLE)
    }
    // SAFETY: the vtable's functions do nothing and never read the data pointer.
    let waker = unsafe { std::task::Waker::from_raw(noop_raw()) };
    let mut cx = std::task::Context::from_waker(&waker);
    loop {
        if let std::task::Poll::Ready(out) = fut.as_mut().poll(&mut cx) {
            return out;
        }
    }
}

/// Root tasks skipped for cost are timed at random as a thread's roots are (from the first poll to the end): the
/// hyper and async-executor servers' roots were never timed when skipped, so their mean was over the recorded
/// tasks only (each worker's first 100, cold, among them). Now `tasks` (never timed) is 0 and a random 1 in 16 of
/// the skipped ones carries the root's mean over the whole run.
#[test]
fn root_tasks_skipped_for_cost_are_timed_at_random_too() {
    let name = "root_tasks_skipped_for_cost_are_timed_at_random_too";
    if is_child(name) {
        let mut sum = 0;
        for _ in 0..TIMING_ROOTS {
            sum ^= block_on(timing_task(SHORT_NS));
        }
        black_box(sum);
        return;
    }
    let trace =
        run_ok(name, &[("CALLTIME_RETIRE_MIN_CALLS", "1000000000000"), ("CALLTIME_MAX_INVOCATIONS", "1000000")]);
    let [seen, ..] = trace.stats.expect("a stats line at exit");
    let (kept, dropped, for_cost) = counts(&trace);
    assert_eq!(seen, TIMING_ROOTS);
    assert_eq!(kept + dropped + for_cost, seen, "every root task is recorded or sampled for cost");
    let [[_, skipped, timed, timed_ns, tasks]] = trace.sampled[..] else { panic!("one root: {:?}", trace.sampled) };
    assert_eq!((skipped, tasks), (for_cost, 0), "no root task is left untimed by rule");
    assert!(skipped > TIMING_ROOTS / 2, "most are skipped: {skipped}");
    assert!(timed > skipped / 32 && timed < skipped / 8, "{timed} of {skipped} timed");
    // Each spins at least SHORT_NS from its first poll: the sampled mean is no less (the clocks differ by little),
    // and a loaded machine adds time slices, never takes any.
    let estimate = timed_ns as f64 / timed as f64;
    assert!(estimate > 0.9 * SHORT_NS as f64, "the sampled mean {estimate:.0} ns under {SHORT_NS} ns");
}
