//! Calls of retired functions that went quiet (docs/trace-format.md, `quiet` records): once the runtime has counted
//! a retired function's calls in a few invocations, its probe stops counting them (a load and a branch per call is
//! all it then costs), and the reader estimates them instead, marked as estimates in every view.
//!
//! The estimate for an invocation that ended after the function went quiet (the record's `at_ns`): the function's
//! calls per call of its callers (the functions seen calling it before it retired), measured over the invocations
//! that ended before (their counts are exact: its calls as nodes plus its `r` lines), times its callers' calls in
//! that invocation. With no caller in the trace, calls per invocation instead. An invocation that
//! was running when the function went quiet has some calls counted: the estimate is never below them. The
//! whole-run aggregate's `gr` count stops growing when the function goes quiet: it becomes the same rate times its
//! callers' calls over the run, less its calls on call paths (made before it retired), never below the count.
//!
//! A function can also go quiet within a long invocation (its `quiet` record then carries its calls and its
//! callers' calls in that invocation so far, taken with no caller's call open): those counts join the rate, so a
//! program whose root runs once still gets an estimate, exact when the ratio is constant.

use std::collections::{BTreeMap, BTreeSet};

use super::{AggregatePath, Invocation, Node, Quiet, RetiredCalls, RunAggregate, Trace};

/// Fills in the estimated calls of quiet functions in the invocations written after their `quiet` record (marked
/// `estimated`). Idempotent: the exact invocations, hence the rates, do not change.
pub fn estimate_quiet_calls(trace: &mut Trace) {
    if trace.quiet.is_empty() {
        return;
    }
    let callers = callers_of(&trace.invocations, trace.quiet.iter().map(|q| q.func).collect());
    for quiet in in_order_of_callers(&trace.quiet, &callers) {
        let no_callers = BTreeSet::new();
        // Went quiet under a caller that stayed open: its calls are estimated per call of the sibling it names.
        let by_sibling = quiet.by.map(|by| BTreeSet::from([by]));
        let callers = by_sibling.as_ref().or(callers.get(&quiet.func)).unwrap_or(&no_callers);
        let rate = Rate::measure(trace.invocations.iter().filter(|inv| ended_before(inv, &quiet)), &quiet, callers);
        let warning = format!(
            "calls of function #{} after it went quiet are not estimated: no invocation in the trace counted them all \
             (keep more invocations, or set CALLTIME_QUIET_AFTER=0 to count them)",
            quiet.func
        );
        let unestimated = rate.per == 0 && trace.invocations.iter().any(|inv| !ended_before(inv, &quiet));
        if unestimated && !trace.warnings.contains(&warning) {
            trace.warnings.push(warning);
        }
        for inv in trace.invocations.iter_mut().filter(|inv| !ended_before(inv, &quiet)) {
            let (_, by) = invocation_calls(inv, quiet.func, callers);
            // Its calls as nodes or paths (made before it retired, in the invocation it went quiet in) are exact.
            let (on_paths, _) = calls_in(&inv.root, quiet.func, callers);
            let estimate = rate.estimate(if rate.by_callers { by } else { 1 }).saturating_sub(on_paths);
            set_estimate(&mut inv.retired, quiet.func, estimate);
        }
        if let Some(aggregate) = trace.aggregate.as_mut() {
            estimate_in_aggregate(aggregate, quiet.func, &rate, callers);
        }
    }
}

/// Whether `inv` ended before its function went quiet: then every call of it was counted.
fn ended_before(inv: &Invocation, quiet: &Quiet) -> bool {
    inv.start_ns.saturating_add(inv.duration_ns) < quiet.at_ns
}

/// Makes `func`'s entry in `retired` the estimate, or the count it has when that is higher, marked estimated.
fn set_estimate(retired: &mut Vec<RetiredCalls>, func: u32, estimate: u64) {
    match retired.iter_mut().find(|r| r.func == func) {
        Some(entry) => *entry = RetiredCalls::estimated(func, estimate, entry.counted),
        None if estimate > 0 => retired.push(RetiredCalls::estimated(func, estimate, 0)),
        None => {}
    }
}

