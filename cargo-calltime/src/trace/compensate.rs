//! Compensation for the probes' own cost (docs/trace-format.md, version 3): a pure function from a raw trace to
//! the same trace with the calibrated probe costs subtracted from the nodes that paid them, then clamped so that
//! no node's children add up to more than the node. It runs once, between reading and the views (and diff), so
//! every view shows the same times; a trace without calibration is returned as it is (raw).
//!
//! Per-call invocation: a node's own probe adds `recorded_inner` to what it records, and each of its descendant calls
//! adds `recorded_outer`: compensated = raw - ri - ro x descendants. Folded invocation: a call path's calls each paid
//! an inner cost (ri when timed before the fold, ti when sampled after) and each descendant path's calls an outer one
//! (ro, to or fo by how they were recorded). Calls of retired functions (`r` lines) cost `retired_outer` each;
//! estimated calls of quiet ones `quiet_inline` (else `quiet_outer`). The trace does not say which nodes made them, so
//! the cost is taken from the nodes that surely contain them: the root, and down from it the chain to the deepest node
//! containing every node of a function seen calling the retired one (in the calls recorded before it retired, anywhere
//! in the trace). With no such caller in the invocation, the root alone pays, as docs/trace-format.md says; taking it
//! from the root alone where the callers are known would make the clamp below shrink the root's exact children.
//!
//! The clamp scales estimated children down first: exact children keep their times when they fit in the parent.

use std::collections::{BTreeMap, BTreeSet};

use super::{Calibration, Invocation, Node, RetiredCalls, Times, Trace};

/// `trace` with every time compensated for probe cost and clamped, `times` set to [`Times::Compensated`]; the
/// trace as it is when it has no calibration or is already compensated.
pub fn compensated(mut trace: Trace) -> Trace {
    let Some(calibration) = trace.calibration else { return trace };
    if trace.times == Times::Compensated {
        return trace;
    }
    let callers = callers_of_retired(&trace);
    for inv in &mut trace.invocations {
        compensate_invocation(inv, &calibration, &callers);
    }
    compensate_skipped(&mut trace, &calibration);
    trace.times = Times::Compensated;
    trace
}

/// The roots of invocations sampled for cost (not recorded, timed: `sampled` records) made the calls of retired
/// functions that the recorded ones made, chosen at random among them, and paid the same probes for them (counted,
/// or quiet: the quiet probes of a parser's recursion, 330,000 an invocation of winnow's, 90 us of its 380). The
/// recorded invocations of each such root are compensated for theirs; the skipped ones' time is taken the mean of
/// that per invocation, so that the root's mean over every invocation is not a mean of compensated and raw times.
fn compensate_skipped(trace: &mut Trace, calibration: &Calibration) {
    for sampled in trace.sampled.iter_mut().filter(|s| s.timed > 0) {
        let recorded = trace.invocations.iter().filter(|inv| inv.root.func == sampled.func);
        let (invocations, cost_ns) = recorded.fold((0u128, 0u128), |(n, ns), inv| {
            let cost: u128 = inv.retired.iter().map(|r| u128::from(retired_cost_ns(r, calibration))).sum();
            (n + 1, ns + cost)
        });
        if let Some(taken) = (cost_ns * u128::from(sampled.timed)).checked_div(invocations) {
            sampled.timed_ns = sampled.timed_ns.saturating_sub(u64::try_from(taken).unwrap_or(u64::MAX));
        }
    }
}

/// What the calls after a function retired cost its probes: counted ones `retired_outer` each, estimated calls of a
/// quiet one its quiet probe, as it runs inlined into a caller's loop where the runtime measured that (older traces
/// measured it out of line, or only the counted one).
fn retired_cost_ns(retired: &RetiredCalls, calibration: &Calibration) -> u64 {
    let quiet_ps = calibration.quiet_inline.or(calibration.quiet_outer);
    let per_call_ps = match retired.estimated {
        true => quiet_ps.unwrap_or(calibration.retired_outer),
        false => calibration.retired_outer,
    };
    ps_to_ns(u128::from(retired.calls) * u128::from(per_call_ps))
}

/// Per retired function, the functions seen calling it (parents of its nodes), over the whole trace, each with
/// how often it called it.
pub type Callers = BTreeMap<u32, BTreeMap<u32, CallRate>>;

