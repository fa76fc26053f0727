//! The call graph from the roots, level by level: level 1 is the roots, level N+1 what level N calls.

use std::collections::{HashMap, HashSet};

use rayon::prelude::*;

use super::index::{CrateId, FnId, Index};
use super::modules::TargetKind;
use super::resolve::Resolved;

/// What the traversal reached.
#[derive(Debug, Default)]
pub struct Reached {
    /// Each reached function once, at its smallest level, in discovery order.
    pub functions: Vec<(FnId, u32)>,
    /// Edges between reached functions (caller, callee), sorted, without repeats.
    pub edges: Vec<(FnId, FnId)>,
    /// Notes on call sites of the functions whose calls were followed: (function, call index, note).
    pub notes: Vec<(FnId, usize, String)>,
}

/// Breadth-first from `roots` down to `depth` levels; a function reached again (recursion, cycles, diamonds) keeps
/// its first, smallest level.
pub fn traverse(index: &Index, roots: &[FnId], depth: u32) -> Reached {
    let in_program = program_crates(index, roots);
    let mut level: HashMap<FnId, u32> = HashMap::new();
    let mut reached = Reached::default();
    let mut frontier: Vec<FnId> = Vec::new();
    for &r in roots {
        if level.insert(r, 1).is_none() {
            frontier.push(r);
            reached.functions.push((r, 1));
        }
    }
    let mut resolved: HashMap<FnId, Resolved> = HashMap::new();
    let mut current = 1;
    while !frontier.is_empty() && current < depth {
        let results: Vec<(FnId, Resolved)> =
            frontier.par_iter().map(|&f| (f, resolve_in(index, f, &in_program))).collect();
        let mut next = Vec::new();
        for (f, r) in results {
            for &callee in &r.callees {
                if let std::collections::hash_map::Entry::Vacant(e) = level.entry(callee) {
                    e.insert(current + 1);
                    next.push(callee);
                    reached.functions.push((callee, current + 1));
                }
            }
            for (call, note) in &r.notes {
                reached.notes.push((f, *call, note.clone()));
            }
            resolved.insert(f, r);
        }
        frontier = next;
        current += 1;
    }
    // The last level's calls are not followed, but its edges back into the reached set are still edges.
    let last: Vec<FnId> = frontier.into_iter().filter(|f| !resolved.contains_key(f)).collect();
    let last_results: Vec<(FnId, Resolved)> =
        last.par_iter().map(|&f| (f, resolve_in(index, f, &in_program))).collect();
    resolved.extend(last_results);
    for (&f, r) in &resolved {
        for &callee in &r.callees {
            if level.contains_key(&callee) {
                reached.edges.push((f, callee));
            }
        }
    }
    reached.edges.extend(callback_edges(index, &resolved, &level));
    reached.edges.sort_unstable();
    reached.edges.dedup();
    reached
}

/// `--all-functions`: the levels come from the roots as in [`traverse`], but the set is every function of the
/// program's selected crates (outside test code), reached or not, and the edges and notes cover the calls of all
/// of them, so that a run with every function probed can be checked against the full static graph. Unreached
/// functions get level 0.
pub fn traverse_all(index: &Index, roots: &[FnId], depth: u32) -> Reached {
    let from_roots = traverse(index, roots, depth);
    let in_program = program_crates(index, roots);
    let mut level: HashMap<FnId, u32> = from_roots.functions.iter().copied().collect();
    let mut functions = from_roots.functions;
    for f in 0..index.fns.len() {
        let def = &index.fns[f];
        let krate = &index.crates[def.krate].spec;
        if in_program.contains(&def.krate) && krate.selected && !def.item.test_only && !level.contains_key(&f) {
            level.insert(f, 0);
            functions.push((f, 0));
        }
    }
    let all: Vec<FnId> = functions.iter().map(|(f, _)| *f).collect();
    let resolved: HashMap<FnId, Resolved> = all.par_iter().map(|&f| (f, resolve_in(index, f, &in_program))).collect();
    let mut reached = Reached { functions, ..Reached::default() };
    for &f in &all {
        let r = &resolved[&f];
        reached.edges.extend(r.callees.iter().filter(|c| level.contains_key(c)).map(|&c| (f, c)));
        reached.notes.extend(r.notes.iter().map(|(call, note)| (f, *call, note.clone())));
    }
    reached.edges.extend(callback_edges(index, &resolved, &level));
    reached.edges.sort_unstable();
    reached.edges.dedup();
    reached
}