/// The aggregate's `gr` count of a quiet function: its calls over the run by `rate`, less those on call paths.
fn estimate_in_aggregate(aggregate: &mut RunAggregate, func: u32, rate: &Rate, callers: &BTreeSet<u32>) {
    let (mut on_paths, mut by) = (0, 0);
    for root in &aggregate.roots {
        let (own, b) = calls_in(root, func, callers);
        (on_paths, by) = (on_paths + own, by + b);
    }
    by += aggregate.retired.iter().filter(|r| callers.contains(&r.func)).map(|r| r.calls).sum::<u64>();
    let over_run = rate.estimate(if rate.by_callers { by } else { aggregate.invocations });
    set_estimate(&mut aggregate.retired, func, over_run.saturating_sub(on_paths));
}

/// The `quiet` records in the order their estimates are made: a function after the quiet functions its estimate
/// scales by (its callers, whose estimates must be in first), else latest first (callers retire after their
/// callees, so they go quiet later). A ring of them (none can be first) is taken latest first.
fn in_order_of_callers(quiet: &[Quiet], callers: &BTreeMap<u32, BTreeSet<u32>>) -> Vec<Quiet> {
    let mut pending: Vec<Quiet> = quiet.iter().rev().copied().collect();
    let mut order = Vec::with_capacity(pending.len());
    while !pending.is_empty() {
        let waits = |q: &Quiet| {
            let of = callers.get(&q.func);
            pending.iter().any(|other| other.func != q.func && of.is_some_and(|of| of.contains(&other.func)))
        };
        let next = pending.iter().position(|q| q.by.is_some() || !waits(q)).unwrap_or(0);
        order.push(pending.remove(next));
    }
    order
}

/// Per quiet function, the functions its later calls are estimated per call of: those seen calling it (parents of
/// its nodes), over every invocation. For a member of a recursive cycle (a strongly connected set of functions in
/// the trees, which retired and went quiet together: calltime-rt's retire/cluster.rs), the nearest callers outside
/// the cycle instead: its callers within it are estimated themselves. None (calls per invocation) when the
/// invocation's root is a member of its cycle.
fn callers_of(invocations: &[Invocation], funcs: BTreeSet<u32>) -> BTreeMap<u32, BTreeSet<u32>> {
    let cycle_of = cycles_of(invocations, &funcs);
    // `outside[c]`: the nearest caller outside cycle `c` of the calls being walked (None at the root).
    fn walk(
        node: &Node,
        funcs: &BTreeSet<u32>,
        cycle_of: &BTreeMap<u32, usize>,
        outside: &mut Vec<Option<u32>>,
        out: &mut BTreeMap<u32, BTreeSet<u32>>,
        per_invocation: &mut BTreeSet<u32>,
    ) {
        let own_cycle = cycle_of.get(&node.func).copied();
        for child in &node.children {
            let cycle = cycle_of.get(&child.func).copied();
            let entered = cycle.filter(|&c| own_cycle != Some(c));
            let saved = entered.map(|c| outside[c].replace(node.func));
            if funcs.contains(&child.func) {
                match cycle {
                    None => {
                        out.entry(child.func).or_default().insert(node.func);
                    }
                    Some(c) => match outside[c] {
                        Some(caller) => {
                            out.entry(child.func).or_default().insert(caller);
                        }
                        None => {
                            per_invocation.insert(child.func);
                        }
                    },
                }
            }
            walk(child, funcs, cycle_of, outside, out, per_invocation);
            if let (Some(c), Some(saved)) = (entered, saved) {
                outside[c] = saved;
            }
        }
    }
    let cycles = cycle_of.values().max().map_or(0, |&c| c + 1);
    let (mut out, mut per_invocation) = (BTreeMap::new(), BTreeSet::new());
    for inv in invocations {
        let mut outside = vec![None; cycles];
        walk(&inv.root, &funcs, &cycle_of, &mut outside, &mut out, &mut per_invocation);
    }
    // A cycle with the root in it has no caller outside it in the invocation: its calls are per invocation.
    for func in per_invocation {
        out.insert(func, BTreeSet::new());
    }
    out
}

