//! Merged trees: repeated calls to one function under one parent folded into one node (per invocation), and the
//! aggregate over many invocations keyed by call path. Every view is built from these.

use crate::trace::{Invocation, Node, Trace};

/// Every call of one function at one call path, merged.
#[derive(Debug, Clone, PartialEq)]
pub struct Merged {
    /// Dense index into the function table.
    pub func: u32,
    pub calls: u64,
    /// Sum of the calls' durations.
    pub total_ns: u64,
    /// Sum of the calls' self times (time not spent in instrumented children).
    pub self_ns: u64,
    /// Shortest and longest single call.
    pub min_ns: u64,
    pub max_ns: u64,
    /// Calls left by unwinding.
    pub panicked: u64,
    /// Start of the first call (trace epoch ns).
    pub start_ns: u64,
    /// Invocations in which this call path occurs.
    pub invocations: u64,
    /// Every call's duration, sorted; kept only for aggregates (percentiles).
    pub durations: Vec<u64>,
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
            total_ns: 0,
            self_ns: 0,
            min_ns: u64::MAX,
            max_ns: 0,
            panicked: 0,
            start_ns,
            invocations: 0,
            durations: Vec::new(),
            children: Vec::new(),
            last_invocation: usize::MAX,
        }
    }

    /// One invocation's tree with repeated calls under one parent folded together (recursively).
    pub fn of_invocation(inv: &Invocation) -> Merged {
        let mut merged = Merged::new(inv.root.func, inv.root.start_ns);
        merged.add(&inv.root, 0, false);
        merged
    }

    fn add(&mut self, node: &Node, invocation: usize, keep_durations: bool) {
        self.calls += 1;
        self.total_ns += node.duration_ns;
        self.self_ns += node.self_ns();
        self.min_ns = self.min_ns.min(node.duration_ns);
        self.max_ns = self.max_ns.max(node.duration_ns);
        self.start_ns = self.start_ns.min(node.start_ns);
        self.panicked += u64::from(node.panicked);
        if self.last_invocation != invocation {
            self.last_invocation = invocation;
            self.invocations += 1;
        }
        if keep_durations {
            self.durations.push(node.duration_ns);
        }
        for child in &node.children {
            let at = match self.children.iter().position(|c| c.func == child.func) {
                Some(at) => at,
                None => {
                    self.children.push(Merged::new(child.func, child.start_ns));
                    self.children.len() - 1
                }
            };
            self.children[at].add(child, invocation, keep_durations);
        }
    }

    fn sort_durations(&mut self) {
        self.durations.sort_unstable();
        for child in &mut self.children {
            child.sort_durations();
        }
    }

    /// Mean duration of one call, rounded to the nearest ns.
    pub fn mean_ns(&self) -> u64 {
        (self.total_ns + self.calls / 2).checked_div(self.calls).unwrap_or(0)
    }

    /// Nearest-rank percentile (`q` in 0..=1) of the call durations; aggregates only.
    pub fn percentile_ns(&self, q: f64) -> u64 {
        if self.durations.is_empty() {
            return 0;
        }
        let rank = (q * self.durations.len() as f64).ceil() as usize;
        self.durations[rank.clamp(1, self.durations.len()) - 1]
    }
}

/// The aggregate tree of every recorded invocation of one root function.
#[derive(Debug, Clone, PartialEq)]
pub struct Aggregate {
    pub tree: Merged,
    /// Invocations of this root.
    pub invocations: u64,
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
                out.push(Aggregate { tree: Merged::new(inv.root.func, inv.root.start_ns), invocations: 0 });
                out.len() - 1
            }
        };
        out[at].invocations += 1;
        out[at].tree.add(&inv.root, i, true);
    }
    for agg in &mut out {
        agg.tree.sort_durations();
    }
    out
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
            None => anyhow::bail!(
                "invocation {k} does not exist in {}\n  hint: the trace holds {} invocation(s): pass --invocation 1..={}",
                trace.path.display(),
                trace.invocations.len(),
                trace.invocations.len()
            ),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{ThreadKind, ThreadRef};

    fn node(func: u32, start_ns: u64, duration_ns: u64, children: Vec<Node>) -> Node {
        Node { func, start_ns, duration_ns, panicked: false, children }
    }

    fn inv(root: Node) -> Invocation {
        Invocation {
            seq: 0,
            thread: ThreadRef { kind: ThreadKind::Thread, id: 1, name: String::new() },
            start_ns: root.start_ns,
            duration_ns: root.duration_ns,
            truncated_calls: 0,
            filtered_nodes: 0,
            root,
        }
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
        assert_eq!((tree.percentile_ns(0.5), tree.percentile_ns(0.99), tree.percentile_ns(1.0)), (50, 99, 100));
        assert_eq!(tree.mean_ns(), 51);
        assert_eq!(aggs[0].calls_per_invocation(&tree.children[0]), 1.0);
    }
}
