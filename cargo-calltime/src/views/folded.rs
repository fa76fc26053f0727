//! Folded stacks, `root;child;grandchild <self ns>`, one line per call path with self time: the input of inferno,
//! flamegraph.pl and speedscope. Zero-self paths are left out (they would draw nothing); lines are sorted.
//! `--weight bytes` (or `allocs`) weighs each call path by its self allocations instead.

use std::collections::BTreeMap;

use super::aggregate::{aggregate, select, Merged};
use super::{Names, ViewOptions};
use crate::trace::{Node, Trace};

pub fn render(trace: &Trace, opts: &ViewOptions) -> anyhow::Result<String> {
    let mut out = String::new();
    for (stack, self_ns) in stacks(trace, opts, false)? {
        out.push_str(&stack);
        out.push(' ');
        out.push_str(&self_ns.to_string());
        out.push('\n');
    }
    Ok(out)
}

/// The frame name a flamegraph gives a call path where a call panicked: a frame of its own, marked.
pub const PANICKED_MARK: &str = " [panicked]";

/// The folded stacks of the aggregate over every invocation (or of `--invocation K` alone), sorted by stack;
/// `mark_panicked` appends [`PANICKED_MARK`] to the frames of call paths where a call panicked.
pub fn stacks(trace: &Trace, opts: &ViewOptions, mark_panicked: bool) -> anyhow::Result<BTreeMap<String, u64>> {
    let names = Names::for_stacks(&trace.table);
    let selected = select(trace, opts.invocation)?;
    let mut out = BTreeMap::new();
    for agg in aggregate(selected.iter().map(|(_, inv)| *inv)) {
        walk(&agg.tree, &(&names, mark_panicked, opts.weight), &mut String::new(), (1, 1.0), &mut out);
    }
    Ok(out)
}

/// Stacks deeper than this (deep recursion) end in one `(deeper calls)` frame holding the rest of the subtree's
/// time: every line repeats its whole stack, so unbounded depth would make the output quadratic in the depth.
pub const MAX_STACK_DEPTH: usize = 512;
const DEEPER: &str = "(deeper calls)";

/// Function names, whether frames are marked (panicked, cancelled, `Err`), and what a call path weighs.
type Naming<'a> = (&'a Names, bool, super::Weight);

/// The marks frames get, after [`PANICKED_MARK`]: call paths where a call was cancelled, or returned an `Err`.
pub const CANCELLED_MARK: &str = " [cancelled]";
pub const ERR_MARK: &str = " [err]";

/// Pushes a frame; `(panicked, cancelled, err)` say which marks it gets when the naming marks frames.
fn push_frame(stack: &mut String, naming: &Naming, func: u32, (panicked, cancelled, err): (bool, bool, bool)) {
    if !stack.is_empty() {
        stack.push(';');
    }
    stack.push_str(&naming.0.get(func));
    if naming.1 {
        for (set, mark) in [(panicked, PANICKED_MARK), (cancelled, CANCELLED_MARK), (err, ERR_MARK)] {
            if set {
                stack.push_str(mark);
            }
        }
    }
}

fn walk(node: &Merged, naming: &Naming, stack: &mut String, (depth, scale): (usize, f64), out: &mut Stacks) {
    let len = stack.len();
    push_frame(stack, naming, node.func, (node.panicked > 0, node.cancelled > 0, node.errs > 0));
    // Calls made by spawned work: their frames say where they ran (merged over invocations: the kind only).
    if let Some(lane) = &node.lane {
        stack.push_str(&format!(" [{}]", lane.kind_name()));
    }
    // Concurrent children's time is scaled so it counts once; allocations are counts and never overlap.
    let weigh = |weight: u64, scale: f64| if naming.2 == super::Weight::Time { scaled(weight, scale) } else { weight };
    let own = weigh(naming.2.of_self(node), scale);
    if own > 0 {
        // Distinct call paths have distinct names (Names makes them unique), so this only adds for safety.
        let total = out.entry(stack.clone()).or_default();
        *total = total.saturating_add(own);
    }
    let child_scale = if node.children_overlap_ns > 0 {
        let sum = node.children.iter().map(|c| c.total_ns as f64).sum::<f64>();
        scale * (sum - node.children_overlap_ns as f64).max(0.0) / sum.max(1.0)
    } else {
        scale
    };
    for child in &node.children {
        if depth >= MAX_STACK_DEPTH {
            *out.entry(format!("{stack};{DEEPER}")).or_default() += weigh(naming.2.of_total(child), child_scale);
        } else {
            walk(child, naming, stack, (depth + 1, child_scale), out);
        }
    }
    stack.truncate(len);
}

