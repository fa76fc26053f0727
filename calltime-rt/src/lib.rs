//! Runtime of [cargo-calltime](https://crates.io/crates/cargo-calltime): records one call tree per invocation of a
//! root function, at the cost of two clock reads per instrumented call.
//!
//! You normally never write code against this crate: `cargo calltime` rewrites a shadow copy of your workspace so that
//! every picked function starts with a probe (`::calltime_rt::__private::enter_in(&crate::__CALLTIME_STATE, 7)`, an
//! index assigned by the tool's plan, reading the function's state byte from a table the copy declares in each crate
//! root; or, for a body whose parameters drop nothing, `run_quiet_in(&crate::__CALLTIME_STATE, 7, move || { body })`, whose quiet calls run the body
//! with no guard, or `quiet_in!(&crate::__CALLTIME_STATE, 7, { body })`, which writes a body that declares no item
//! twice), adds this crate as a path dependency, builds and runs the program, then reads the trace file this crate
//! writes. The file format is documented in `docs/trace-format.md` of the cargo-calltime repository.
//!
//! # What is recorded
//! An *invocation* begins when a root function is entered on a thread (or an async task) that has no invocation in
//! progress, and ends when that root returns. Every instrumented call made under it becomes a node of its tree
//! (function index, start, duration, panicked/cancelled flags). When the root returns, the tree is handed to a writer
//! thread that appends it to the trace file and flushes it. Probes entered outside any invocation record nothing and
//! cost two loads (the function's retirement byte, then the thread-local context) and two branches.
//!
//! A big invocation *folds*: past `CALLTIME_FOLD_AFTER` calls, its nodes are merged into one node per call path
//! (every call of a function under the same chain of ancestors) and each later call adds one to its path's count.
//! Counts stay exact; 1 in `CALLTIME_TIME_SAMPLE` calls of a path is timed, at random gaps independent of the
//! calls' durations (so the estimates are unbiased), so the common call costs a counter and a frame instead of two
//! clock reads, and a tree of millions of calls stays complete in a bounded buffer.
//!
//! Probes *retire* themselves: a leaf function observed over `CALLTIME_RETIRE_MIN_CALLS` calls whose mean time,
//! less the probes' own cost, is under `CALLTIME_RETIRE_FACTOR` times what its probe costs its caller stops being
//! recorded for the rest of the process; its calls are then only counted, exactly, per invocation (a load of a
//! global byte, a branch and a thread-local increment). At start-up the runtime calibrates what each kind of probe
//! costs on this machine (about 0.2 ms), and writes it in the trace so the tool can subtract it.
//!
//! Async functions are wrapped in [`Instrumented`]: it enters on every poll and leaves when the poll returns, so the
//! node of an async function spans its first poll to its completion, its children are what it called during its
//! polls, other tasks polled on the same thread never become its children, and a task moving between threads keeps
//! one tree (a root task records into its own context, which travels with the future).
//!
//! Work a probed function hands to another thread or task (`thread::spawn`, rayon, `tokio::spawn`) is wrapped by
//! the rewrite (`__private::ticket`, `adopt`, `adopt_future`): at the spawn, inside an invocation, the spawning
//! call is noted (outside one, a thread-local load); where the work runs it records into a buffer of its own,
//! handed to the invocation when it ends and written after its nodes. See `adopt.rs`.
//!
//! # Public API
//! - [`flush`]: write every completed invocation still queued (every thread's), then a `stats` line, before returning.
//! - [`stats`]: this process's counters ([`Stats`]).
//! - [`trace_path`]: where this process writes its trace (known once a root was entered).
//! - [`Guard`] and [`Instrumented`]: what the probes return. They are created only by the hidden `__private`
//!   functions that the rewritten code calls.
//!
//! # Settings (environment variables, read once, at the first root entry)
//! | variable | default | meaning |
//! |---|---|---|
//! | `CALLTIME_OUT` | `calltime-<pid>.trace` in the current directory | trace file path (created or truncated) |
//! | `CALLTIME_NODE_CAP` | 100000 | nodes stored per invocation (calls, or call paths once folded); later calls are counted in `truncated_calls` |
//! | `CALLTIME_FOLD_AFTER` | 4096 | calls recorded one node each before an invocation folds into call paths; 0 never folds |
//! | `CALLTIME_TIME_SAMPLE` | 64 | in a folded invocation, time 1 in N calls of a path, at random gaps; 1 times every call |
//! | `CALLTIME_MIN_NS` | 0 | nodes shorter than this are left out with their subtrees and counted in `filtered` |
//! | `CALLTIME_SAMPLE` | 1 | record 1 in N root invocations (the others are counted as `sampled_out`) |
//! | `CALLTIME_MAX_INVOCATIONS` | 100000 (no limit with the three below) | invocations recorded at most; later ones are counted as `dropped` |
//! | `CALLTIME_SLOWER_THAN_NS` | 0 | keep only invocations whose root took longer; the others are counted as `left_out_fast` |
//! | `CALLTIME_KEEP_SLOWEST` | 0 | keep the N slowest invocations of the run (held by the writer, written at exit); the others are counted as `left_out_unselected` |
//! | `CALLTIME_KEEP_SAMPLE` | 0 | keep a uniform random sample of N invocations over the whole run (written at exit); ignored with `CALLTIME_KEEP_SLOWEST` |
//! | `CALLTIME_MAX_DEPTH` | 4096 | frames stored per invocation in depth; deeper calls are counted in `truncated_calls` |
//! | `CALLTIME_QUEUE` | 1024 | what may wait for the writer, per thread: an outbox of 8 x N node slots (up to 16384), into which invocations of up to 2 x N nodes are copied (bigger ones take one slot and their buffer); when full, invocations are dropped and counted; also the length of the root tasks' queue |
//! | `CALLTIME_CLOCK` | `auto` | `instant` forces `std::time::Instant` instead of the invariant TSC |
//! | `CALLTIME_EXACT` | unset | `1`: probes never retire, and every invocation is recorded (no sampling for cost) |
//! | `CALLTIME_COST_BUDGET` | 5 | percent of a root's time its recorded invocations' probes may take: past it, only a random fraction of its invocations is recorded (after each thread's first 100), the others run unrecorded with their root timed and are counted as `sampled_for_cost`; 0 records every one, as do runs with one of the three keep settings above |
//! | `CALLTIME_RETIRE_FACTOR` | 20 | a function retires when its compensated mean is under N x a recorded probe's cost |
//! | `CALLTIME_RETIRE_MIN_CALLS` | 1000 | calls observed before a function may retire |
//!
//! # Allocations
//! The shadow copy declares [`__private::CountingAlloc`] as the global allocator in the crate root of the executable
//! it builds (or wraps the program's own `#[global_allocator]` in it), so its fast path is compiled into the
//! executable: each allocation made inside an invocation is added to the node (or call path) of the innermost
//! recorded call: one thread-local load, a compare and a branch outside invocations, an out-of-line call, a few
//! loads and two adds inside; the probes only zero two fields of each new node. The runtime finds out at start-up
//! whether the allocator counts (the header's `allocs` setting).
//!
//! # Costs and bounds
//! Per call: one thread-local access, one clock read on entry and one on exit, a write into a preallocated
//! per-thread buffer; in a folded invocation, a lookup in the parent path's child cache, a counter and a frame, and
//! the clock reads only for the sampled calls; for a retired function, a byte load and a counter, and once it went quiet the load and one branch. No allocation, lock, atomic read-modify-write, hashing or formatting per call; ticks are
//! converted to nanoseconds and trees are formatted on the writer thread. Each thread allocates one node buffer
//! (40 bytes a node; 256 nodes, doubled on a cold path up to the fold or `CALLTIME_NODE_CAP` when an invocation needs more, and
//! kept at that size when recycled) and one outbox (`8 x CALLTIME_QUEUE` slots of 40 bytes, at most 640 KB) at its
//! first root entry; an ended thread's outbox is reused by a later thread once drained.
//!
//! Per invocation, on the thread that runs it: admission by the thread's own counters (tickets for
//! `CALLTIME_MAX_INVOCATIONS` are taken from one shared counter 64 at a time), and at the root's return a copy of
//! the nodes into the thread's outbox, published with one store; the writer is woken when the outbox crosses half
//! full, or after a quiet spell. Nothing shared between threads is locked or written on that path. A bigger
//! invocation (more than `2 x CALLTIME_QUEUE` nodes, or folded) is handed over in its buffer through the outbox, and
//! the thread takes a free buffer (at most `CALLTIME_QUEUE + 65` exist beyond one per thread: queued, being written,
//! or owned by root tasks in progress). Root tasks go through a shared queue. When the outbox or the queue is full,
//! or no buffer is free, the invocation is dropped and counted under its cause, never waited for.
//!
//! # Durability
//! Finished trees are written by the writer thread within about 20 ms of their root's return, many per `write`
//! call. A chained panic hook writes the queued trees and every thread's outbox before the previous hook runs (so
//! `panic = "abort"` keeps them), and an `atexit` handler writes them and a final `stats` line (so
//! `std::process::exit` and returning from `main` keep them, including the outboxes of threads still running).
//!
//! # Building
//! No dependencies, no build script; Rust 1.80 or newer, editions 2015 to 2021 (edition 2024 would need `unsafe
//! extern`, which needs Rust 1.82). `cargo calltime` embeds every source file of this crate and builds them in the
//! shadow workspace. The TSC clock is used on x86_64 only; other targets time with `Instant`.
//!
//! # Limits
//! - A sync function's node is marked panicked when its guard drops while the thread is panicking, which includes
//!   a probed function that returns normally from inside a destructor run during unwinding.
//! - Work handed to other threads or tasks is a child of the code that spawned it only where the rewrite wrapped
//!   the spawn (`__private::adopt`, see `adopt.rs`); elsewhere a spawned async root starts its own invocation.
//! - A panic hook installed by the program after the first root entry replaces ours.
#![deny(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

