//! Merged trees: repeated calls to one function under one parent folded into one node (per invocation), and the
//! aggregate over many invocations keyed by call path. Every view is built from these.
//!
//! A node of a folded trace (version 2 `a` line) already stands for many calls: it adds its exact call count, its
//! (possibly estimated) total and its timed calls' min and max. It has no per-call durations, so a merged node
//! that holds one has no percentiles ([`Merged::percentile_ns`] is `None`).

use std::collections::{BTreeMap, BTreeSet};

pub use crate::trace::compensate::{callers_of_retired, CallRate, Callers};
use crate::trace::{
    bucket_middle, AggregatePath, Invocation, Node, RetiredCalls, RunAggregate, ThreadKind, ThreadRef, Trace,
};

/// Every call of one function at one call path, merged.
#[derive(Debug, Clone, PartialEq)]
pub struct Merged {
    /// Dense index into the function table.
    pub func: u32,
    pub calls: u64,
    /// Calls whose duration was measured (`calls` unless a folded node sampled its timings).
    pub timed_calls: u64,
    /// Sum of the calls' durations; an estimate when `timed_calls < calls`.
    pub total_ns: u64,
    /// Sum of the calls' self times (time not spent in instrumented children).
    pub self_ns: u64,
    /// Shortest and longest timed call (0 when none was timed).
    pub min_ns: u64,
    pub max_ns: u64,
    /// Calls left by unwinding; a folded node with the panic flag counts 1 (at least one of its calls panicked).
    pub panicked: u64,
    /// `panicked` is a lower bound: some of it comes from folded nodes, which only say "at least one".
    pub panicked_at_least: bool,
    /// Calls cancelled (async functions dropped before completing, calls open when the invocation ended); a folded
    /// node with the flag counts 1, and sets `cancelled_at_least`.
    pub cancelled: u64,
    pub cancelled_at_least: bool,
    /// Calls that returned an `Err` (exact, in folded nodes too).
    pub errs: u64,
    /// Time the children ran concurrently with each other, summed over the calls: their durations add up to this
    /// much more than the time they covered.
    pub children_overlap_ns: u64,
    /// Calls recorded in folded nodes of several calls: they have no duration of their own.
    pub folded_calls: u64,
    /// Start of the first call (trace epoch ns).
    pub start_ns: u64,
    /// Invocations in which this call path occurs.
    pub invocations: u64,
    /// Allocations (and bytes) made while one of these calls was the innermost recorded call, and those of the
    /// whole subtree; exact.
    pub self_allocs: u64,
    pub self_alloc_bytes: u64,
    pub allocs: u64,
    pub alloc_bytes: u64,
    /// Every call's duration, sorted; kept only for aggregates (percentiles), and only of calls with their own.
    pub durations: Vec<u64>,
    /// A whole-run aggregate's histogram instead (`(bucket, calls)`, see `trace::bucket_low`): percentiles from it.
    pub histogram: Vec<(u32, u64)>,
    /// Calls made by work spawned on another thread or task: where it ran. Part of the merge key, so such calls
    /// stay apart from the spawner's own calls of the same function.
    pub lane: Option<ThreadRef>,
    /// Spawned work still running when its invocation was written (`[outlived]`).
    pub outlived: u64,
    /// Calls of this function at this call path made after its probe retired (not timed: their time is in the
    /// caller's), placed here by [`Merged::place_retired`]; not in `calls`.
    pub retired_calls: u64,
    /// The `retire` record's estimate of the time of one of `retired_calls` (0: unknown), set by
    /// [`Merged::estimate_retired_times`]: [`Merged::mean_ns`] then takes them in.
    pub retired_mean_ns: u64,
    /// `retired_calls` is an estimate: the function went quiet (its calls were no longer counted), or its retired
    /// calls were shared among several call paths (by their callers' rates of calling it).
    pub retired_estimated: bool,
    /// `retired_calls` were placed under a caller in a tree that recorded none of the function's calls, and the
    /// function is recursive (it calls itself, through others or not): they are its calls at every depth of its
    /// recursion under that caller, not only those this caller made.
    pub retired_all_depths: bool,
    /// In order of the first call.
    pub children: Vec<Merged>,
    /// The last invocation counted in `invocations` (to count each invocation once).
    last_invocation: usize,
}

impl Merged {
    fn new(func: u32, start_ns: u64) -> Merged {
        Merged {
            func,
            calls: 0,
            timed_calls: 0,
            total_ns: 0,
            self_ns: 0,
            min_ns: u64::MAX,
            max_ns: 0,
            panicked: 0,
            panicked_at_least: false,
            cancelled: 0,
            cancelled_at_least: false,
            errs: 0,
            children_overlap_ns: 0,
            folded_calls: 0,
            start_ns,
            invocations: 0,
            self_allocs: 0,
            self_alloc_bytes: 0,
            allocs: 0,
            alloc_bytes: 0,
            durations: Vec::new(),
            histogram: Vec::new(),
            lane: None,
            outlived: 0,
            retired_calls: 0,
            retired_mean_ns: 0,
            retired_estimated: false,
            retired_all_depths: false,
            children: Vec::new(),
            last_invocation: usize::MAX,
        }
    }

