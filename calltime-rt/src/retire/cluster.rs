//! Recursive clusters: a set of mutually recursive functions (a strongly connected component of the probed calls
//! seen in a tree) retires together, since none of its members is ever a leaf and leaves alone retire one by one.
//!
//! What retires is the cluster's unit: its members and every unretired function seen under their calls (those
//! would otherwise hang under a retired caller, a tree that never happened). The rule is the leaves' rule applied
//! to the unit as one function: over at least `min_calls` of its calls (summed from the cluster's first tree), the
//! compensated time of its outermost calls (those with no unit call above them) per unit call is under `factor x
//! recorded_outer`, i.e. its probes cost more than a `1 / factor` share of the time they measure. Its callers
//! retire after it, as the leaves they then are. Each member's `retire` record carries the cycle's calls and mean;
//! a unit function outside the cycle gets its own mean (and its share of the calls), so views estimate its later
//! calls at its own time.
//!
//! The invocation's root may be a member (a recursive parser's entry point): its outermost call is always recorded
//! and timed, and the functions it calls directly stay under it; only its nested calls retire (`probe::enter_root`
//! reads its state byte when an invocation is running). The cycle's calls are counted, exactly, until an invocation
//! ends having counted enough of them (as for any retired function: `quiet_after` invocations, or
//! `QUIET_AT_END_CALLS` calls of the unit's functions together in one); then every member goes quiet at once, and the
//! rest of the unit with them (`CYCLE_OF`, `UNIT_OF`), never within an invocation. A quiet function's later calls
//! are estimated from its callers' calls, and within a cycle those callers are estimates themselves: so the tool
//! estimates a member's calls per call of the cycle's nearest caller outside it (or per invocation when the root is
//! a member), from the invocations that counted them all (cargo-calltime's `trace/quiet.rs`). Until then a counted
//! call costs the state byte's load and a per-thread counter; after, the load and a branch, and a skipped
//! invocation (the sampler's) no more. The rest of the unit goes quiet with the cycle, or before it as other
//! retired functions do: its callers are the cluster's members, or functions under them, estimated first.
//!
//! Decided on the writer's watch (per-call invocations, every node closed) and at an invocation's fold, where the
//! calls on the stack are still open: their calls count as edges between functions (they happened), but neither
//! their calls nor their times enter the sums (an open call has no end yet), and the closed member calls under them
//! count as outermost. So a big recursive invocation (a parser's file, an interpreter's script) retires its
//! cluster at its first fold, and the rest of it, and every later invocation, counts the members' nested calls
//! instead of recording them on folded paths.

use super::{retire_cluster_member, retired_state, Settings, NEW_CYCLE, RETIRE_INDICES};
use crate::calibrate::Calibration;
use crate::recorder::{Node, OPEN, PARENT_MASK};

/// Distinct probed functions in one tree past which its clusters are not looked for (bit sets of `WORDS` words).
/// The first 4,096 calls of a parser's file (syn's) reach about 130.
const MAX_FUNCTIONS: usize = 64 * WORDS;
const WORDS: usize = 4;
const NONE: u16 = u16::MAX;

/// A set of local function numbers.
#[derive(Clone, Copy, Default)]
struct Set([u64; WORDS]);

impl Set {
    fn has(&self, i: usize) -> bool {
        self.0[i / 64] & (1 << (i % 64)) != 0
    }
    fn insert(&mut self, i: usize) {
        self.0[i / 64] |= 1 << (i % 64);
    }
    fn union(&mut self, other: &Set) {
        for (word, o) in self.0.iter_mut().zip(other.0) {
            *word |= o;
        }
    }
}

/// Per-observer scratch space and the sums of each cluster seen so far.
pub(super) struct Clusters {
    /// Per function index: its number among this tree's functions (`NONE` between observations).
    local_of: Vec<u16>,
    /// Per local number: the function index.
    funcs: Vec<u32>,
    /// Per node: its function's local number, or `NONE` (retired meanwhile, or beyond `RETIRE_INDICES`).
    node_local: Vec<u16>,
    /// Per local number: the calls between the tree's functions (all, and those below the root's outermost call),
    /// then who reaches whom through them (kept to reuse their allocation: the fold's stack may be deep).
    calls: Vec<Set>,
    calls_out: Vec<Set>,
    reach: Vec<Set>,
    below: Vec<Set>,
    /// Per node: some member of the cluster being summed is this node or above it.
    under_member: Vec<bool>,
    /// Per function index: the unretired functions it was ever seen calling (a cluster retires only when none
    /// of its members calls outside it, in any tree seen: a tree of a cluster's other shape may call out of it).
    callees: Vec<Vec<u32>>,
    /// Per cluster ever seen: its members (function indices, ascending) and its sums over the observations.
    sums: Vec<Sums>,
}

struct Sums {
    members: Vec<u32>,
    /// Member calls that would retire (every member node but the invocation's root).
    calls: u64,
    /// Compensated ticks of the outermost member calls.
    outer_ticks: f64,
    retired: bool,
}

