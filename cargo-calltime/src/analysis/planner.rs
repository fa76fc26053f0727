//! From the index to the plan: find the roots, traverse, decide each reached function's probe or skip reason, and
//! assign dense indices. Nothing here prints: warnings and figures go into the [`Plan`].

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::time::Instant;

use anyhow::Result;

use super::graph::{traverse, traverse_all, Reached};
use super::index::{FnId, Index, Owner, SelfRes};
use super::modules::TargetKind;
use super::roots::{display_name, find_root};
use super::trivial::Trivial;
use crate::error::UserError;
use crate::plan::{AnalysedCounts, CallSiteNote, Edge, Plan, PlanOptions, PlannedFunction, ProbeSite, SkipReason};
use crate::workspace::Workspace;

/// The workspace indexed for a set of roots: what [`Analysis::plan`] plans from. Split from planning so that the
/// caller can show the figures and warnings before planning fails on a root.
pub struct Analysis {
    index: Index,
    pub counts: AnalysedCounts,
    /// Files that could not be read or parsed, with paths relative to the workspace root.
    pub warnings: Vec<String>,
}

/// Analyses the workspace and builds the plan: index, call graph, traversal, filter, indices.
pub fn make_plan(ws: &Workspace, options: &PlanOptions) -> Result<Plan> {
    analyse(ws, &options.roots).plan(ws, options)
}

/// Indexes the crate targets the roots need. Examples, tests and benches are indexed only when a root needs them:
/// a root named after one of those crates, or one not found among the libs and bins.
pub fn analyse(ws: &Workspace, roots: &[String]) -> Analysis {
    let aux_named = roots.iter().any(|r| {
        let first = r.trim_start_matches("::").split("::").next().unwrap_or("");
        super::modules::crate_specs(ws, true)
            .iter()
            .any(|c| c.name == first && !matches!(c.kind, TargetKind::Lib | TargetKind::Bin))
    });
    let mut index = super::index_workspace(ws, aux_named);
    if !aux_named && roots.iter().any(|r| find_root(&index, r, &ws.root).is_err()) {
        index = super::index_workspace(ws, true);
    }
    let counts = AnalysedCounts { files: index.files.len(), lines: index.lines, functions: index.fns.len() };
    let warnings = index.warnings.iter().map(|w| relative_text(w, &ws.root)).collect();
    Analysis { index, counts, warnings }
}