    /// One invocation's tree with repeated calls under one parent folded together (recursively).
    pub fn of_invocation(inv: &Invocation) -> Merged {
        let mut merged = Merged::new(inv.root.func, inv.root.start_ns);
        merged.add(&inv.root, 0, false);
        merged.finish();
        merged
    }

    fn add(&mut self, node: &Node, invocation: usize, keep_durations: bool) {
        self.calls += node.calls;
        self.timed_calls += node.timed_calls;
        self.total_ns = self.total_ns.saturating_add(node.duration_ns);
        self.self_ns = self.self_ns.saturating_add(node.self_ns());
        if node.timed_calls > 0 {
            self.min_ns = self.min_ns.min(node.min_ns);
            self.max_ns = self.max_ns.max(node.max_ns);
        }
        self.start_ns = self.start_ns.min(node.start_ns);
        self.panicked += u64::from(node.panicked);
        self.self_allocs += node.self_allocs;
        self.self_alloc_bytes += node.self_alloc_bytes;
        self.panicked_at_least |= node.panicked && node.calls > 1;
        self.cancelled += u64::from(node.cancelled);
        self.cancelled_at_least |= node.cancelled && node.calls > 1;
        self.errs += node.errs;
        self.outlived += u64::from(node.outlived);
        self.children_overlap_ns = self.children_overlap_ns.saturating_add(node.children_overlap_ns());
        if self.last_invocation != invocation {
            self.last_invocation = invocation;
            self.invocations += 1;
        }
        let single_call = node.calls == 1 && node.timed_calls == 1;
        if !single_call {
            self.folded_calls += node.calls;
        } else if keep_durations {
            self.durations.push(node.duration_ns);
        }
        for child in &node.children {
            // One invocation keeps each thread's calls apart; across invocations (`keep_durations`) thread numbers
            // mean nothing, so calls merge by call path and keep the kind of lane they share (`[thread]`).
            let across = keep_durations;
            let lane = child.lane.as_ref().map(|l| ThreadRef {
                kind: l.kind,
                id: if across { 0 } else { l.id },
                name: String::new(),
            });
            let at = match self.children.iter().position(|c| c.func == child.func && (across || c.lane == lane)) {
                Some(at) => {
                    if self.children[at].lane != lane {
                        self.children[at].lane = None;
                    }
                    at
                }
                None => {
                    let mut merged = Merged::new(child.func, child.start_ns);
                    merged.lane = lane;
                    self.children.push(merged);
                    self.children.len() - 1
                }
            };
            self.children[at].add(child, invocation, keep_durations);
        }
    }

    /// Sorts the durations, gives a node with no timed call a min of 0 and sums the subtree's allocations,
    /// recursively.
    fn finish(&mut self) {
        self.durations.sort_unstable();
        if self.min_ns == u64::MAX {
            self.min_ns = 0;
        }
        (self.allocs, self.alloc_bytes) = (self.self_allocs, self.self_alloc_bytes);
        for child in &mut self.children {
            child.finish();
            self.allocs += child.allocs;
            self.alloc_bytes += child.alloc_bytes;
        }
    }

    /// Every call at this call path: those recorded, and those made after the function's probe retired.
    pub fn all_calls(&self) -> u64 {
        self.calls.saturating_add(self.retired_calls)
    }

    /// Puts calls of retired functions made after they retired (`retired`, one entry per function) at the call
    /// paths where each function's calls were recorded, or, where this tree recorded none, under the nodes of its
    /// callers (`callers`: the functions seen calling it anywhere in the trace). They are shared by what each
    /// path's caller node is expected to have made at that caller's rate of calling the function while it was
    /// recorded, less those recorded there; in a recursion, top-down from what the caller path is expected to get
    /// ([`Merged::expected_on_paths`], [`retired_weights`]). A count shared among several paths is marked
    /// estimated. Returns what found no place (neither the function nor a caller is in the tree): the views still
    /// name it after the tree.
    pub fn place_retired(&mut self, retired: &[RetiredCalls], callers: &Callers) -> Vec<RetiredCalls> {
        // Placed in rounds: a function whose callers all retired too (a recursive cluster's) finds its place under
        // the nodes the others' placing added.
        let mut pending: Vec<RetiredCalls> = retired.iter().filter(|r| r.calls > 0).copied().collect();
        // Nodes of these functions get placed calls: as callers, their counts are not exact.
        let mut estimated: BTreeSet<u32> = pending.iter().map(|r| r.func).collect();
        // A function placed under its callers waits for those of them still to be placed (rhai's `Dynamic::clone`,
        // called by the `eval_stmt` a recursion's placing adds, went all under the one other caller in the tree),
        // unless nothing else can be placed.
        let mut wait = true;
        loop {
            let unplaced = self.place_retired_once(&pending, callers, &mut estimated, wait);
            if unplaced.is_empty() || (unplaced.len() == pending.len() && !wait) {
                return unplaced;
            }
            wait = unplaced.len() < pending.len();
            pending = unplaced;
        }
    }