/// The crates that can be part of the measured program: every lib and bin of the workspace, plus the roots' own
/// crates and what they depend on. Test, example and bench targets are separate programs: an impl in one of them is
/// never what a call elsewhere dispatches to.
fn program_crates(index: &Index, roots: &[FnId]) -> HashSet<CrateId> {
    let mut crates: HashSet<CrateId> = index
        .crates
        .iter()
        .enumerate()
        .filter(|(_, c)| matches!(c.spec.kind, TargetKind::Lib | TargetKind::Bin))
        .map(|(i, _)| i)
        .collect();
    for &r in roots {
        crates.extend(index.crates[index.fns[r].krate].visible.iter().copied());
    }
    crates
}

fn resolve_in(index: &Index, f: FnId, in_program: &HashSet<CrateId>) -> Resolved {
    // Code compiled out by a `#[cfg]` calls nothing in the program.
    if index.fns[f].compiled_out() {
        return Resolved::default();
    }
    let mut r = index.resolve_calls(f);
    // `#[cfg(test)]` code does not exist in the program unless the caller is test code itself.
    let test_caller = index.fns[f].item.test_only;
    r.callees.retain(|c| in_program.contains(&index.fns[*c].krate) && (test_caller || !index.fns[*c].item.test_only));
    r
}

/// Callbacks: when `f` passes closures or functions to `g`, and `g` calls its parameters (directly, or after
/// forwarding them to `h` that does), the calls inside those closures and functions run under `g` (or `h`).
/// Futures likewise: `block_on(fetch(x))` runs `fetch`'s body under `block_on` when it polls or awaits its
/// parameter.
fn callback_edges(index: &Index, resolved: &HashMap<FnId, Resolved>, level: &HashMap<FnId, u32>) -> Vec<(FnId, FnId)> {
    // What runs when each function invokes the callbacks (or polls the futures) it was given.
    let mut given: HashMap<FnId, HashSet<FnId>> = HashMap::new();
    let mut given_futures: HashMap<FnId, HashSet<FnId>> = HashMap::new();
    let reached = |x: &FnId| level.contains_key(x);
    let is_future = |x: &FnId| {
        matches!(
            index.fns[*x].item.probe.as_ref().map(|p| &p.kind),
            Some(crate::plan::ProbeKind::Async | crate::plan::ProbeKind::AsyncBlock)
        )
    };
    for (&f, r) in resolved {
        for (site, targets) in index.fns[f].item.calls.iter().zip(&r.by_call) {
            if site.arg_calls.is_empty() && site.arg_futures.is_empty() {
                continue;
            }
            let calls_of = |list: &[u32]| -> Vec<FnId> {
                list.iter()
                    .flat_map(|&j| r.by_call.get(j as usize).into_iter().flatten().copied())
                    .filter(reached)
                    .collect()
            };
            let inner = calls_of(&site.arg_calls);
            let futures: Vec<FnId> = calls_of(&site.arg_futures).into_iter().filter(is_future).collect();
            for &g in targets.iter().filter(|g| reached(g)) {
                if !inner.is_empty() {
                    given.entry(g).or_default().extend(inner.iter().copied());
                }
                if !futures.is_empty() {
                    given_futures.entry(g).or_default().extend(futures.iter().copied());
                }
            }
        }
    }
    let mut edges = Vec::new();
    for (g, xs) in forwarded(index, resolved, level, given) {
        if index.fns[g].item.calls_params {
            edges.extend(xs.into_iter().map(|x| (g, x)));
        }
    }
    for (g, xs) in forwarded(index, resolved, level, given_futures) {
        if index.fns[g].item.polls_params {
            edges.extend(xs.into_iter().map(|x| (g, x)));
        }
    }
    edges
}

/// Forwarded callbacks: `g(cb)` passing its own parameter on to `h` gives `h` what `g` was given.
fn forwarded(
    index: &Index,
    resolved: &HashMap<FnId, Resolved>,
    level: &HashMap<FnId, u32>,
    mut given: HashMap<FnId, HashSet<FnId>>,
) -> HashMap<FnId, HashSet<FnId>> {
    for _round in 0..16 {
        let mut changed = false;
        let holders: Vec<FnId> = given.keys().copied().collect();
        for g in holders {
            let Some(r) = resolved.get(&g) else { continue };
            let passed: Vec<FnId> = given[&g].iter().copied().collect();
            for (site, targets) in index.fns[g].item.calls.iter().zip(&r.by_call) {
                if !site.forwards_param {
                    continue;
                }
                for &h in targets.iter().filter(|h| level.contains_key(h)) {
                    let slot = given.entry(h).or_default();
                    let before = slot.len();
                    slot.extend(passed.iter().copied());
                    changed |= slot.len() != before;
                }
            }
        }
        if !changed {
            break;
        }
    }
    given
}