/// The recursive cycles the functions `funcs` are members of (numbered from 0), from the calls between functions
/// in every invocation's tree: a function's cycle is the set of functions it reaches and that reach it. Every
/// member of such a cycle is in the map, quiet or not (a cycle's caller must be outside all of it).
fn cycles_of(invocations: &[Invocation], funcs: &BTreeSet<u32>) -> BTreeMap<u32, usize> {
    fn edges(node: &Node, calls: &mut BTreeMap<u32, BTreeSet<u32>>, called_by: &mut BTreeMap<u32, BTreeSet<u32>>) {
        for child in &node.children {
            calls.entry(node.func).or_default().insert(child.func);
            called_by.entry(child.func).or_default().insert(node.func);
            edges(child, calls, called_by);
        }
    }
    fn reached(from: u32, edges: &BTreeMap<u32, BTreeSet<u32>>) -> BTreeSet<u32> {
        let (mut seen, mut next) = (BTreeSet::new(), vec![from]);
        while let Some(func) = next.pop() {
            for &to in edges.get(&func).into_iter().flatten() {
                if seen.insert(to) {
                    next.push(to);
                }
            }
        }
        seen
    }
    let (mut calls, mut called_by) = (BTreeMap::new(), BTreeMap::new());
    invocations.iter().for_each(|inv| edges(&inv.root, &mut calls, &mut called_by));
    let mut cycle_of = BTreeMap::new();
    let mut cycles = 0;
    for &func in funcs {
        if cycle_of.contains_key(&func) {
            continue;
        }
        let down = reached(func, &calls);
        if !down.contains(&func) {
            continue; // not recursive
        }
        let up = reached(func, &called_by);
        for &member in down.intersection(&up) {
            cycle_of.insert(member, cycles);
        }
        cycles += 1;
    }
    cycle_of
}

/// Calls of `func` and calls of the functions in `of` in an invocation: nodes, and retired calls of those that
/// retired.
fn invocation_calls(inv: &Invocation, func: u32, of: &BTreeSet<u32>) -> (u64, u64) {
    let (mut own, mut by) = calls_in(&inv.root, func, of);
    for r in &inv.retired {
        own += if r.func == func { r.calls } else { 0 };
        by += if of.contains(&r.func) { r.calls } else { 0 };
    }
    (own, by)
}

/// A tree of calls by function: an invocation's nodes, or the aggregate's call paths.
trait CallTree: Sized {
    fn func(&self) -> u32;
    fn calls(&self) -> u64;
    fn children(&self) -> &[Self];
}

impl CallTree for Node {
    fn func(&self) -> u32 {
        self.func
    }
    fn calls(&self) -> u64 {
        self.calls
    }
    fn children(&self) -> &[Node] {
        &self.children
    }
}

impl CallTree for AggregatePath {
    fn func(&self) -> u32 {
        self.func
    }
    fn calls(&self) -> u64 {
        self.calls
    }
    fn children(&self) -> &[AggregatePath] {
        &self.children
    }
}

/// Calls of `func` and calls of the functions in `of` in a tree.
fn calls_in<T: CallTree>(node: &T, func: u32, of: &BTreeSet<u32>) -> (u64, u64) {
    let own = if node.func() == func { node.calls() } else { 0 };
    let by = if of.contains(&node.func()) { node.calls() } else { 0 };
    node.children().iter().fold((own, by), |(a, b), child| {
        let (x, y) = calls_in(child, func, of);
        (a + x, b + y)
    })
}

/// A quiet function's calls per caller call (or per invocation), from the invocations counted exactly.
struct Rate {
    calls: u64,
    per: u64,
    by_callers: bool,
}