/// How often one caller called a retired function while the function was still recorded: `calls` of it (its nodes
/// under the caller's) in `per` calls of the caller (those that began before the function retired).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CallRate {
    pub calls: u64,
    pub per: u64,
    /// Of the `per` calls, those still running when the function retired (nodes of one call that ended after
    /// it): they made calls after it the rate does not foresee.
    pub open: u64,
}

/// The callers of every function that retired (a `retire` record or `r` lines), over every invocation: where
/// its calls after retiring were made (compensation) and are shown (views), and at what rate each caller made
/// them before it retired (views share its later calls among the callers by it).
pub fn callers_of_retired(trace: &Trace) -> Callers {
    fn calls_under(node: &Node, retired: &BTreeSet<u32>, out: &mut Callers) {
        for child in &node.children {
            if retired.contains(&child.func) {
                let rate = out.entry(child.func).or_default().entry(node.func).or_default();
                rate.calls = rate.calls.saturating_add(child.calls);
            }
            calls_under(child, retired, out);
        }
    }
    // A caller's calls count while the function is recorded: those begun before it retired (its latest
    // retirement, when processes were merged). Its calls after are counted in `r` lines, under no node.
    // `ended_ns`: when the node's invocation ended; `folded_after`: the functions of that invocation recorded after
    // its fold (a path with calls that were not recorded per call).
    fn callers_calls(
        node: &Node,
        (ended_ns, folded_after): (u64, &BTreeSet<u32>),
        retired_at: &BTreeMap<u32, u64>,
        by_caller: &BTreeMap<u32, Vec<u32>>,
        out: &mut Callers,
    ) {
        for &func in by_caller.get(&node.func).into_iter().flatten() {
            let at_ns = retired_at.get(&func).copied().unwrap_or(u64::MAX);
            if node.start_ns < at_ns {
                if let Some(rate) = out.get_mut(&func).and_then(|of| of.get_mut(&node.func)) {
                    // A function that retired during a folded invocation and was never recorded after its fold
                    // retired at the fold (where recursive clusters retire; after it, a retirement follows a timed
                    // folded call of the function): a caller's path has no time of its own calls, and only those
                    // recorded per call before the fold surely began before it; the rest made calls that were
                    // counted, not recorded under it. Counting every call of the path made winnow's `statement` call
                    // `expr` 0.02 times a call (8 recorded of its 400 calls) where it calls it once, and put 8 of
                    // its 770 calls an invocation there. The path is then open too.
                    let at_fold = node.calls > 1 && ended_ns > at_ns && !folded_after.contains(&func);
                    let before = if at_fold { node.exact_calls.min(node.calls) } else { node.calls };
                    rate.per = rate.per.saturating_add(before);
                    let one_open = node.calls == 1 && node.start_ns.saturating_add(node.duration_ns) > at_ns;
                    if one_open || before < node.calls {
                        rate.open = rate.open.saturating_add(1);
                    }
                }
            }
        }
        for child in &node.children {
            callers_calls(child, (ended_ns, folded_after), retired_at, by_caller, out);
        }
    }
    // In a folded invocation, the functions with calls recorded after its fold (paths with calls not recorded per
    // call; every path of a trace that does not say, older than version 3).
    fn folded_after(node: &Node, out: &mut BTreeSet<u32>) {
        if node.calls > node.exact_calls {
            out.insert(node.func);
        }
        node.children.iter().for_each(|child| folded_after(child, out));
    }
    let mut retired: BTreeSet<u32> = trace.retirements.iter().map(|r| r.func).collect();
    retired.extend(trace.invocations.iter().flat_map(|inv| inv.retired.iter().map(|r| r.func)));
    let mut out = Callers::new();
    for inv in &trace.invocations {
        calls_under(&inv.root, &retired, &mut out);
    }
    let mut retired_at = BTreeMap::new();
    for r in &trace.retirements {
        let at = retired_at.entry(r.func).or_insert(0);
        *at = r.at_ns.max(*at);
    }
    let mut by_caller: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for (&func, of) in &out {
        for &caller in of.keys() {
            by_caller.entry(caller).or_default().push(func);
        }
    }
    for inv in &trace.invocations {
        let ended_ns = inv.start_ns.saturating_add(inv.duration_ns);
        let mut folded = BTreeSet::new();
        if inv.folded {
            folded_after(&inv.root, &mut folded);
        }
        callers_calls(&inv.root, (ended_ns, &folded), &retired_at, &by_caller, &mut out);
    }
    out
}