type Stacks = BTreeMap<String, u64>;

fn scaled(ns: u64, scale: f64) -> u64 {
    if scale == 1.0 {
        ns
    } else {
        (ns as f64 * scale).round() as u64
    }
}

/// Time-ordered stacks of one invocation for a flame chart: each node's self time is cut into the gaps before,
/// between and after its children, so consecutive lines replay the call as it happened. Children that ran
/// concurrently (async futures polled together) are drawn one after another, scaled down together to the span
/// they covered, so the time axis stays true for everything else.
///
/// A folded invocation (`folded`) has no order of calls: each node's children are laid out one after another from
/// its start, in the order their call paths were first entered, and its self time comes after them. `mark_panicked`
/// appends [`PANICKED_MARK`] (and the other marks) to the frames of calls that panicked (were cancelled, returned
/// an `Err`).
pub fn timeline(root: &Node, names: &Names, folded: bool, mark_panicked: bool) -> Vec<(String, u64)> {
    struct Walk<'a> {
        naming: Naming<'a>,
        folded: bool,
        out: Vec<(String, u64)>,
    }
    impl Walk<'_> {
        fn push(&mut self, stack: &str, width: f64) {
            let width = width.round() as u64;
            if width > 0 {
                self.out.push((stack.to_owned(), width));
            }
        }

        /// `start`: where `node` begins on the chart (its recorded start, or its place after its siblings);
        /// `scale`: chart ns per recorded ns (below 1 inside a group of concurrent children).
        fn node(&mut self, node: &Node, (start, scale): (f64, f64), stack: &mut String, depth: usize) {
            let len = stack.len();
            push_frame(stack, &self.naming, node.func, (node.panicked, node.cancelled, node.errs > 0));
            let mut at = start;
            let end = start + node.duration_ns as f64 * scale;
            for group in child_groups(&node.children, self.folded) {
                let group_start =
                    if self.folded { at } else { start + group.start_ns.saturating_sub(node.start_ns) as f64 * scale };
                self.push(stack, group_start - at);
                let group_scale = scale * group.scale;
                let mut pos = group_start.max(at);
                for child in group.children {
                    if depth >= MAX_STACK_DEPTH {
                        self.push(&format!("{stack};{DEEPER}"), child.duration_ns as f64 * group_scale);
                    } else {
                        self.node(child, (pos, group_scale), stack, depth + 1);
                    }
                    pos += child.duration_ns as f64 * group_scale;
                }
                at = at.max(pos);
            }
            self.push(stack, end - at);
            stack.truncate(len);
        }
    }
    let mut walk = Walk { naming: (names, mark_panicked, super::Weight::Time), folded, out: Vec::new() };
    walk.node(root, (root.start_ns as f64, 1.0), &mut String::new(), 1);
    walk.out
}

/// Children drawn together: one child, or children whose recorded intervals overlap (each starts before the ones
/// before it ended), scaled by the span they covered over their summed durations.
struct ChildGroup<'a> {
    start_ns: u64,
    scale: f64,
    children: Vec<&'a Node>,
}

fn child_groups(children: &[Node], folded: bool) -> Vec<ChildGroup<'_>> {
    let mut groups: Vec<(ChildGroup, u64)> = Vec::new();
    for child in children {
        let child_end = child.start_ns.saturating_add(child.duration_ns);
        match groups.last_mut() {
            Some((group, group_end)) if !folded && child.start_ns < *group_end => {
                group.children.push(child);
                *group_end = (*group_end).max(child_end);
            }
            _ => groups.push((ChildGroup { start_ns: child.start_ns, scale: 1.0, children: vec![child] }, child_end)),
        }
    }
    groups
        .into_iter()
        .map(|(mut group, end)| {
            if group.children.len() > 1 {
                let sum: u64 = group.children.iter().map(|c| c.duration_ns).sum();
                group.scale = end.saturating_sub(group.start_ns) as f64 / sum.max(1) as f64;
            }
            group
        })
        .collect()
}