// Modules, from the probe inward: `probe` (what a sync probe does on entry and exit), `future` (the async wrapper),
// `recorder` (one invocation's buffer and frame stack, with `recorder::fold` for big invocations), `invocation`
// (starting, admitting and handing off invocations; the thread's current context), `writer` (the trace file) and
// `clock` (ticks and their conversion to nanoseconds), `calibrate` (the probes' own cost, measured at start-up) and
// `retire` (probes that retire themselves).
mod adopt;
mod aggregate;
mod alloc;
mod calibrate;
mod clock;
mod control;
mod future;
mod invocation;
mod keep;
mod outbox;
mod outcome;
mod output;
mod probe;
mod recorder;
mod retire;
mod sampler;
mod writer;

use std::path::PathBuf;

pub use future::Instrumented;
pub use probe::Guard;

// ---------------------------------------------------------------------------------------------------------------
// Hidden API (Contract 1)

/// `run_quiet_in` with the body written twice (`__private::quiet_in!(&crate::__CALLTIME_STATE, 7, { body })`): a
/// quiet call runs the first copy in place, with no closure, so the optimiser inlines it as it would the plain
/// body; every other call runs the second, in a `move` closure, out of line. With one closure called from two
/// places (`run_quiet_in`), a body holding a few probed calls stays an out-of-line call even when quiet
/// (docs/performance.md, "Eighth round"). The tool takes it only for bodies that declare no items (a `static` or
/// an `impl` written twice would be two statics, or two conflicting impls).
#[doc(hidden)]
#[macro_export]
macro_rules! __calltime_quiet_in {
    ($states:expr, $index:literal, $body:block) => {
        if $crate::__private::is_quiet_in($states, $index) $body else {
            ($states).run_unquiet_at::<$index, _, _>(move || $body)
        }
    };
}