fn compensate_invocation(inv: &mut Invocation, calibration: &Calibration, callers: &Callers) {
    let raw_root_ns = inv.root.duration_ns;
    compensate_node(&mut inv.root, calibration, inv.folded);
    for retired in &inv.retired {
        let cost_ns = retired_cost_ns(retired, calibration);
        let chain = match callers.get(&retired.func) {
            Some(funcs) => common_chain(&inv.root, funcs),
            None => Vec::new(),
        };
        // The root, then each node down the chain, contains the retired calls; each of a node's calls is taken its
        // share of them, as its total is, so min and max move with the mean.
        let mut node = &mut inv.root;
        take_cost(node, cost_ns);
        for &at in &chain {
            node = &mut node.children[at];
            take_cost(node, cost_ns);
        }
    }
    clamp_children(&mut inv.root);
    keep_mean_within_extremes(&mut inv.root);
    // The invocation's span is its root's: it shrinks by what the root's did.
    inv.duration_ns = inv.duration_ns.saturating_sub(raw_root_ns.saturating_sub(inv.root.duration_ns));
}

/// Takes `cost_ns` from a node's total, and its per-call share from its timed calls' min and max.
fn take_cost(node: &mut Node, cost_ns: u64) {
    node.duration_ns = node.duration_ns.saturating_sub(cost_ns);
    if node.calls == 1 && node.timed_calls == 1 {
        (node.min_ns, node.max_ns) = (node.duration_ns, node.duration_ns);
    } else if node.timed_calls > 0 {
        let per_call = cost_ns.div_ceil(node.calls.max(1));
        node.min_ns = node.min_ns.saturating_sub(per_call);
        node.max_ns = node.max_ns.saturating_sub(per_call);
    }
}

/// Makes every node's timed min and max hold its mean (total / calls): the compensation and the clamp take the
/// same time from all three, but rounding and a parent too small for its children can leave the mean a few ns
/// outside, and a view must never show a mean below its min or above its max.
fn keep_mean_within_extremes(node: &mut Node) {
    if node.timed_calls > 0 && node.calls > 0 {
        let mean = (u128::from(node.duration_ns) + u128::from(node.calls) / 2) / u128::from(node.calls);
        let mean = u64::try_from(mean).unwrap_or(u64::MAX);
        if node.timed_calls == 1 {
            // One timed call: the estimate is that call times the calls, so the mean is the call.
            (node.min_ns, node.max_ns) = (mean, mean);
        } else {
            node.min_ns = node.min_ns.min(mean);
            node.max_ns = node.max_ns.max(mean).min(node.duration_ns);
        }
    }
    for child in &mut node.children {
        keep_mean_within_extremes(child);
    }
}

/// The child indices from the root down to the deepest node that contains every node of `funcs` (their common
/// ancestor, or the node itself when there is one); empty when none is in the tree or the root is the deepest.
fn common_chain(root: &Node, funcs: &BTreeMap<u32, CallRate>) -> Vec<usize> {
    fn walk(node: &Node, funcs: &BTreeMap<u32, CallRate>, path: &mut Vec<usize>, common: &mut Option<Vec<usize>>) {
        if funcs.contains_key(&node.func) {
            match common {
                None => *common = Some(path.clone()),
                Some(prefix) => {
                    let shared = prefix.iter().zip(path.iter()).take_while(|(a, b)| a == b).count();
                    prefix.truncate(shared);
                }
            }
        }
        for (i, child) in node.children.iter().enumerate() {
            path.push(i);
            walk(child, funcs, path, common);
            path.pop();
        }
    }
    let mut common = None;
    walk(root, funcs, &mut Vec::new(), &mut common);
    common.unwrap_or_default()
}

