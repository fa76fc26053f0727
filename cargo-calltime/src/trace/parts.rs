//! Work spawned inside an invocation that ran on another thread or task (`p` records, docs/trace-format.md): each
//! part's calls go under the node that spawned it, marked with where they ran ([`Node::lane`]); the part's own
//! span stays in [`Invocation::spawned`].

use std::collections::{BTreeSet, HashMap};

use anyhow::{bail, Result};

use super::read::build_tree;
use super::{Invocation, Node};

/// One `p` record as read: its spawning node's line, the node lines it announced, its nodes with depths.
pub(super) type PartLines = (u64, u64, Vec<(u32, Node)>);

/// Puts the parts (in file order, matching `inv.spawned`) under their spawning nodes; `main_lines` is the
/// invocation's own node count. Lines are counted over the record's nodes, then each part's in turn; a part's
/// spawning node is on an earlier line (the invocation's, or an earlier part's).
pub(super) fn attach(inv: &mut Invocation, main_lines: u64, parts: impl Iterator<Item = PartLines>) -> Result<()> {
    // Tree 0 is the invocation's; tree k + 1 is part k's (None when it has no nodes: outlived, unrecorded).
    let mut spans = vec![(0u64, main_lines)];
    let mut trees: Vec<Option<Node>> = vec![None];
    let mut parents = Vec::new();
    let mut next = main_lines;
    for (parent, count, nodes) in parts {
        if nodes.len() as u64 != count {
            bail!("a `p` record has {} node lines but announces {count}", nodes.len());
        }
        parents.push(parent);
        spans.push((next, count));
        next += count;
        trees.push(if nodes.is_empty() { None } else { Some(build_tree(nodes)?) });
    }
    if parents.len() != inv.spawned.len() {
        bail!("{} `p` records but {} spawned parts", parents.len(), inv.spawned.len());
    }
    // Each part's target: (tree, index in that tree's preorder), on an earlier tree; the root otherwise.
    let targets: Vec<(usize, u64)> = parents
        .iter()
        .enumerate()
        .map(|(k, &line)| {
            let tree = (0..=k).rev().find(|&t| spans[t].0 <= line && line < spans[t].0 + spans[t].1);
            tree.map_or((0, 0), |t| (t, line - spans[t].0))
        })
        .collect();
    let mut wanted: HashMap<usize, BTreeSet<u64>> = HashMap::new();
    for &(tree, index) in &targets {
        wanted.entry(tree).or_default().insert(index);
    }
    let mut paths = HashMap::new();
    for (&tree, indices) in &wanted {
        let root = if tree == 0 { Some(&inv.root) } else { trees[tree].as_ref() };
        if let Some(root) = root {
            for (index, path) in preorder_paths(root, indices) {
                paths.insert((tree, index), path);
            }
        }
    }
    let mut touched = Vec::new();
    for k in (0..parents.len()).rev() {
        let (tree, index) = targets[k];
        let path = paths.get(&(tree, index)).cloned().unwrap_or_default();
        if tree == 0 {
            touched.push(path.clone());
        }
        let part = trees[k + 1].take();
        let target_root = if tree == 0 { Some(&mut inv.root) } else { trees[tree].as_mut() };
        let Some(target) = target_root.map(|root| descend(root, &path)) else { continue };
        match part {
            Some(mut part) => {
                let lane = inv.spawned[k].thread.clone();
                for call in &mut part.children {
                    call.lane.get_or_insert_with(|| lane.clone());
                }
                target.children.append(&mut part.children);
            }
            None if inv.spawned[k].outlived => target.outlived += 1,
            None => {}
        }
    }
    // Spawned calls take their place among the spawner's own calls by start (folded paths: their first start).
    for path in touched {
        descend(&mut inv.root, &path).children.sort_by_key(|c| c.start_ns);
    }
    Ok(())
}