    fn place_retired_once(
        &mut self,
        retired: &[RetiredCalls],
        callers: &Callers,
        estimated: &mut BTreeSet<u32>,
        wait: bool,
    ) -> Vec<RetiredCalls> {
        // Where each function's calls go: its own recorded paths, else (none in this tree) under its callers.
        let mut spots = Vec::new();
        let mut unplaced = Vec::new();
        for r in retired {
            let mut at = Vec::new();
            self.paths_of(&|m| m.func == r.func && m.calls > 0, &mut Vec::new(), &mut at);
            // The tree's top is the root's outermost call, always recorded: a retired root's calls (its nested
            // calls, retired with a recursive cluster) are never that call.
            at.retain(|path| !path.is_empty());
            let under_callers = at.is_empty();
            if under_callers {
                let of = callers.get(&r.func);
                // Not one it calls itself (a recursion's other members): those wait for it.
                let pending_caller = |caller: &u32| {
                    retired.iter().any(|other| other.func == *caller)
                        && !self.has_node_of(*caller)
                        && !calls_transitively(r.func, *caller, callers)
                };
                if wait && of.is_some_and(|of| of.keys().any(pending_caller)) {
                    unplaced.push(*r);
                    continue;
                }
                self.paths_of(&|m| of.is_some_and(|of| of.contains_key(&m.func)), &mut Vec::new(), &mut at);
            }
            spots.push((r, at, under_callers));
        }
        // The functions placed at their own paths are placed together (`on_path_shares`).
        let on_paths: Vec<(&RetiredCalls, &[Vec<usize>])> =
            spots.iter().filter(|(_, _, under)| !under).map(|(r, at, _)| (*r, at.as_slice())).collect();
        let on_path_shares = self.on_path_shares(&on_paths, callers);
        // Placed first, so the callees placed under them below see their counts with the placed calls.
        estimated.retain(|func| !on_paths.iter().any(|(r, _)| r.func == *func));
        spots.sort_by_key(|(_, _, under)| *under);
        for (r, at, under_callers) in spots {
            let expected: Vec<Option<f64>> = match under_callers {
                false => Vec::new(),
                true => at
                    .iter()
                    .map(|path| {
                        let caller = self.at(path);
                        let rate = callers.get(&r.func).and_then(|of| of.get(&caller.func)).filter(|rate| rate.per > 0);
                        let rate = rate.filter(|_| !estimated.contains(&caller.func))?;
                        Some(rate.calls as f64 * caller.all_calls() as f64 / rate.per as f64)
                    })
                    .collect(),
            };
            let mut by_calls: Vec<u64> = at.iter().map(|path| self.at(path).calls.max(1)).collect();
            if under_callers {
                // As on paths: a caller whose calls all ended before the function retired made what its rate says.
                let of = callers.get(&r.func);
                for (path, w) in at.iter().zip(&mut by_calls) {
                    let caller = self.at(path);
                    let closed =
                        of.and_then(|of| of.get(&caller.func)).is_some_and(|rate| rate.per > 0 && rate.open == 0);
                    if closed && caller.retired_calls == 0 && !estimated.contains(&caller.func) {
                        *w = 0;
                    }
                }
                if by_calls.iter().all(|&w| w == 0) {
                    by_calls = at.iter().map(|path| self.at(path).calls.max(1)).collect();
                }
            }
            let (shares, all_depths): (Vec<u64>, Vec<bool>) = match under_callers {
                false => (
                    at.iter().map(|path| on_path_shares.get(path).copied().unwrap_or(0)).collect(),
                    vec![false; at.len()],
                ),
                true => {
                    let recursive = is_recursive(r.func, callers);
                    (shares(r.calls, &retired_weights(r.calls, &expected, &by_calls)), vec![recursive; at.len()])
                }
            };
            // Shared among several candidate paths, a path's count is an estimate even where it got them all.
            let shared = r.estimated || at.len() > 1;
            if at.is_empty() {
                unplaced.push(*r);
            } else {
                estimated.remove(&r.func);
            }
            for ((path, share), all_depths) in at.iter().zip(shares).zip(all_depths).filter(|((_, n), _)| *n > 0) {
                let mut node = self.at_mut(path);
                if under_callers {
                    let child = match node.children.iter().position(|c| c.func == r.func && c.lane.is_none()) {
                        Some(i) => i,
                        None => {
                            let mut child = Merged::new(r.func, node.start_ns);
                            child.min_ns = 0;
                            child.invocations = node.invocations;
                            node.children.push(child);
                            node.children.len() - 1
                        }
                    };
                    node = &mut node.children[child];
                }
                node.retired_calls = node.retired_calls.saturating_add(share);
                node.retired_estimated |= shared;
                node.retired_all_depths |= all_depths;
            }
        }
        unplaced
    }