/// The probe of a small body whose parameters may drop something (taken by value), so that moving them into a
/// closure could change when they drop: the body once, in place, under a guard that a quiet call takes inert
/// (`Guard::INERT`, nothing to do at the exit but a test) and every other call enters out of line
/// (`States::enter_unquiet_at`). Written twice (a quiet copy and a guarded one), every call the body makes had two
/// call sites, so a callee the plain build inlines into it stayed out of line (serde_json's `Map::insert`, one call
/// of `BTreeMap::insert`: docs/performance.md, "Thirteenth round"). The tool takes it for small bodies only.
#[doc(hidden)]
#[macro_export]
macro_rules! __calltime_quiet_guard_in {
    ($states:expr, $index:literal, $body:block) => {{
        let __calltime_guard = if $crate::__private::is_quiet_in($states, $index) {
            $crate::__private::Guard::INERT
        } else {
            ($states).enter_unquiet_at::<$index>()
        };
        $body
    }};
}

/// `__calltime_quiet_in!` for a body whose `Err` returns are counted: the cold copy hands its result to the runtime
/// (`Outcome::note`), the quiet copy does not (a quiet call recorded nothing, so its `Err` has no frame to mark:
/// `outcome::err_returned` would leave it alone).
#[doc(hidden)]
#[macro_export]
macro_rules! __calltime_quiet_err_in {
    ($states:expr, $index:literal, $body:block) => {
        if $crate::__private::is_quiet_in($states, $index) $body else {
            ($states).run_unquiet_at::<$index, _, _>(move || {
                match $crate::__private::call_once(move || $body) {
                    result => {
                        {
                            #[allow(unused_imports)]
                            use $crate::__private::NotAResult as _;
                            $crate::__private::Outcome(&result).note($index);
                        }
                        result
                    }
                }
            })
        }
    };
}