impl Analysis {
    /// Finds the roots, traverses `depth` levels and decides each reached function's probe.
    pub fn plan(self, ws: &Workspace, options: &PlanOptions) -> Result<Plan> {
        let started = Instant::now();
        let index = &self.index;
        let mut roots: Vec<FnId> = Vec::new();
        for arg in &options.roots {
            let mut found = find_root(index, arg, &ws.root).map_err(|err| proc_macro_root(ws, arg).unwrap_or(err))?;
            // `#[cfg]` variants of one function: the compiled-out ones are not roots when another one is compiled.
            if found.iter().any(|&f| !index.fns[f].compiled_out()) {
                found.retain(|&f| !index.fns[f].compiled_out());
            }
            for f in found {
                if !roots.contains(&f) {
                    roots.push(f);
                }
            }
        }
        let reached = if options.all_functions {
            traverse_all(index, &roots, options.depth)
        } else {
            traverse(index, &roots, options.depth)
        };
        tracing::info!("graph of {} functions in {:?}", reached.functions.len(), started.elapsed());
        let order = plan_order(index, &reached);
        let position: HashMap<FnId, usize> = order.iter().enumerate().map(|(i, (f, _))| (*f, i)).collect();
        let mut functions: Vec<PlannedFunction> =
            order.iter().map(|&(f, level)| planned_function(index, f, level, roots.contains(&f))).collect();
        // Probes: roots first (in --root order), then the others in plan order.
        let mut visit: Vec<usize> = roots.iter().map(|r| position[r]).collect();
        visit.extend((0..order.len()).filter(|p| !functions[*p].is_root));
        let mut probes =
            Probes { ws, index, options, next_index: 0, trivial: Trivial::default(), taken: HashMap::new() };
        for pos in visit {
            probes.decide(order[pos].0, &mut functions[pos])?;
        }
        if !options.probe_trivial && !options.all_functions {
            skip_forwarders(index, &mut probes.trivial, &order, &mut functions);
        }
        let mut edges: Vec<Edge> =
            reached.edges.iter().map(|(a, b)| Edge { from: position[a], to: position[b] }).collect();
        edges.sort_by_key(|e| (e.from, e.to));
        let unresolved = call_site_notes(index, &reached);
        tracing::info!("plan ready in {:?}", started.elapsed());
        let names: Vec<(&str, &str)> = order
            .iter()
            .map(|(f, _)| (index.crates[index.fns[*f].krate].spec.name.as_str(), index.fns[*f].match_path.as_str()))
            .collect();
        let filter_warning = filter_leaves_only_roots(options, &functions, &names);
        let parallel_warning = parallel_iterator_warning(index, &order, &functions);
        let Analysis { mut index, counts, mut warnings } = self;
        let global_allocators = std::mem::take(&mut index.global_allocators);
        warnings.extend(filter_warning);
        warnings.extend(parallel_warning);
        // Freeing tens of thousands of small allocations takes a noticeable share of the analysis time; nothing
        // waits for it, so it happens off the main thread.
        let _ = std::thread::Builder::new().name("calltime-free-index".into()).spawn(move || drop(index));
        Ok(Plan {
            root_args: options.roots.clone(),
            depth: options.depth,
            filter: options.filter.as_ref().map(|re| re.as_str().to_owned()),
            exclude: options.exclusions.pattern.as_ref().map(|re| re.as_str().to_owned()),
            functions,
            edges,
            unresolved,
            warnings,
            analysed: counts,
            global_allocators,
        })
    }
}

/// Probed functions that start rayon parallel iterators whose closures are not adopted: a chain that is not consumed
/// in the expression that starts it (stored, returned, handed to `par_extend`), or a closure passed by name. The
/// calls those closures make on the pool's threads are not recorded, so the plan says so, naming the functions.
fn parallel_iterator_warning(index: &Index, order: &[(FnId, u32)], functions: &[PlannedFunction]) -> Option<String> {
    let named: Vec<&str> = order
        .iter()
        .zip(functions)
        .filter(|((f, _), planned)| {
            planned.probe.is_some() && index.fns[*f].item.spawns.iter().any(super::spawns::is_parallel_iterator)
        })
        .map(|(_, planned)| planned.display.as_str())
        .collect();
    if named.is_empty() {
        return None;
    }
    Some(format!(
        "calls made inside these rayon parallel iterators are not recorded (a closure passed by name, or a chain not \
         consumed in the expression that starts it: its work runs on the pool's threads and shows in the caller's \
         self time; calls run on the caller's own thread count as its calls): {}\n  hint: write the closure at the \
         call (`.map(|x| f(x))`) and consume the chain where it starts, or make the function it calls a --root of \
         its own",
        named.join(", ")
    ))
}

/// A root that is not found because it is in a proc-macro crate, which is never indexed: the crate is named by
/// the root's first segment, or its root file defines a function of the root's last segment.
fn proc_macro_root(ws: &Workspace, arg: &str) -> Option<UserError> {
    let wanted = arg.trim().trim_start_matches("::");
    let first = wanted.split("::").next().unwrap_or(wanted);
    let last = wanted.rsplit("::").next().unwrap_or(wanted);
    let meta = &ws.metadata;
    let proc_macros = meta
        .packages
        .iter()
        .filter(|p| meta.workspace_members.contains(&p.id))
        .flat_map(|p| p.targets.iter())
        .filter(|t| t.kind.iter().any(|k| k.to_string() == "proc-macro"));
    for target in proc_macros {
        let crate_name = target.name.replace('-', "_");
        let defines = || {
            let text = std::fs::read_to_string(&target.src_path).ok()?;
            let summary = super::extract_file(&text).ok()?;
            Some(summary.items.fns.iter().any(|f| f.name == last))
        };
        if first == crate_name || defines() == Some(true) {
            return Some(
                UserError::new(format!(
                    "root `{arg}` is in proc-macro crate `{crate_name}`, which cargo calltime does not analyse"
                ))
                .hint(
                    "a proc macro runs inside the compiler, not in your program; time the code it generates by \
                     choosing a root in a lib or bin crate that uses it",
                ),
            );
        }
    }
    None
}