    /// The shares of retired calls at the recorded paths of the functions in `on_paths` (each with its paths). In a recursion a path's calls
    /// follow from its caller path's, which is often another member's, so expectations are taken top-down from
    /// what the caller path gets ([`Merged::expected_on_paths`]): the recursive functions first, then the others
    /// (a recursion's callees) from the shares their recursive caller paths got. A recursion recorded only along
    /// its first descent (rhai: one call a path, 120 deep) has no shape to follow: what no rate explains is
    /// shared by recorded calls, evenly down the spine, marked `~` (docs/truth-bench.md, eighth round).
    fn on_path_shares(
        &self,
        on_paths: &[(&RetiredCalls, &[Vec<usize>])],
        callers: &Callers,
    ) -> BTreeMap<Vec<usize>, u64> {
        let mut out = BTreeMap::new();
        if on_paths.is_empty() {
            return out;
        }
        let funcs: BTreeSet<u32> = on_paths.iter().map(|(r, _)| r.func).collect();
        let recursive: BTreeSet<u32> = funcs.iter().copied().filter(|&f| is_recursive(f, callers)).collect();
        let top = self.retired_calls as f64;
        let mut given = BTreeMap::new();
        for recursive_pass in [true, false] {
            let mut expected = BTreeMap::new();
            self.expected_on_paths(&funcs, callers, &given, top, &mut Vec::new(), &mut expected);
            for (r, at) in on_paths.iter().filter(|(r, _)| recursive.contains(&r.func) == recursive_pass) {
                let expected: Vec<Option<f64>> = at.iter().map(|path| expected[path]).collect();
                let mut by_calls: Vec<u64> = at.iter().map(|path| self.at(path).calls.max(1)).collect();
                // A caller whose every call ended before the function retired, and that got no calls placed
                // itself, made exactly what its rate says: none of the rest is its.
                for (path, w) in at.iter().zip(&mut by_calls) {
                    let caller = self.at(&path[..path.len() - 1]);
                    let rate = callers.get(&r.func).and_then(|of| of.get(&caller.func));
                    let closed = rate.is_some_and(|rate| rate.per > 0 && rate.open == 0);
                    if closed && !funcs.contains(&caller.func) && caller.retired_calls == 0 {
                        *w = 0;
                    }
                }
                if by_calls.iter().all(|&w| w == 0) {
                    by_calls = at.iter().map(|path| self.at(path).calls.max(1)).collect();
                }
                let shares = shares(r.calls, &retired_weights(r.calls, &expected, &by_calls));
                for (path, share) in at.iter().zip(shares) {
                    given.insert(path.clone(), share as f64);
                    out.insert(path.clone(), share);
                }
            }
        }
        out
    }

    /// The calls each recorded path of the functions `funcs` is expected to have made after they retired (by the
    /// path, `None` where nothing is known of its caller's rate), top-down: `placed` is what this node gets (its
    /// share in `given` where it has one, else its expectation). A path under a caller path expecting more calls takes, per such call, what its recorded calls made
    /// per recorded call of the caller path (a recursion's depth-bound shape: the outer calls of `list` all call
    /// `item`, the innermost none). Its caller path's calls recorded while open, say a recursion's outer calls,
    /// made the rest of their calls after it retired: at least the caller function's rate of calling it (learnt
    /// from every recorded call) times the caller path's calls, less those recorded. The larger of the two.
    fn expected_on_paths(
        &self,
        funcs: &BTreeSet<u32>,
        callers: &Callers,
        given: &BTreeMap<Vec<usize>, f64>,
        placed: f64,
        path: &mut Vec<usize>,
        out: &mut BTreeMap<Vec<usize>, Option<f64>>,
    ) {
        for (i, child) in self.children.iter().enumerate() {
            path.push(i);
            let mut child_placed = child.retired_calls as f64;
            if funcs.contains(&child.func) && child.calls > 0 {
                let rate = callers.get(&child.func).and_then(|of| of.get(&self.func)).filter(|rate| rate.per > 0);
                let recorded = child.calls as f64;
                let by_shape = placed * recorded / self.calls.max(1) as f64;
                let by_rate =
                    rate.map(|rate| rate.calls as f64 * (self.calls as f64 + placed) / rate.per as f64 - recorded);
                let expected = match (by_rate, placed > 0.0) {
                    (None, false) => None,
                    (by_rate, _) => Some(by_shape.max(by_rate.unwrap_or(0.0)).max(0.0)),
                };
                child_placed = given.get(path).copied().unwrap_or(expected.unwrap_or(0.0));
                out.insert(path.clone(), expected);
            }
            child.expected_on_paths(funcs, callers, given, child_placed, path, out);
            path.pop();
        }
    }

    /// The child-index paths of the nodes `wanted` picks, in preorder.
    fn paths_of(&self, wanted: &dyn Fn(&Merged) -> bool, path: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
        if wanted(self) {
            out.push(path.clone());
        }
        for (i, child) in self.children.iter().enumerate() {
            path.push(i);
            child.paths_of(wanted, path, out);
            path.pop();
        }
    }

    fn at(&self, path: &[usize]) -> &Merged {
        path.iter().fold(self, |node, &i| &node.children[i])
    }

    fn at_mut(&mut self, path: &[usize]) -> &mut Merged {
        path.iter().fold(self, |node, &i| &mut node.children[i])
    }

    /// A node of `func` is in this subtree.
    fn has_node_of(&self, func: u32) -> bool {
        self.func == func || self.children.iter().any(|c| c.has_node_of(func))
    }

    /// This subtree has calls placed by [`Merged::place_retired`].
    pub fn has_retired_calls(&self) -> bool {
        self.retired_calls > 0 || self.children.iter().any(Merged::has_retired_calls)
    }