/// Compensates `node` and its subtree; returns what the subtree's calls added to the caller of `node`'s calls
/// (ps): their outer costs, and every descendant's.
fn compensate_node(node: &mut Node, c: &Calibration, folded: bool) -> u128 {
    let descendants_ps: u128 = node.children.iter_mut().map(|child| compensate_node(child, c, folded)).sum();
    let costs = ProbeCosts::of(node, c, folded);
    let raw_ps = u128::from(node.duration_ns) * 1000;
    node.duration_ns = ps_to_ns(raw_ps.saturating_sub(costs.inner_ps).saturating_sub(descendants_ps));
    if node.calls == 1 && node.timed_calls == 1 {
        (node.min_ns, node.max_ns) = (node.duration_ns, node.duration_ns);
    } else if node.timed_calls > 0 {
        // A timed call paid its own inner cost and, on average, its share of the descendants' outer costs.
        let per_call_ps = costs.timed_inner_ps / u128::from(node.timed_calls) + descendants_ps / u128::from(node.calls);
        let per_call_ns = ps_to_ns(per_call_ps);
        node.min_ns = node.min_ns.saturating_sub(per_call_ns);
        node.max_ns = node.max_ns.saturating_sub(per_call_ns);
    }
    costs.outer_ps + descendants_ps
}

/// The probe costs of one node's calls, in ps, from the calibration and how its calls were recorded.
struct ProbeCosts {
    /// What the calls' own probes added to the node's total.
    inner_ps: u128,
    /// What they added to the timed calls' durations alone (for min and max).
    timed_inner_ps: u128,
    /// What they added to their caller's time.
    outer_ps: u128,
}

impl ProbeCosts {
    fn of(node: &Node, c: &Calibration, folded: bool) -> ProbeCosts {
        let [ri, ro, fo, ti, to] =
            [c.recorded_inner, c.recorded_outer, c.folded_outer, c.timed_inner, c.timed_outer].map(u128::from);
        if !folded {
            let calls = u128::from(node.calls);
            return ProbeCosts {
                inner_ps: calls * ri,
                timed_inner_ps: u128::from(node.timed_calls) * ri,
                outer_ps: calls * ro,
            };
        }
        let calls = u128::from(node.calls);
        let timed = u128::from(node.timed_calls);
        let exact = u128::from(node.exact_calls).min(timed);
        let sampled = timed - exact;
        let untimed = calls.saturating_sub(timed);
        ProbeCosts {
            // The untimed calls' share of the total is estimated from the sampled ones, which paid ti each.
            inner_ps: exact * ri + (calls - exact) * ti,
            timed_inner_ps: exact * ri + sampled * ti,
            outer_ps: exact * ro + sampled * to + untimed * fo,
        }
    }
}

/// Scales children down, at every level, so that they never add up to more than their parent (estimates and
/// over-compensation can make them): the estimated ones into what the exact ones leave, or all of them when the
/// exact ones alone do not fit. Each child's subtree is then clamped to its new total.
fn clamp_children(node: &mut Node) {
    let parent = u128::from(node.duration_ns);
    let sum: u128 = node.children.iter().map(|c| u128::from(c.duration_ns)).sum();
    // Children that ran concurrently (async futures polled together) may add up to more than their parent: only
    // the time they cover together must fit in it.
    if u128::from(node.children_busy_ns()) > parent {
        let exact: u128 = node.children.iter().filter(|c| !c.is_estimated()).map(|c| u128::from(c.duration_ns)).sum();
        let (room, scaled, only_estimated) =
            if exact < sum && exact <= parent { (parent - exact, sum - exact, true) } else { (parent, sum, false) };
        for child in node.children.iter_mut().filter(|c| !only_estimated || c.is_estimated()) {
            // Rounded down, so the scaled children add up to at most the parent; min and max scale with the total,
            // so the mean stays between them.
            let scale = |ns: u64| (u128::from(ns) * room / scaled) as u64;
            child.duration_ns = scale(child.duration_ns);
            if child.calls == 1 && child.timed_calls == 1 {
                (child.min_ns, child.max_ns) = (child.duration_ns, child.duration_ns);
            } else {
                child.max_ns = scale(child.max_ns).min(child.duration_ns);
                child.min_ns = scale(child.min_ns).min(child.max_ns);
            }
        }
    }
    for child in &mut node.children {
        clamp_children(child);
    }
}

/// Picoseconds to whole nanoseconds, rounded to the nearest.
fn ps_to_ns(ps: u128) -> u64 {
    u64::try_from((ps + 500) / 1000).unwrap_or(u64::MAX)
}