/// Functions in a deterministic order: level, then path, then place; the unreached ones of --all-functions
/// (level 0) last.
fn plan_order(index: &Index, reached: &Reached) -> Vec<(FnId, u32)> {
    let mut order: Vec<(FnId, u32)> = reached.functions.clone();
    let rank = |level: u32| if level == 0 { u32::MAX } else { level };
    order.sort_by(|a, b| {
        let (fa, fb) = (&index.fns[a.0], &index.fns[b.0]);
        (rank(a.1), &fa.path, &index.files[fa.file], fa.item.line).cmp(&(
            rank(b.1),
            &fb.path,
            &index.files[fb.file],
            fb.item.line,
        ))
    });
    order
}

/// `<T as Describe>::describe` for a method of a blanket impl (`impl<T: Named> Describe for T`; digest's
/// `impl<D: ..> Digest for D`): `T::describe` would name no type.
fn blanket_display(index: &Index, f: FnId) -> Option<String> {
    let def = &index.fns[f];
    let Owner::Impl(i) = def.owner else { return None };
    let imp = &index.impls[i];
    if !matches!(imp.self_res, SelfRes::Blanket) {
        return None;
    }
    let trait_name = imp.trait_path.as_ref()?.segs.last()?;
    Some(format!("<{} as {trait_name}{}>::{}", imp.self_ty_text, imp.trait_args, def.item.name))
}

fn planned_function(index: &Index, f: FnId, level: u32, is_root: bool) -> PlannedFunction {
    let def = &index.fns[f];
    PlannedFunction {
        path: def.path.clone(),
        display: blanket_display(index, f).unwrap_or_else(|| display_name(&def.match_path)),
        file: index.files[def.file].clone(),
        line: def.item.line,
        level,
        manifest_path: index.crates[def.krate].spec.manifest_path.clone(),
        is_root,
        probe: None,
        skip_reason: None,
    }
}

/// Decides probes one function at a time, handing out dense indices.
struct Probes<'a> {
    ws: &'a Workspace,
    index: &'a Index,
    options: &'a PlanOptions,
    next_index: u32,
    trivial: Trivial,
    /// Probe places already taken (file, open offset), by the path of the function that took each.
    taken: HashMap<(usize, usize), String>,
}