    /// Gives each node with calls made after its function retired the `retire` record's estimate of their time
    /// (`retirements`: the trace's), so that [`Merged::mean_ns`] counts them: a retired function's recorded calls
    /// are its first ones, with cold caches, and its mean over them alone was up to 1.9x its plain mean
    /// (docs/truth-bench.md, "Eighth round"). Call after [`Merged::place_retired`].
    ///
    /// The node's min and max then take in that estimate too, as estimates: among calls whose mean is the estimate,
    /// one took at most that and one at least, and a mean shown outside its own extremes contradicts itself
    /// (handlebars showed 225 such paths, winnow 1,200: recorded calls of 10 µs, later ones at 5 ns each).
    ///
    /// Not at the paths of a recursion (the function is on the path above or in the subtree below): a recursive
    /// cluster's estimate is its time per call of any depth, while a path's calls are of one depth, the outer ones
    /// holding all the inner ones (e2e-recursive's outermost `item`, recorded at 259 µs, showed a mean of 86 µs
    /// from two later calls at the cluster's 26 ns). Those paths keep their recorded calls' mean.
    pub fn estimate_retired_times(&mut self, retirements: &[crate::trace::Retirement]) {
        self.estimate_retired_times_below(retirements, &mut Vec::new());
    }

    fn estimate_retired_times_below(&mut self, retirements: &[crate::trace::Retirement], above: &mut Vec<u32>) {
        let recursive = || above.contains(&self.func) || self.children.iter().any(|c| c.has_node_of(self.func));
        if self.retired_calls > 0 && !recursive() {
            let estimate = retirements.iter().filter(|r| r.func == self.func).map(|r| r.mean_ns).max();
            self.retired_mean_ns = estimate.unwrap_or(0);
            if self.retired_mean_ns > 0 && self.timed_calls > 0 {
                self.min_ns = self.min_ns.min(self.retired_mean_ns);
                self.max_ns = self.max_ns.max(self.retired_mean_ns);
            }
        }
        above.push(self.func);
        for child in &mut self.children {
            child.estimate_retired_times_below(retirements, above);
        }
        above.pop();
    }

    /// Mean duration of one call, rounded to the nearest ns (an estimate when [`Merged::is_estimated`]). With calls
    /// made after the function retired and its `retire` record's estimate (`retired_mean_ns`), the mean of every
    /// call: the recorded ones as timed, the later ones at that estimate.
    pub fn mean_ns(&self) -> u64 {
        let mean = if self.has_estimated_later_calls() {
            let later = u128::from(self.retired_calls) * u128::from(self.retired_mean_ns);
            let calls = u128::from(self.calls) + u128::from(self.retired_calls);
            let total = u128::from(self.total_ns) + later;
            u64::try_from((total + calls / 2) / calls).unwrap_or(u64::MAX)
        } else {
            let (total, calls) = (u128::from(self.total_ns), u128::from(self.calls));
            total.checked_add(calls / 2).and_then(|t| t.checked_div(calls)).map_or(0, |mean| mean as u64)
        };
        // Each node's mean lies within its timed extremes (`trace::compensate`), and the later calls' estimate within
        // the extremes it widened (`estimate_retired_times`); rounding must not take the merged mean outside them.
        if self.timed_calls > 0 && self.min_ns <= self.max_ns {
            mean.clamp(self.min_ns, self.max_ns)
        } else {
            mean
        }
    }

    /// The times are estimates: some calls (of folded nodes) were not timed.
    pub fn is_estimated(&self) -> bool {
        self.timed_calls < self.calls
    }

    /// The mean (and the min and max it widened) takes in calls made after the function retired at the `retire`
    /// record's estimate ([`Merged::estimate_retired_times`]).
    pub fn has_estimated_later_calls(&self) -> bool {
        self.retired_calls > 0 && self.retired_mean_ns > 0
    }

    /// The mean is an estimate: some recorded calls were not timed, or it takes in calls made after the function
    /// retired at an estimate.
    pub fn mean_is_estimated(&self) -> bool {
        self.is_estimated() || self.has_estimated_later_calls()
    }

    /// This subtree has a node with estimated times.
    pub fn has_estimates(&self) -> bool {
        self.is_estimated() || self.children.iter().any(Merged::has_estimates)
    }

    /// Nearest-rank percentile (`q` in 0..=1) of the call durations; aggregates only. `None` when some calls were
    /// recorded folded or made after the function retired: they have no durations of their own, and percentiles of
    /// the others alone would mislead.
    pub fn percentile_ns(&self, q: f64) -> Option<u64> {
        // Calls made after the function retired have no durations either: a median of the first, cold, recorded
        // calls alone read above the mean of all of them.
        if self.folded_calls > 0 || self.retired_calls > 0 {
            return None;
        }
        if !self.histogram.is_empty() {
            return histogram_percentile(&self.histogram, q).map(|ns| ns.clamp(self.min_ns, self.max_ns));
        }
        if self.durations.is_empty() {
            return Some(0);
        }
        let rank = (q * self.durations.len() as f64).ceil() as usize;
        Some(self.durations[rank.clamp(1, self.durations.len()) - 1])
    }
}

/// The aggregate tree of every recorded invocation of one root function.
#[derive(Debug, Clone, PartialEq)]
pub struct Aggregate {
    pub tree: Merged,
    /// Invocations of this root.
    pub invocations: u64,
    /// Calls of retired functions after they retired, summed over these invocations (per function, in order of
    /// first appearance): they are not in the tree.
    pub retired: Vec<RetiredCalls>,
}

