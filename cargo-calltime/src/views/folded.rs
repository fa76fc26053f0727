//! Folded stacks, `root;child;grandchild <self ns>`, one line per call path with self time: the input of inferno,
//! flamegraph.pl and speedscope. Zero-self paths are left out (they would draw nothing); lines are sorted.

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
    let names = Names::new(&trace.table);
    let selected = select(trace, opts.invocation)?;
    let mut out = BTreeMap::new();
    for agg in aggregate(selected.iter().map(|(_, inv)| *inv)) {
        walk(&agg.tree, &(&names, mark_panicked), &mut String::new(), (1, 1.0), &mut out);
    }
    Ok(out)
}

/// Stacks deeper than this (deep recursion) end in one `(deeper calls)` frame holding the rest of the subtree's
/// time: every line repeats its whole stack, so unbounded depth would make the output quadratic in the depth.
pub const MAX_STACK_DEPTH: usize = 512;
const DEEPER: &str = "(deeper calls)";

/// Function names, and whether panicked frames are marked.
type Naming<'a> = (&'a Names, bool);

fn push_frame(stack: &mut String, naming: &Naming, func: u32, panicked: bool) {
    if !stack.is_empty() {
        stack.push(';');
    }
    stack.push_str(&naming.0.get(func));
    if panicked && naming.1 {
        stack.push_str(PANICKED_MARK);
    }
}

/// `scale` is below 1 under children that ran concurrently (async futures polled together): their subtrees are
/// scaled down by the time they covered over the time they add up to, so the stacks add up to the root's time and
/// no concurrent time is counted twice.
fn walk(node: &Merged, naming: &Naming, stack: &mut String, (depth, scale): (usize, f64), out: &mut Stacks) {
    let len = stack.len();
    push_frame(stack, naming, node.func, node.panicked > 0);
    if node.self_ns > 0 {
        // Distinct call paths have distinct names (Names makes them unique), so this only adds for safety.
        let total = out.entry(stack.clone()).or_default();
        *total = total.saturating_add(scaled(node.self_ns, scale));
    }
    let child_scale = if node.children_overlap_ns > 0 {
        let sum = node.children.iter().map(|c| c.total_ns as f64).sum::<f64>();
        scale * (sum - node.children_overlap_ns as f64).max(0.0) / sum.max(1.0)
    } else {
        scale
    };
    for child in &node.children {
        if depth >= MAX_STACK_DEPTH {
            *out.entry(format!("{stack};{DEEPER}")).or_default() += scaled(child.total_ns, child_scale);
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
/// between and after its children, so consecutive lines replay the call as it happened.
///
/// A folded invocation (`folded`) has no order of calls: each node's children are laid out one after another from
/// its start, in the order their call paths were first entered, and its self time comes after them. `mark_panicked`
/// appends [`PANICKED_MARK`] to the frames of calls that panicked.
pub fn timeline(root: &Node, names: &Names, folded: bool, mark_panicked: bool) -> Vec<(String, u64)> {
    struct Walk<'a> {
        naming: Naming<'a>,
        folded: bool,
        out: Vec<(String, u64)>,
    }
    impl Walk<'_> {
        /// `start_ns`: where `node` begins on the chart (its recorded start, or its place after its siblings).
        fn node(&mut self, node: &Node, start_ns: u64, stack: &mut String, depth: usize) {
            let len = stack.len();
            push_frame(stack, &self.naming, node.func, node.panicked);
            let mut at = start_ns;
            let end = start_ns.saturating_add(node.duration_ns);
            for child in &node.children {
                let child_start = if self.folded { at } else { child.start_ns };
                let gap = child_start.saturating_sub(at);
                if gap > 0 {
                    self.out.push((stack.clone(), gap));
                }
                if depth >= MAX_STACK_DEPTH {
                    self.out.push((format!("{stack};{DEEPER}"), child.duration_ns));
                } else {
                    self.node(child, child_start, stack, depth + 1);
                }
                at = at.max(child_start.saturating_add(child.duration_ns));
            }
            if end > at {
                self.out.push((stack.clone(), end - at));
            }
            stack.truncate(len);
        }
    }
    let mut walk = Walk { naming: (names, mark_panicked), folded, out: Vec::new() };
    walk.node(root, root.start_ns, &mut String::new(), 1);
    walk.out
}