impl Clusters {
    pub(super) const fn new() -> Clusters {
        Clusters {
            local_of: Vec::new(),
            funcs: Vec::new(),
            node_local: Vec::new(),
            under_member: Vec::new(),
            calls: Vec::new(),
            calls_out: Vec::new(),
            reach: Vec::new(),
            below: Vec::new(),
            callees: Vec::new(),
            sums: Vec::new(),
        }
    }

    /// Looks for the closed recursive clusters of a finished per-call tree (parents before children, slot 0 the
    /// root; `descendants[slot]`: probed nodes under it), adds their calls and outermost times to their sums, and
    /// retires each cluster whose sums meet the rule.
    pub(super) fn observe(&mut self, nodes: &[Node], descendants: &[u32], settings: &Settings, cal: &Calibration) {
        if self.collect(nodes) {
            self.find_and_sum(nodes, descendants, settings, cal);
        }
        for &func in &self.funcs {
            self.local_of[func as usize] = NONE;
        }
        self.funcs.clear();
    }

    /// Numbers the tree's functions that may retire. False when the tree cannot be analysed (too many functions).
    fn collect(&mut self, nodes: &[Node]) -> bool {
        self.node_local.clear();
        for node in nodes {
            let index = node.index as usize;
            if index >= RETIRE_INDICES || retired_state(node.index) != 0 {
                self.node_local.push(NONE);
                continue;
            }
            if self.local_of.len() <= index {
                self.local_of.resize(index + 1, NONE);
            }
            if self.local_of[index] == NONE {
                if self.funcs.len() == MAX_FUNCTIONS {
                    return false;
                }
                self.local_of[index] = self.funcs.len() as u16;
                self.funcs.push(node.index);
            }
            self.node_local.push(self.local_of[index]);
        }
        true
    }

    fn find_and_sum(&mut self, nodes: &[Node], descendants: &[u32], settings: &Settings, cal: &Calibration) {
        let n = self.funcs.len();
        // Calls between this tree's unretired functions, then who reaches whom (Warshall, on bit sets).
        // `calls_out` leaves out the calls of the invocation's root call itself: it is always recorded, so its
        // callees never lose their place under it.
        for sets in [&mut self.calls, &mut self.calls_out] {
            sets.clear();
            sets.resize(n, Set::default());
        }
        for (slot, node) in nodes.iter().enumerate().skip(1) {
            let parent = (node.link & PARENT_MASK) as usize;
            let (Some(&p), c) = (self.node_local.get(parent), self.node_local[slot]) else { continue };
            if parent < slot && p != NONE && c != NONE {
                self.calls[p as usize].insert(c as usize);
                if parent != 0 {
                    self.calls_out[p as usize].insert(c as usize);
                }
            }
        }
        closure(&self.calls, &mut self.reach);
        closure(&self.calls_out, &mut self.below);
        let reach = &self.reach;
        if (0..n).all(|f| !reach[f].has(f)) {
            return; // no recursion among the unretired functions
        }
        for (f, callees) in self.calls_out.iter().enumerate() {
            let caller = self.funcs[f] as usize;
            if self.callees.len() <= caller {
                self.callees.resize(caller + 1, Vec::new());
            }
            for g in (0..n).filter(|&g| callees.has(g)) {
                if !self.callees[caller].contains(&self.funcs[g]) {
                    self.callees[caller].push(self.funcs[g]);
                }
            }
        }
        let mut done = Set::default();
        for f in 0..n {
            if !self.reach[f].has(f) || done.has(f) {
                continue; // not recursive, or its cluster was handled
            }
            let mut set = Set::default();
            for g in (0..n).filter(|&g| self.reach[f].has(g) && self.reach[g].has(f)) {
                set.insert(g);
            }
            done.union(&set);
            // The unit: the cluster and every unretired function under its calls.
            let mut unit = set;
            for g in (0..n).filter(|&g| set.has(g)) {
                unit.union(&self.below[g]);
            }
            self.sum_cluster(&set, &unit, nodes, descendants, settings, cal);
        }
    }