impl Aggregate {
    /// Calls of `node` per invocation of the root.
    pub fn calls_per_invocation(&self, node: &Merged) -> f64 {
        if self.invocations == 0 {
            0.0
        } else {
            node.calls as f64 / self.invocations as f64
        }
    }
}

/// Aggregates the given invocations by call path, one tree per root function (in order of first appearance).
pub fn aggregate<'a>(invocations: impl IntoIterator<Item = &'a Invocation>) -> Vec<Aggregate> {
    let mut out: Vec<Aggregate> = Vec::new();
    for (i, inv) in invocations.into_iter().enumerate() {
        let at = match out.iter().position(|a| a.tree.func == inv.root.func) {
            Some(at) => at,
            None => {
                let tree = Merged::new(inv.root.func, inv.root.start_ns);
                out.push(Aggregate { tree, invocations: 0, retired: Vec::new() });
                out.len() - 1
            }
        };
        out[at].invocations += 1;
        add_retired(&mut out[at].retired, &inv.retired);
        out[at].tree.add(&inv.root, i, true);
    }
    for agg in &mut out {
        agg.tree.finish();
    }
    out
}

/// Nearest-rank percentile of a histogram: the middle of the bucket that holds it.
fn histogram_percentile(histogram: &[(u32, u64)], q: f64) -> Option<u64> {
    let count: u64 = histogram.iter().map(|&(_, n)| n).sum();
    let rank = ((q * count as f64).ceil() as u64).clamp(1, count.max(1));
    let mut seen = 0;
    histogram
        .iter()
        .find(|&&(_, n)| {
            seen += n;
            seen >= rank
        })
        .map(|&(bucket, _)| bucket_middle(bucket))
}

/// The runtime's whole-run aggregate (every invocation, kept or not) as aggregates by root function, when the trace
/// has one. Its times are raw: the runtime folds them before any compensation.
pub fn whole_run(trace: &Trace) -> Option<Vec<Aggregate>> {
    let run: &RunAggregate = trace.aggregate.as_ref()?;
    Some(
        run.roots
            .iter()
            .map(|root| Aggregate {
                tree: {
                    let mut tree = merged_path(root, root.calls, None);
                    clamp_estimates(&mut tree);
                    tree
                },
                invocations: root.calls,
                // Retired calls are per function, not per root: with several roots they show under the first.
                retired: if root.func == run.roots[0].func { run.retired.clone() } else { Vec::new() },
            })
            .collect(),
    )
}

/// One whole-run path as a merged node; the calls under a spawned-work marker path hang directly under its parent,
/// marked with where they ran (`lane`, no thread number: they merge over the whole run), apart from the parent's
/// own calls of the same functions.
fn merged_path(path: &AggregatePath, invocations: u64, lane: Option<ThreadRef>) -> Merged {
    let mut merged = Merged::new(path.func, 0);
    merged.calls = path.calls;
    merged.timed_calls = path.timed;
    merged.total_ns = path.total_ns;
    merged.min_ns = path.min_ns;
    merged.max_ns = path.max_ns;
    merged.folded_calls = path.calls - path.timed.min(path.calls);
    merged.invocations = invocations;
    merged.histogram = path.histogram.clone();
    merged.lane = lane;
    let [own, threads, tasks] = path.children_by_lane();
    let lanes = [(own, None), (threads, Some(ThreadKind::Thread)), (tasks, Some(ThreadKind::Task))];
    for (children, kind) in lanes {
        let lane = kind.map(|kind| ThreadRef { kind, id: 0, name: String::new() });
        merged.children.extend(children.iter().map(|call| merged_path(call, invocations, lane.clone())));
    }
    // The runtime's self time counts overlapping children once, as the trees do; without it (an older runtime),
    // the total less the children's summed totals.
    let children_ns: u64 = merged.children.iter().map(|c| c.total_ns).sum();
    merged.self_ns = path.self_ns.unwrap_or_else(|| merged.total_ns.saturating_sub(children_ns)).min(merged.total_ns);
    merged
}

/// Scales a whole-run path's estimated children (some calls untimed, their total extrapolated from 1 in N) down
/// so that its own-thread children never add up to more than it, into what its exact children leave; each scaled
/// child's subtree is then clamped to its new total. The runtime estimates each path on its own, so a few slow
/// sampled calls can make a child's estimate exceed its parent's (toml_edit: a 30 ns caller over a 205 ns child);
/// the trees get the same clamp in `trace::compensate`. Spawned work on other threads may overlap and is left.
fn clamp_estimates(node: &mut Merged) {
    let own = |c: &&mut Merged| c.lane.is_none();
    let estimated = |c: &Merged| c.timed_calls < c.calls;
    let parent = u128::from(node.total_ns);
    let (mut exact, mut scaled) = (0u128, 0u128);
    for child in node.children.iter_mut().filter(own) {
        if estimated(child) {
            scaled += u128::from(child.total_ns);
        } else {
            exact += u128::from(child.total_ns);
        }
    }
    if scaled > 0 && exact + scaled > parent && exact <= parent {
        let room = parent - exact;
        // Rounded down, so the scaled children add up to at most the room; max and min scale with the total.
        let scale = |ns: u64| (u128::from(ns) * room / scaled) as u64;
        for child in node.children.iter_mut().filter(own).filter(|c| estimated(c)) {
            child.total_ns = scale(child.total_ns);
            child.self_ns = child.self_ns.min(child.total_ns);
            child.max_ns = child.max_ns.min(child.total_ns);
            child.min_ns = child.min_ns.min(child.max_ns);
        }
    }
    for child in &mut node.children {
        clamp_estimates(child);
    }
}