impl Probes<'_> {
    /// Gives `planned` (the entry of `f`) its probe or its skip reason; a root that cannot take one is an error.
    fn decide(&mut self, f: FnId, planned: &mut PlannedFunction) -> Result<()> {
        let def = &self.index.fns[f];
        let reason = match self.inherent_skip(f, planned.is_root)? {
            Some(reason) => Some(reason),
            None if planned.is_root => None,
            None => self.chosen_skip(f),
        };
        if let Some(reason) = reason {
            planned.skip_reason = Some(reason);
            return Ok(());
        }
        let Some(draft) = &def.item.probe else { return Ok(()) };
        self.taken.insert((def.file, draft.open), def.path.clone());
        planned.probe = Some(ProbeSite {
            index: self.next_index,
            kind: draft.kind,
            line: draft.line,
            open: draft.open,
            close: draft.close,
            return_type: draft.return_type.clone(),
            errs: draft.errs,
            body_in_closure: draft.body_in_closure,
            body_twice: draft.body_twice,
            spawns: super::spawns::wraps(self.index, f),
        });
        self.next_index += 1;
        Ok(())
    }

    /// Why `f` cannot take a probe whatever the options say; an error for a root.
    fn inherent_skip(&self, f: FnId, is_root: bool) -> Result<Option<SkipReason>, UserError> {
        let def = &self.index.fns[f];
        let krate = &self.index.crates[def.krate].spec;
        let mut reason = def.item.skip.clone();
        if reason.is_none() && def.item.probe.is_none() {
            reason = Some(SkipReason::NoBody);
        }
        if reason.is_none() && !krate.selected {
            let package = &self.ws.metadata.packages[krate.package].name;
            if is_root {
                return Err(UserError::new(format!(
                    "root `{}` is in package `{package}`, which is not selected",
                    def.path
                ))
                .hint(format!(
                    "pass -p {package}, or run from the workspace root (a member's directory or manifest selects \
                         only that member)"
                )));
            }
            reason = Some(SkipReason::PackageNotSelected(package.to_string()));
        }
        if reason.is_none() {
            if let Some(probe) = &def.item.probe {
                if let Some(first) = self.taken.get(&(def.file, probe.open)) {
                    reason = Some(SkipReason::SameSource(first.clone()));
                }
            }
        }
        match reason {
            Some(reason) if is_root => {
                Err(UserError::new(format!("root `{}` cannot take a probe: {reason}", def.path))
                    .hint("choose a function it calls, or one that calls it"))
            }
            reason => Ok(reason),
        }
    }

    /// Why the options leave out `f`, which could take a probe and is not a root.
    fn chosen_skip(&mut self, f: FnId) -> Option<SkipReason> {
        let def = &self.index.fns[f];
        if self.options.filter.as_ref().is_some_and(|re| !re.is_match(&def.match_path)) {
            return Some(SkipReason::FilteredOut);
        }
        let file = self.index.files[def.file].display().to_string();
        if let Some(reason) = self.options.exclusions.reason(&def.match_path, &def.path, (&file, def.item.line)) {
            return Some(reason);
        }
        let judge_trivial = !self.options.probe_trivial && !self.options.all_functions;
        if !judge_trivial {
            return None;
        }
        // Trivial first: a constructor that is trivial too (`Span { start, end }` of plain data) keeps that reason.
        if self.trivial.cost(self.index, f).is_some() {
            return Some(SkipReason::Trivial);
        }
        def.item.builds_for_later.then_some(SkipReason::BuildsForLater)
    }
}

/// Leaves out the probes of forwarders (`trivial::forwarded_callees`) whose every candidate callee keeps its probe
/// or is trivial, then numbers the remaining probes densely again, in the order they were given.
fn skip_forwarders(index: &Index, trivial: &mut Trivial, order: &[(FnId, u32)], functions: &mut [PlannedFunction]) {
    let mut forwarders = Forwarders {
        index,
        trivial,
        probed: order.iter().zip(functions.iter()).filter(|(_, p)| p.probe.is_some()).map(|(o, _)| o.0).collect(),
        roots: order.iter().zip(functions.iter()).filter(|(_, p)| p.is_root).map(|(o, _)| o.0).collect(),
        memo: HashMap::new(),
        active: HashSet::new(),
    };
    let mut skipped = false;
    for (pos, &(f, _)) in order.iter().enumerate() {
        if forwarders.transparent(f) {
            functions[pos].probe = None;
            functions[pos].skip_reason = Some(SkipReason::Forwarder);
            skipped = true;
        }
    }
    if !skipped {
        return;
    }
    let mut probed: Vec<&mut ProbeSite> = functions.iter_mut().filter_map(|p| p.probe.as_mut()).collect();
    probed.sort_by_key(|p| p.index);
    for (i, probe) in probed.into_iter().enumerate() {
        probe.index = i as u32;
    }
}