impl Rate {
    fn measure<'a>(exact: impl Iterator<Item = &'a Invocation>, quiet: &Quiet, callers: &BTreeSet<u32>) -> Rate {
        let (mut calls, mut caller_calls, mut invocations) = (0u64, 0u64, 0u64);
        for inv in exact {
            invocations += 1;
            let (own, by) = invocation_calls(inv, quiet.func, callers);
            calls += own;
            caller_calls += by;
        }
        // Went quiet within an invocation: its counts so far there (no caller's call open) are a ratio as exact.
        if quiet.caller_calls != 0 {
            (calls, caller_calls) = (calls + quiet.calls, caller_calls + quiet.caller_calls);
        }
        match caller_calls {
            0 => Rate { calls, per: invocations, by_callers: false },
            per => Rate { calls, per, by_callers: true },
        }
    }

    /// The calls for `scale` caller calls (or invocations), rounded.
    fn estimate(&self, scale: u64) -> u64 {
        if self.per == 0 {
            return 0;
        }
        let calls = u128::from(self.calls) * u128::from(scale);
        u64::try_from((calls + u128::from(self.per) / 2) / u128::from(self.per)).unwrap_or(u64::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{parse, TraceBuilder};

    /// Function 2 (called by 1) retires in invocation 0 and goes quiet after invocation 1: 6 calls per call of 1
    /// (5 + 7 r calls over 2 calls of 1 in invocation 0, 12 over 2 in invocation 1). Invocation 2 (3 calls of 1)
    /// gets 18 estimated; invocation 3, running when 2 went quiet, counted 40: it keeps 40, marked estimated.
    const TEXT: &str = "calltime-trace 3\nprocess 1 0 /app\nplan p /t.json\nsettings fold_after=4096 quiet_after=2\n\
        calibration recorded_inner=7000 recorded_outer=12500 folded_outer=2000 timed_inner=9000 timed_outer=15000 \
        retired_outer=1500 quiet_outer=300\n\
        retire 2 1300 5 10\n\
        inv 0 thread 1 1000 5000 3 0 0 main\n\
        a 0 0 1 1 1000 5000 5000 5000 0 1 5000\n\
        a 1 1 2 2 1100 4000 1900 2100 0 2 4000\n\
        a 2 2 5 5 1200 50 10 10 0 5 50\n\
        r 2 7\n\
        end 0\n\
        inv 1 thread 1 7000 2000 3 0 0 main\n\
        n 0 0 7000 2000 0\n\
        n 1 1 7100 900 0\n\
        n 1 1 8000 900 0\n\
        r 2 12\n\
        end 1\n\
        quiet 2 9500\n\
        inv 2 thread 1 10000 3000 4 0 0 main\n\
        n 0 0 10000 3000 0\n\
        n 1 1 10100 900 0\n\
        n 1 1 11000 900 0\n\
        n 1 1 12000 900 0\n\
        end 2\n\
        inv 3 thread 1 9000 3000 2 0 0 main\n\
        n 0 0 9000 3000 0\n\
        n 1 1 9100 900 0\n\
        r 2 40\n\
        end 3\n";

    #[test]
    fn quiet_calls_are_estimated_from_the_counted_rate_and_never_below_a_count() {
        let mut trace = parse(TEXT).unwrap();
        assert!(trace.warnings.is_empty(), "{:?}", trace.warnings);
        assert_eq!(trace.quiet, [Quiet { func: 2, at_ns: 9500, calls: 0, caller_calls: 0, by: None }]);
        assert_eq!(trace.calibration.unwrap().quiet_outer, Some(300));
        estimate_quiet_calls(&mut trace);
        let retired: Vec<&[RetiredCalls]> = trace.invocations.iter().map(|inv| inv.retired.as_slice()).collect();
        assert_eq!(retired[0], [RetiredCalls::counted(2, 7)]);
        assert_eq!(retired[1], [RetiredCalls::counted(2, 12)]);
        assert_eq!(retired[2], [RetiredCalls::estimated(2, 18, 0)]);
        assert_eq!(retired[3], [RetiredCalls::estimated(2, 6, 40)]);
        // Idempotent; written back as read (estimates are not `r` lines).
        let again = trace.clone();
        estimate_quiet_calls(&mut trace);
        assert_eq!(trace.invocations, again.invocations);
        assert_eq!(TraceBuilder::write(&trace), TEXT);
    }

    #[test]
    fn a_function_quiet_within_its_one_invocation_is_estimated_from_the_counts_so_far() {
        // One folded invocation: function 1 calls 2 three times per call, 1,000 calls. 2 retired after 6 calls (a
        // path), was counted 1,194 more times, and went quiet with 1,200 calls over 400 of 1's: the other 1,800
        // are estimated, and written back as the record was read.
        let text = "calltime-trace 3\nprocess 1 0 /app\nplan p /t.json\nsettings fold_after=4 quiet_after=3\n\
            retire 2 1300 6 10\n\
            quiet 2 3000 1200 400\n\
            inv 0 thread 1 1000 5000 3 0 0 main\n\
            a 0 0 1 1 1000 5000 5000 5000 0 1 5000\n\
            a 1 1 1000 1000 1100 4000 1 100 0 1000 4000\n\
            a 2 2 6 6 1200 50 5 10 0 6 50\n\
            r 2 1194\n\
            end 0\n";
        let mut trace = parse(text).unwrap();
        assert!(trace.warnings.is_empty(), "{:?}", trace.warnings);
        assert_eq!(trace.quiet, [Quiet { func: 2, at_ns: 3000, calls: 1200, caller_calls: 400, by: None }]);
        estimate_quiet_calls(&mut trace);
        assert_eq!(trace.invocations[0].retired, [RetiredCalls::estimated(2, 2994, 1194)]);
        assert_eq!(TraceBuilder::write(&trace), text);
    }

    #[test]
    fn a_function_quiet_under_an_open_caller_is_estimated_per_call_of_the_sibling_it_names() {
        // One folded invocation: function 1 runs once for all of it and calls 3 (probed) 1,000 times and 2 three
        // times per call of 3. 2 went quiet with 1,200 calls over 400 of 3's, 1 still open (its calls of 2 not all
        // made): all 3,000 are estimated from 3's 1,000 calls, 2,994 of them past its 6 on a path.
        let text = "calltime-trace 3\nprocess 1 0 /app\nplan p /t.json\nsettings fold_after=4 quiet_after=3\n\
            retire 2 1300 6 10\n\
            quiet 2 3000 1200 400 3\n\
            inv 0 thread 1 1000 5000 4 0 0 main\n\
            a 0 0 1 1 1000 5000 5000 5000 0 1 5000\n\
            a 1 1 1 1 1100 4900 4900 4900 0 1 4900\n\
            a 2 3 1000 1000 1200 4000 1 100 0 1000 4000\n\
            a 2 2 6 6 1200 50 5 10 0 6 50\n\
            r 2 1194\n\
            end 0\n";
        let mut trace = parse(text).unwrap();
        assert!(trace.warnings.is_empty(), "{:?}", trace.warnings);
        assert_eq!(trace.quiet, [Quiet { func: 2, at_ns: 3000, calls: 1200, caller_calls: 400, by: Some(3) }]);
        estimate_quiet_calls(&mut trace);
        assert_eq!(trace.invocations[0].retired, [RetiredCalls::estimated(2, 2994, 1194)]);
        assert_eq!(TraceBuilder::write(&trace), text);
    }

    /// A recursive cycle that went quiet: functions 2 and 3 call each other under 1 (called twice by the root 0).
    /// Invocation 0 counted them all: 8 calls each (3 and 1 nodes, 5 and 7 `r` calls), 4 per call of 1. Invocation
    /// 1, after both went quiet, has 3 calls of 1: 12 each, from the cycle's caller outside it. Taken per call of
    /// their callers within the cycle (2 for 3, 1 and 3 for 2), as for other functions, 3's callers in invocation 1
    /// are estimates not yet made (0), and 2's rate mixes in 3's calls: 0 and 2.
    const CYCLE: &str = "calltime-trace 3\nprocess 1 0 /app\nplan p /t.json\nsettings fold_after=4096 quiet_after=1\n\
        retire 2 1050 5 10\n\
        retire 3 1060 5 10\n\
        inv 0 thread 1 1000 5000 7 0 0 main\n\
        n 0 0 1000 5000 0\n\
        n 1 1 1100 2000 0\n\
        n 2 2 1200 1000 0\n\
        n 3 3 1300 500 0\n\
        n 4 2 1400 100 0\n\
        n 1 1 3200 1500 0\n\
        n 2 2 3300 1000 0\n\
        r 2 5\n\
        r 3 7\n\
        end 0\n\
        quiet 2 6500\n\
        quiet 3 6500\n\
        inv 1 thread 1 7000 3000 4 0 0 main\n\
        n 0 0 7000 3000 0\n\
        n 1 1 7100 900 0\n\
        n 1 1 8000 900 0\n\
        n 1 1 9000 900 0\n\
        end 1\n";

    #[test]
    fn a_quiet_cycle_is_estimated_per_call_of_its_caller_outside_it() {
        let mut trace = parse(CYCLE).unwrap();
        assert!(trace.warnings.is_empty(), "{:?}", trace.warnings);
        estimate_quiet_calls(&mut trace);
        assert_eq!(trace.invocations[0].retired, [RetiredCalls::counted(2, 5), RetiredCalls::counted(3, 7)]);
        let mut later = trace.invocations[1].retired.clone();
        later.sort_by_key(|r| r.func);
        assert_eq!(later, [RetiredCalls::estimated(2, 12, 0), RetiredCalls::estimated(3, 12, 0)]);
    }

    #[test]
    fn a_quiet_cycle_with_the_root_in_it_is_estimated_per_invocation() {
        // The root 0 is a member (its nested calls retired): 0 -> 1 -> 0 -> 1 recorded, then 2 calls of 0 and 3 of 1
        // counted: 4 and 5 an invocation, no caller outside the cycle. The next invocation is its root node alone.
        let text = "calltime-trace 3\nprocess 1 0 /app\nplan p /t.json\nsettings fold_after=4096 quiet_after=1\n\
            retire 0 1050 5 10\n\
            retire 1 1060 5 10\n\
            inv 0 thread 1 1000 5000 4 0 0 main\n\
            n 0 0 1000 5000 0\n\
            n 1 1 1100 2000 0\n\
            n 2 0 1200 1000 0\n\
            n 3 1 1300 500 0\n\
            r 0 2\n\
            r 1 3\n\
            end 0\n\
            quiet 0 6500\n\
            quiet 1 6500\n\
            inv 1 thread 1 7000 3000 1 0 0 main\n\
            n 0 0 7000 3000 0\n\
            end 1\n";
        let mut trace = parse(text).unwrap();
        assert!(trace.warnings.is_empty(), "{:?}", trace.warnings);
        estimate_quiet_calls(&mut trace);
        let mut later = trace.invocations[1].retired.clone();
        later.sort_by_key(|r| r.func);
        // 0: 4 calls an invocation less the recorded root node: 3 nested.
        assert_eq!(later, [RetiredCalls::estimated(0, 3, 0), RetiredCalls::estimated(1, 5, 0)]);
    }

    #[test]
    fn without_callers_the_rate_is_per_invocation_and_the_aggregate_is_estimated_too() {
        // Function 2 is only ever a retired count (no node names its caller): 19 calls over 2 invocations.
        let text = TEXT.replace("a 2 2 5 5 1200 50 10 10 0 5 50\n", "").replace(" 1000 5000 3 ", " 1000 5000 2 ")
            + "aggregate 20000 4 2 0 0 1\ng 0 0 4 4 14000 1000 5000\ng 1 1 8 8 7000 800 2100\ngr 2 20\n";
        let mut trace = parse(&text).unwrap();
        assert!(trace.warnings.is_empty(), "{:?}", trace.warnings);
        estimate_quiet_calls(&mut trace);
        assert_eq!(trace.invocations[2].retired, [RetiredCalls::estimated(2, 10, 0)]);
        // 19 / 2 per invocation x 4 invocations = 38, over the 20 counted before it went quiet.
        let aggregate = trace.aggregate.unwrap();
        assert_eq!(aggregate.retired, [RetiredCalls::estimated(2, 38, 20)]);
    }
}