/// Whether `func` is seen calling itself, directly or through other functions (its callers' callers, and so on).
fn is_recursive(func: u32, callers: &Callers) -> bool {
    calls_transitively(func, func, callers)
}

/// Whether `caller` is seen calling `callee`, directly or through other functions.
fn calls_transitively(caller: u32, callee: u32, callers: &Callers) -> bool {
    let mut seen = BTreeSet::new();
    let mut next = vec![callee];
    while let Some(func) = next.pop() {
        for &up in callers.get(&func).into_iter().flat_map(|of| of.keys()) {
            if up == caller {
                return true;
            }
            if seen.insert(up) {
                next.push(up);
            }
        }
    }
    false
}

/// Weights for [`shares`] of `total` retired calls among candidate paths: those with an expectation (`Some`: their
/// caller's count is known and so is its rate of calling the function) take what they expect (scaled down to the
/// total when they expect more), and what is left goes to every path by `by_calls` (the function's recorded calls
/// there, or the caller's). The expectations can explain little of the count: a caller whose one call was still
/// open when the function retired (pulldown-cmark's `HtmlWriter::run`, 848 calls of `Parser::next` recorded of
/// 759,448) made most of its calls after, and its rate from before says nothing of them.
fn retired_weights(total: u64, expected: &[Option<f64>], by_calls: &[u64]) -> Vec<u64> {
    let wanted: f64 = expected.iter().flatten().sum();
    let all_calls: u64 = by_calls.iter().sum();
    let total = total as f64;
    let scale = if wanted > total { total / wanted } else { 1.0 };
    let left = total - wanted * scale;
    let weights: Vec<f64> = expected
        .iter()
        .zip(by_calls)
        .map(|(e, &w)| e.unwrap_or(0.0) * scale + left * w as f64 / all_calls.max(1) as f64)
        .collect();
    let most = weights.iter().copied().fold(0.0, f64::max);
    if most <= 0.0 {
        return by_calls.to_vec();
    }
    // Integer weights for `shares`, precise to about one part in 2^40 of the largest.
    weights.iter().map(|&w| (w / most * (1u64 << 40) as f64).round() as u64).collect()
}

/// `total` split in proportion to `weights`, rounded so that the shares add up to `total` exactly (the largest
/// remainders get the units left over).
fn shares(total: u64, weights: &[u64]) -> Vec<u64> {
    let sum: u128 = weights.iter().map(|&w| u128::from(w)).sum();
    if sum == 0 {
        return vec![0; weights.len()];
    }
    let exact: Vec<(u64, u128)> = weights
        .iter()
        .map(|&w| {
            let scaled = u128::from(total) * u128::from(w);
            ((scaled / sum) as u64, scaled % sum)
        })
        .collect();
    let mut out: Vec<u64> = exact.iter().map(|&(n, _)| n).collect();
    let mut left = total - out.iter().sum::<u64>();
    let mut order: Vec<usize> = (0..out.len()).collect();
    order.sort_by(|&a, &b| exact[b].1.cmp(&exact[a].1).then(a.cmp(&b)));
    for i in order {
        if left == 0 {
            break;
        }
        out[i] += 1;
        left -= 1;
    }
    out
}

/// Adds one invocation's retired calls to a sum per function.
pub fn add_retired(sum: &mut Vec<RetiredCalls>, calls: &[RetiredCalls]) {
    for r in calls {
        match sum.iter_mut().find(|s| s.func == r.func) {
            Some(s) => {
                s.calls = s.calls.saturating_add(r.calls);
                s.counted = s.counted.saturating_add(r.counted);
                s.estimated |= r.estimated;
            }
            None => sum.push(*r),
        }
    }
}