/// Which probed functions are forwarders whose probes measure nothing their callees' do not.
struct Forwarders<'a> {
    index: &'a Index,
    trivial: &'a mut Trivial,
    /// Functions that got a probe before forwarders were looked at.
    probed: HashSet<FnId>,
    /// The roots, which keep their probes.
    roots: HashSet<FnId>,
    memo: HashMap<FnId, bool>,
    /// Forwarders being judged: a candidate among them fails, so that no two forwarders are left out on each
    /// other's account (a cycle would leave their callees' time unmeasured).
    active: HashSet<FnId>,
}

impl Forwarders<'_> {
    /// Whether `f` keeps a probe so far, is a forwarder, and every candidate callee is trivial, or probed (in the
    /// end: judged first, so that a forwarder left out is never the one that accounts for another).
    fn transparent(&mut self, f: FnId) -> bool {
        if let Some(&known) = self.memo.get(&f) {
            return known;
        }
        if !self.probed.contains(&f) || self.roots.contains(&f) {
            return false;
        }
        let Some(callees) = super::trivial::forwarded_callees(self.index, f) else {
            self.memo.insert(f, false);
            return false;
        };
        self.active.insert(f);
        let mut all_measured = true;
        for c in callees {
            if self.active.contains(&c) {
                all_measured = false;
                break;
            }
            // A builder left out (`builds_for_later`) only builds a value: the forwarder's call of it measures no
            // more than the builder's own probe would.
            if self.trivial.cost(self.index, c).is_some() || self.index.fns[c].item.builds_for_later {
                continue;
            }
            // A callee left out as a forwarder itself is measured by its own callees.
            let left_out = self.transparent(c);
            if !left_out && !self.probed.contains(&c) {
                all_measured = false;
                break;
            }
        }
        self.active.remove(&f);
        self.memo.insert(f, all_measured);
        all_measured
    }
}

/// A `--filter` that matches none of the reached functions but the roots (the README's `^myapp::` on a crate named
/// `demo`, say) instruments nothing useful: says so, with the crate names that would match. `names` holds each
/// function's (crate name, defining path), by position.
fn filter_leaves_only_roots(
    options: &PlanOptions,
    functions: &[PlannedFunction],
    names: &[(&str, &str)],
) -> Option<String> {
    let filter = options.filter.as_ref()?;
    let others: Vec<usize> = (0..functions.len()).filter(|&i| !functions[i].is_root).collect();
    if others.is_empty() || others.iter().any(|&i| filter.is_match(names[i].1)) {
        return None;
    }
    let mut crates: Vec<&str> = others.iter().map(|&i| names[i].0).collect();
    crates.sort_unstable();
    crates.dedup();
    let n = others.len();
    let noun = if n == 1 { "function" } else { "functions" };
    Some(format!(
        "--filter `{}` matches none of the {n} reached {noun} but the roots: only the roots get a probe\n  hint: \
         the filter matches defining paths, which start with the crate name ({}), e.g. --filter '^{}::'",
        filter.as_str(),
        crates.join(", "),
        crates[0]
    ))
}

/// The notes on unresolved and over-approximated call sites, by place.
fn call_site_notes(index: &Index, reached: &Reached) -> Vec<CallSiteNote> {
    let mut notes: Vec<CallSiteNote> = reached
        .notes
        .iter()
        .map(|(f, call, note)| {
            let def = &index.fns[*f];
            let site = &def.item.calls[*call];
            CallSiteNote {
                function: def.path.clone(),
                file: index.files[def.file].clone(),
                line: site.line,
                call: site.text.clone(),
                note: note.clone(),
            }
        })
        .collect();
    notes.sort_by(|a, b| (&a.file, a.line, &a.call).cmp(&(&b.file, b.line, &b.call)));
    notes.dedup_by(|a, b| a.file == b.file && a.line == b.line && a.call == b.call && a.note == b.note);
    notes
}

/// Replaces the workspace root prefix in a message with nothing, so paths read `src/x.rs:3`.
fn relative_text(text: &str, root: &Path) -> String {
    let prefix = format!("{}{}", root.display(), std::path::MAIN_SEPARATOR);
    text.replace(&prefix, "")
}