/// The child-index path of each wanted preorder index of the tree under `root` (0 is `root`).
fn preorder_paths(root: &Node, wanted: &BTreeSet<u64>) -> Vec<(u64, Vec<usize>)> {
    let mut found = Vec::new();
    let mut stack = vec![(root, Vec::new())];
    let mut index = 0u64;
    while let Some((node, path)) = stack.pop() {
        if found.len() == wanted.len() {
            break;
        }
        if wanted.contains(&index) {
            found.push((index, path.clone()));
        }
        index += 1;
        for (i, child) in node.children.iter().enumerate().rev() {
            let mut child_path = path.clone();
            child_path.push(i);
            stack.push((child, child_path));
        }
    }
    found
}

fn descend<'a>(mut node: &'a mut Node, path: &[usize]) -> &'a mut Node {
    for &i in path {
        if i >= node.children.len() {
            break;
        }
        node = &mut node.children[i];
    }
    node
}

#[cfg(test)]
mod tests {
    use crate::trace::{parse, ThreadKind};

    const TRACE: &str = "calltime-trace 3
process 42 1700000000000000000 /tmp/demo
plan abc123 /tmp/t.functions.json
inv 0 thread 1 100 100 2 0 0 main
n 0 0 100 100 0
n 1 1 110 80 0
p 1 thread 7 115 60 3 0 0 0
n 0 536870911 115 60 0
n 1 2 120 30 0
n 1 2 150 20 0
p 3 task 2 125 10 2 0 0 0
n 0 536870911 125 10 0
n 1 3 126 5 0
p 0 task 0 0 0 0 0 0 1
end 0
";

    #[test]
    fn parts_hang_under_their_spawning_nodes_marked_with_their_lane() {
        let trace = parse(TRACE).unwrap();
        assert!(trace.warnings.is_empty(), "{:?}", trace.warnings);
        let inv = &trace.invocations[0];
        assert_eq!(inv.spawned.len(), 3);
        assert_eq!(inv.spawned_summed_ns(), 70);
        let root = &inv.root;
        assert_eq!(root.outlived, 1, "the third part was still running");
        let spawner = &root.children[0];
        assert_eq!(spawner.children.len(), 2);
        let lanes: Vec<_> = spawner.children.iter().map(|c| c.lane.as_ref().map(|l| (l.kind, l.id))).collect();
        assert_eq!(lanes, [Some((ThreadKind::Thread, 7)), Some((ThreadKind::Thread, 7))]);
        // The task part was spawned by the first call of the thread part (line 3).
        let nested = &spawner.children[0].children[0];
        assert_eq!((nested.func, nested.lane.as_ref().map(|l| (l.kind, l.id))), (3, Some((ThreadKind::Task, 2))));
        // Two calls of 30 and 20 under a spawner of 80 from other threads: self time is the time they left.
        assert_eq!(spawner.self_ns(), 30);
    }

    /// A folded path (4 calls, 800 ns) whose calls each spawned two 150 ns closures that ran side by side.
    const FOLDED: &str = "calltime-trace 3
process 42 1700000000000000000 /tmp/demo
plan abc123 /tmp/t.functions.json
inv 0 thread 1 100 1000 2 0 0 main
a 0 0 1 1 100 1000 1000 1000 0 1 1000
a 1 1 4 4 110 800 200 200 0 4 800
p 1 thread 7 120 150 2 0 0 0
n 0 536870911 120 150 0
n 1 2 120 150 0
p 1 thread 8 121 150 2 0 0 0
n 0 536870911 121 150 0
n 1 2 121 150 0
p 1 thread 7 500 150 2 0 0 0
n 0 536870911 500 150 0
n 1 2 500 150 0
p 1 thread 8 501 150 2 0 0 0
n 0 536870911 501 150 0
n 1 2 501 150 0
end 0
";

    #[test]
    fn a_folded_spawner_counts_its_spawned_calls_by_the_union_of_their_intervals() {
        let trace = parse(FOLDED).unwrap();
        assert!(trace.warnings.is_empty(), "{:?}", trace.warnings);
        let spawner = &trace.invocations[0].root.children[0];
        assert_eq!((spawner.calls, spawner.children.len()), (4, 4));
        // Busy 151 + 151 ns (two pairs of overlapping closures), not their 600 ns sum: 498 ns of its own.
        assert_eq!(spawner.self_ns(), 800 - 302);
    }
}