/// The invocations a view shows: all of them, or only `--invocation K` (1-based, completion order).
pub fn select(trace: &Trace, invocation: Option<usize>) -> anyhow::Result<Vec<(usize, &Invocation)>> {
    match invocation {
        None => Ok(trace.invocations.iter().enumerate().map(|(i, inv)| (i + 1, inv)).collect()),
        Some(k) => match k.checked_sub(1).and_then(|i| trace.invocations.get(i)) {
            Some(inv) => Ok(vec![(k, inv)]),
            None if trace.invocations.is_empty() => {
                anyhow::bail!("invocation {k} does not exist: the trace holds no complete invocation")
            }
            None => {
                let count = trace.invocations.len();
                Err(crate::error::UserError::new(format!("invocation {k} does not exist in {}", trace.path.display()))
                    .hint(format!(
                        "the trace holds {}: pass --invocation 1..={count}",
                        crate::units::plural(count as u64, "invocation")
                    ))
                    .into())
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{ThreadKind, ThreadRef};

    fn node(func: u32, start_ns: u64, duration_ns: u64, children: Vec<Node>) -> Node {
        Node::call(func, start_ns, duration_ns, false, children)
    }

    /// A folded call path: `calls` calls of which `timed` took `timed_ns` together, `min`..`max` each.
    fn path(func: u32, calls: u64, timed: u64, timed_ns: u64, (min, max): (u64, u64), children: Vec<Node>) -> Node {
        Node::path(func, 0, calls, timed, timed_ns, (min, max), children)
    }

    fn inv(root: Node) -> Invocation {
        Invocation::new(0, ThreadRef { kind: ThreadKind::Thread, id: 1, name: String::new() }, root)
    }

    #[test]
    fn repeated_calls_fold_with_their_children() {
        let root = node(
            0,
            0,
            100,
            vec![
                node(1, 0, 30, vec![node(2, 0, 10, vec![])]),
                node(3, 30, 5, vec![]),
                node(1, 40, 50, vec![node(2, 40, 20, vec![])]),
            ],
        );
        let merged = Merged::of_invocation(&inv(root));
        assert_eq!(merged.self_ns, 15);
        let funcs: Vec<u32> = merged.children.iter().map(|c| c.func).collect();
        assert_eq!(funcs, [1, 3]);
        let one = &merged.children[0];
        assert_eq!((one.calls, one.total_ns, one.self_ns, one.min_ns, one.max_ns), (2, 80, 50, 30, 50));
        assert_eq!((one.children[0].calls, one.children[0].total_ns), (2, 30));
        assert!(one.durations.is_empty());
    }

    #[test]
    fn aggregates_count_invocations_and_percentiles() {
        let invs: Vec<Invocation> =
            (1..=100).map(|d| inv(node(0, d * 1000, d, vec![node(1, d * 1000, 1, vec![])]))).collect();
        let aggs = aggregate(&invs);
        assert_eq!(aggs.len(), 1);
        let tree = &aggs[0].tree;
        assert_eq!((tree.calls, tree.invocations, tree.total_ns), (100, 100, 5050));
        let percentiles = (tree.percentile_ns(0.5), tree.percentile_ns(0.99), tree.percentile_ns(1.0));
        assert_eq!(percentiles, (Some(50), Some(99), Some(100)));
        assert_eq!(tree.mean_ns(), 51);
        assert_eq!(aggs[0].calls_per_invocation(&tree.children[0]), 1.0);
    }

    #[test]
    fn folded_nodes_add_their_calls_and_combine_min_and_max() {
        // Two sibling nodes of function 1 (as in a tree with a repeated path): one exact, one sampled.
        let root = path(
            0,
            1,
            1,
            10_000,
            (10_000, 10_000),
            vec![path(1, 100, 100, 5_000, (20, 90), vec![]), path(1, 1000, 10, 300, (5, 200), vec![])],
        );
        let invocation = Invocation { folded: true, ..inv(root) };
        let merged = Merged::of_invocation(&invocation);
        let one = &merged.children[0];
        assert_eq!((one.calls, one.timed_calls, one.total_ns, one.min_ns, one.max_ns), (1100, 110, 35_000, 5, 200));
        assert!(one.is_estimated() && !merged.is_estimated() && merged.has_estimates());
        assert_eq!(one.mean_ns(), 32);
        // The children's estimated 35µs exceed the root's measured 10µs: self time saturates at 0.
        assert_eq!(merged.self_ns, 0);
        // Untimed calls only: min and max say 0, not u64::MAX.
        let untimed = Invocation { folded: true, ..inv(path(0, 5, 0, 0, (0, 0), vec![])) };
        let merged = Merged::of_invocation(&untimed);
        assert_eq!((merged.min_ns, merged.max_ns, merged.total_ns, merged.mean_ns()), (0, 0, 0, 0));
    }

    #[test]
    fn aggregates_have_no_percentiles_where_calls_were_folded() {
        let exact = inv(node(0, 0, 100, vec![node(1, 0, 40, vec![]), node(2, 50, 10, vec![])]));
        let folded = Invocation {
            folded: true,
            ..inv(path(
                0,
                1,
                1,
                200,
                (200, 200),
                vec![path(1, 50, 5, 50, (8, 12), vec![]), path(2, 1, 1, 7, (7, 7), vec![])],
            ))
        };
        let aggs = aggregate([&exact, &folded]);
        let tree = &aggs[0].tree;
        // The root and `2` were single calls in both: per-call durations exist.
        assert_eq!(tree.percentile_ns(0.5), Some(100));
        assert_eq!(tree.children[1].percentile_ns(1.0), Some(10));
        // `1` was 50 calls in one folded node: no percentile, but exact calls and an estimated total.
        let one = &tree.children[0];
        assert_eq!((one.calls, one.total_ns, one.percentile_ns(0.5), one.is_estimated()), (51, 540, None, true));
        assert_eq!((one.min_ns, one.max_ns, one.invocations), (8, 40, 2));
    }

    #[test]
    fn shares_add_up_to_the_total_in_proportion() {
        assert_eq!(shares(40, &[2, 6]), [10, 30]);
        assert_eq!(shares(10, &[1, 1, 1]), [4, 3, 3]);
        assert_eq!(shares(7, &[0, 0]), [0, 0]);
        assert_eq!(shares(u64::MAX, &[u64::MAX, 1]).iter().fold(0u64, |a, &b| a.wrapping_add(b)), u64::MAX);
    }
}