    /// Adds one tree's calls of the unit of cluster `set` (local numbers) to the cluster's sums, and retires the
    /// unit when the rule holds.
    fn sum_cluster(
        &mut self,
        set: &Set,
        unit: &Set,
        nodes: &[Node],
        descendants: &[u32],
        settings: &Settings,
        cal: &Calibration,
    ) {
        let in_unit = |local: u16| local != NONE && unit.has(local as usize);
        let (mut calls, mut outer_ticks) = (0u64, 0f64);
        self.under_member.clear();
        for (slot, node) in nodes.iter().enumerate() {
            // An open call (at a fold) neither counts nor covers: the closed member calls under it are outermost.
            let open = node.end == OPEN;
            let member = in_unit(self.node_local[slot]);
            let parent = (node.link & PARENT_MASK) as usize;
            let above = slot > 0 && parent < slot && self.under_member[parent];
            self.under_member.push((member && !open) || above);
            if !member || open {
                continue;
            }
            calls += u64::from(slot != 0);
            if !above {
                let raw = node.end.saturating_sub(node.start) as f64;
                let probes = cal.recorded_inner_ticks + cal.recorded_outer_ticks * f64::from(descendants[slot]);
                outer_ticks += (raw - probes).max(0.0);
            }
        }
        let locals = (0..self.funcs.len()).filter(|&g| set.has(g));
        let mut members: Vec<u32> = locals.map(|g| self.funcs[g]).collect();
        members.sort_unstable();
        let at = match self.sums.iter().position(|s| s.members == members) {
            Some(at) => at,
            None => {
                self.sums.push(Sums { members, calls: 0, outer_ticks: 0.0, retired: false });
                self.sums.len() - 1
            }
        };
        let tree_calls = calls;
        let sums = &mut self.sums[at];
        sums.calls += calls;
        sums.outer_ticks += outer_ticks;
        let mean = sums.outer_ticks / sums.calls.max(1) as f64;
        let fast = mean < settings.factor as f64 * cal.recorded_outer_ticks;
        if sums.retired || sums.calls < settings.min_calls || !fast {
            return;
        }
        // The unit over every tree seen: the members and every unretired function seen under their calls.
        let mut unit: Vec<u32> = sums.members.clone();
        let mut next = 0;
        while next < unit.len() {
            let callees = self.callees.get(unit[next] as usize).map_or(&[][..], Vec::as_slice);
            for &callee in callees {
                if !unit.contains(&callee) && retired_state(callee) == 0 {
                    unit.push(callee);
                }
            }
            next += 1;
            if unit.len() > MAX_FUNCTIONS {
                return; // too many to retire as one
            }
        }
        // Retired all or not at all: a unit function left probed would hang under a caller that no longer records.
        // No count of slots bounds it any more (syn's expression cluster waited for one past 126: docs/truth-bench.md,
        // "Eighth round"); only indices past the plan's functions, which no probe has, stay probed.
        if !unit.iter().all(|&index| super::may_retire(index)) {
            return;
        }
        sums.retired = true;
        let (unit_calls, mean_ns) = (sums.calls, (mean * cal.ns_per_tick).round() as u64);
        // Members first (`unit` starts with them): the first to retire numbers the cycle for the others, and the
        // unit for the functions under them (none when no member retired: they go quiet alone).
        let mut cycle = NEW_CYCLE;
        for index in unit {
            let member = self.sums[at].members.contains(&index);
            // A member's figure is the cycle's (its nested calls cannot be told from the others'); a function under
            // the members has its own, from this tree: the cycle's per-call mean made a 2 ns constructor under a
            // parser's recursion read 311 ns a call (markdown-rs's `EditMap::new`), and views estimate its later
            // calls' time from it.
            // Its calls: its share of this tree's unit calls, of all the unit's calls observed.
            let own = (!member).then(|| self.own_figures(index, nodes, descendants, cal)).flatten();
            let (calls, mean_ns) = match own {
                Some((own_calls, own_mean_ns)) if tree_calls > 0 => {
                    ((own_calls as f64 * unit_calls as f64 / tree_calls as f64).round() as u64, own_mean_ns)
                }
                _ => (unit_calls, mean_ns),
            };
            let unit = if member || cycle != NEW_CYCLE { cycle } else { 0 };
            let slot = retire_cluster_member(index, calls, mean_ns, unit, member);
            if member && cycle == NEW_CYCLE && slot != 0 {
                cycle = slot;
            }
        }
    }
}

impl Clusters {
    /// Function `index`'s calls in this tree (but the invocation's root call) and the compensated mean of its
    /// outermost ones (none of its own calls above them) per call, in ns; `None` when the tree has no closed call
    /// of it (a unit function seen only in earlier trees).
    fn own_figures(
        &mut self,
        index: u32,
        nodes: &[Node],
        descendants: &[u32],
        cal: &Calibration,
    ) -> Option<(u64, u64)> {
        let local = *self.local_of.get(index as usize)?;
        if local == NONE {
            return None;
        }
        let (mut calls, mut outer_ticks) = (0u64, 0f64);
        // Reused as "a closed call of `index` is this node or above it".
        self.under_member.clear();
        for (slot, node) in nodes.iter().enumerate() {
            let open = node.end == OPEN;
            let own = self.node_local[slot] == local && !open;
            let parent = (node.link & PARENT_MASK) as usize;
            let above = slot > 0 && parent < slot && self.under_member[parent];
            self.under_member.push(own || above);
            if !own || slot == 0 {
                continue;
            }
            calls += 1;
            if !above {
                let raw = node.end.saturating_sub(node.start) as f64;
                let probes = cal.recorded_inner_ticks + cal.recorded_outer_ticks * f64::from(descendants[slot]);
                outer_ticks += (raw - probes).max(0.0);
            }
        }
        (calls > 0).then(|| (calls, (outer_ticks / calls as f64 * cal.ns_per_tick).round() as u64))
    }
}

/// Who reaches whom through `calls` (one set per function), by Warshall's algorithm, into `reach`.
fn closure(calls: &[Set], reach: &mut Vec<Set>) {
    reach.clear();
    reach.extend_from_slice(calls);
    for k in 0..reach.len() {
        let via = reach[k];
        for set in reach.iter_mut() {
            if set.has(k) {
                set.union(&via);
            }
        }
    }
}