/// What the code rewritten by `cargo calltime` calls. Not a stable API.
#[doc(hidden)]
pub mod __private {
    pub use crate::adopt::{adopt, adopt_future, par_context, ticket, Adopted, ParContext, Ticket};
    pub use crate::alloc::CountingAlloc;
    pub use crate::outcome::{call_once, NotAResult, Outcome};
    pub use crate::retire::States;
    pub use crate::{Guard, Instrumented};
    use std::future::Future;

    /// Identifies the plan the probes were inserted by; passed by every root probe.
    #[derive(Debug)]
    pub struct PlanInfo {
        /// The plan's id, written to the trace's `plan` line.
        pub id: &'static str,
        /// Absolute path of the function table the tool wrote for this plan (may be empty).
        pub table: &'static str,
        /// Number of functions (indices) in the plan.
        pub functions: u32,
    }

    /// Probe of a non-root sync function; the guard records the exit when dropped. Out of line in the dev
    /// profile's runtime: inlined, its body is rustc's work again in every probed function of an unoptimised
    /// build, where no call is cheap anyway.
    #[cfg_attr(debug_assertions, inline(never))]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn enter(index: u32) -> Guard {
        crate::probe::enter(index)
    }

    /// Probe of a non-root sync function whose body is wrapped in a closure: the body runs in place when the
    /// function went quiet, between the entry and the exit probe otherwise.
    #[inline(always)]
    pub fn run<R, F: FnOnce() -> R>(index: u32, body: F) -> R {
        crate::probe::run(index, body)
    }

    /// `enter` with the function's state byte read from its crate's own table, which the shadow copy declares in
    /// the crate root (`static __CALLTIME_STATE: States<N>`). Out of line in the dev profile's runtime, as
    /// [`enter`] is.
    #[cfg_attr(debug_assertions, inline(never))]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn enter_in<const N: usize>(states: &'static States<N>, index: u32) -> Guard {
        crate::probe::enter_in(states, index)
    }

    /// `run` with the function's state byte read from its crate's own table (see [`enter_in`]).
    #[inline(always)]
    pub fn run_in<R, F: FnOnce() -> R, const N: usize>(states: &'static States<N>, index: u32, body: F) -> R {
        crate::probe::run_in(states, index, body)
    }

    /// `run_in` for a small or medium body: a quiet call runs it in place after one compare and branch, every other
    /// call is one out-of-line call.
    #[inline(always)]
    pub fn run_quiet_in<R, F: FnOnce() -> R, const N: usize>(states: &'static States<N>, index: u32, body: F) -> R {
        crate::probe::run_quiet_in(states, index, body)
    }

    /// Whether function `index` went quiet: the test of [`quiet_in!`]'s two copies of a body.
    #[inline(always)]
    pub fn is_quiet_in<const N: usize>(states: &'static States<N>, index: u32) -> bool {
        states.is_quiet(index)
    }

    pub use crate::{
        __calltime_quiet_err_in as quiet_err_in, __calltime_quiet_guard_in as quiet_guard_in,
        __calltime_quiet_in as quiet_in,
    };

    /// Probe of a root sync function: starts an invocation when none is in progress on this thread. Out of line in
    /// the dev profile's runtime, as [`enter`] is.
    #[cfg_attr(debug_assertions, inline(never))]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn enter_root(index: u32, plan: &'static PlanInfo) -> Guard {
        crate::probe::enter_root(index, plan)
    }

    /// The test of a root whose body runs in a closure: true when this call is nested in an invocation that
    /// settles it without recording (one that is not recorded, or a recorded one once the root went quiet), so the
    /// body runs as it is; every other call goes through `States::run_root_noted_at`.
    #[inline(always)]
    pub fn root_is_nested_quiet<const N: usize>(states: &'static States<N>, index: u32) -> bool {
        crate::probe::root_is_nested_quiet(states, index)
    }

    /// Wraps the body of a non-root async function.
    pub fn instrument<F: Future>(index: u32, fut: F) -> Instrumented<F> {
        Instrumented::new(index, None, fut)
    }

    /// Wraps the body of a root async function: a task with no invocation in progress starts one.
    pub fn instrument_root<F: Future>(index: u32, plan: &'static PlanInfo, fut: F) -> Instrumented<F> {
        Instrumented::new(index, Some(plan), fut)
    }

    /// One read of the runtime clock (raw ticks), for benchmarks.
    #[inline(always)]
    pub fn now() -> u64 {
        crate::clock::now()
    }

    /// Sets up the clock as the first root entry would, so [`now`] reads the clock probes use.
    pub fn init_clock() {
        crate::clock::clock();
    }

    /// Retires function `index` now, whatever the settings, as if its probe had shown it too fast (benchmarks).
    pub fn retire_now(index: u32) {
        crate::retire::retire(index, 0, 0);
    }

    /// Retires function `index` now and stops counting its calls, as it does after `CALLTIME_QUIET_AFTER` counted
    /// invocations (benchmarks).
    pub fn quiet_now(index: u32) {
        crate::retire::retire(index, 0, 0);
        crate::retire::go_quiet(index);
    }

    /// Holds (true) or releases the writer thread, so tests can show that the panic hook and the exit handler write
    /// what is still queued. Explicit flushes, the panic hook and the exit handler ignore it.
    pub fn hold_writer(hold: bool) {
        crate::writer::hold_writer(hold);
    }

    /// Makes whoever writes trees spend `ns` more of its thread's CPU time per tree written, so tests can show that
    /// the cost budget charges the writer's measured cost (0: off).
    pub fn slow_writer(ns: u64) {
        crate::writer::slow_writer(ns);
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Public API

/// Counters of this process, cumulative since the first root entry (the same as the trace's `stats` line).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Root invocations started (recorded or not).
    pub seen: u64,
    /// Invocations written to the trace file.
    pub kept: u64,
    /// Invocations not recorded because of 1-in-N sampling (`CALLTIME_SAMPLE`).
    pub sampled_out: u64,
    /// Invocations not recorded to keep the probes' cost within `CALLTIME_COST_BUDGET` (sampled for cost; their
    /// roots timed). Neither dropped nor `sampled_out`.
    pub sampled_for_cost: u64,
    /// Invocations lost: the three causes below, plus failed writes and thread teardown.
    pub dropped: u64,
    /// Written invocations whose tree hit the node cap or the depth limit (calls counted, not stored).
    pub truncated: u64,
    /// Invocations not recorded because `CALLTIME_MAX_INVOCATIONS` were already recorded.
    pub dropped_limit: u64,
    /// Invocations dropped because the writer fell behind: the thread's outbox or the writer's queue was full.
    pub dropped_queue_full: u64,
    /// Big invocations dropped because no free recorder was left to take over from the one being handed off.
    pub dropped_no_buffer: u64,
    /// Functions whose probes retired (see `CALLTIME_EXACT`).
    pub retired_functions: u64,
    /// Invocations left out, by choice rather than loss: not slower than `CALLTIME_SLOWER_THAN_NS`...
    pub left_out_fast: u64,
    /// ... and not among the slowest (`CALLTIME_KEEP_SLOWEST`) or not in the sample (`CALLTIME_KEEP_SAMPLE`).
    pub left_out_unselected: u64,
    /// The first root start seen, in ns since the trace's epoch (0 before any).
    pub first_root_ns: u64,
    /// The last root start seen, in ns since the trace's epoch (0 before any).
    pub last_root_ns: u64,
    /// Of `dropped`: trees the hourly byte cap (`CALLTIME_MAX_BYTES_PER_HOUR`) left unwritten.
    pub dropped_cap: u64,
}

/// This process's counters so far.
pub fn stats() -> Stats {
    invocation::stats()
}

/// Writes every completed invocation that is still queued, then a `stats` line, before returning. Invocations in
/// progress are not affected. Does nothing before the first root entry.
pub fn flush() {
    writer::drain(true);
}

/// The trace file of this process, once a root was entered (`CALLTIME_OUT`, or `calltime-<pid>.trace` in the
/// directory current at the first root entry).
pub fn trace_path() -> Option<PathBuf> {
    invocation::RUNTIME.get().map(|rt| rt.config.out.clone())
}
