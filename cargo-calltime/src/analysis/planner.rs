//! From the index to the plan: find the roots, traverse, decide each reached function's probe or skip reason, and
//! assign dense indices.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::time::Instant;

use anyhow::{bail, Result};

use super::graph::{traverse, traverse_all};
use super::index::{FnId, Index, Owner, SelfRes};
use super::modules::TargetKind;
use super::render::plural;
use super::syntax::{CallKind, Receiver, RANGE_RECEIVER};
use crate::cli::PlanArgs;
use crate::plan::{CallSiteNote, Edge, Plan, PlannedFunction, ProbeSite};
use crate::ui;
use crate::workspace::Workspace;

pub const FILTERED_OUT: &str = "filtered out by --filter";
pub const EXCLUDED: &str = "excluded by --exclude";
pub const TRIVIAL: &str = "trivial: no loops and no costly calls (pass --probe-trivial to probe it)";

/// See [`crate::plan::make_plan`].
pub fn make_plan(ws: &Workspace, args: &PlanArgs) -> Result<Plan> {
    if args.depth == 0 {
        bail!("--depth must be at least 1 (the root is level 1)\n  hint: use --depth 1 to time only the root");
    }
    let filter = path_regex(&args.filter, "--filter", "the filter", "'^myapp::'")?;
    let exclude = path_regex(&args.exclude, "--exclude", "the exclusion", "'^myapp::strings::'")?;
    if args.root.is_empty() {
        bail!("no --root given\n  hint: name the function to time, e.g. --root myapp::server::handle");
    }
    let started = Instant::now();
    // Examples, tests and benches are indexed only when a root needs them: a root named after one of those
    // crates, or one not found among the libs and bins.
    let aux_named = args.root.iter().any(|r| {
        let first = r.trim_start_matches("::").split("::").next().unwrap_or("");
        super::modules::crate_specs(ws, true)
            .iter()
            .any(|c| c.name == first && !matches!(c.kind, TargetKind::Lib | TargetKind::Bin))
    });
    let mut index = super::index_workspace(ws, aux_named);
    if !aux_named && args.root.iter().any(|r| find_root(&index, r, &ws.root).is_err()) {
        index = super::index_workspace(ws, true);
    }
    ui::status(
        "Analysed",
        &format!(
            "{}, {}, {}",
            plural(index.files.len(), "file"),
            plural(index.lines, "line"),
            plural(index.fns.len(), "function")
        ),
    );
    let warnings: Vec<String> = index.warnings.iter().map(|w| relative_text(w, &ws.root)).collect();
    for w in &warnings {
        ui::warn(w);
    }
    let mut roots: Vec<FnId> = Vec::new();
    for arg in &args.root {
        for f in find_root(&index, arg, &ws.root)? {
            if !roots.contains(&f) {
                roots.push(f);
            }
        }
    }
    let reached = if args.all_functions {
        traverse_all(&index, &roots, args.depth)
    } else {
        traverse(&index, &roots, args.depth)
    };
    tracing::info!("graph of {} functions in {:?}", reached.functions.len(), started.elapsed());

    // Functions in a deterministic order: level, then path, then place; the unreached ones of --all-functions
    // (level 0) last.
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
    let position: HashMap<FnId, usize> = order.iter().enumerate().map(|(i, (f, _))| (*f, i)).collect();

    let mut functions: Vec<PlannedFunction> = order
        .iter()
        .map(|&(f, level)| {
            let def = &index.fns[f];
            let krate = &index.crates[def.krate].spec;
            PlannedFunction {
                path: def.path.clone(),
                display: display_name(&def.match_path),
                file: index.files[def.file].clone(),
                line: def.item.line,
                level,
                manifest_path: krate.manifest_path.clone(),
                is_root: roots.contains(&f),
                probe: None,
                skip_reason: None,
            }
        })
        .collect();

    // Probes: roots first (in --root order), then the others in plan order.
    let mut visit: Vec<usize> = roots.iter().map(|r| position[r]).collect();
    visit.extend((0..order.len()).filter(|p| !functions[*p].is_root));
    let mut next_index = 0u32;
    let mut trivial = Trivial::default();
    let mut taken: HashMap<(usize, usize), String> = HashMap::new();
    for pos in visit {
        let f = order[pos].0;
        let def = &index.fns[f];
        let krate = &index.crates[def.krate].spec;
        let is_root = functions[pos].is_root;
        let mut reason = def.item.skip.clone();
        if reason.is_none() && def.item.probe.is_none() {
            reason = Some("has no body".to_owned());
        }
        if reason.is_none() && !krate.selected {
            let package = &ws.metadata.packages[krate.package].name;
            if is_root {
                bail!(
                    "root `{}` is in package `{package}`, which is not selected\n  hint: pass -p {package}, or run from the workspace root (a member's directory or manifest selects only that member)",
                    def.path
                );
            }
            reason = Some(format!("in package `{package}`, which -p did not select"));
        }
        if reason.is_none() {
            if let Some(probe) = &def.item.probe {
                if let Some(first) = taken.get(&(def.file, probe.open)) {
                    reason = Some(format!("same source as `{first}` (the file belongs to several crates)"));
                }
            }
        }
        if let Some(reason) = &reason {
            if is_root {
                bail!(
                    "root `{}` cannot take a probe: {reason}\n  hint: choose a function it calls, or one that calls it",
                    def.path
                );
            }
        }
        if reason.is_none() && !is_root {
            if let Some(re) = &filter {
                if !re.is_match(&def.match_path) {
                    reason = Some(FILTERED_OUT.to_owned());
                }
            }
            if let Some(re) = &exclude {
                if reason.is_none() && (re.is_match(&def.match_path) || re.is_match(&def.path)) {
                    reason = Some(EXCLUDED.to_owned());
                }
            }
        }
        if reason.is_none()
            && !is_root
            && !args.probe_trivial
            && !args.all_functions
            && trivial.cost(&index, f).is_some()
        {
            reason = Some(TRIVIAL.to_owned());
        }
        match reason {
            Some(r) => functions[pos].skip_reason = Some(r),
            None => {
                let probe = def.item.probe.as_ref().expect("checked above");
                taken.insert((def.file, probe.open), def.path.clone());
                functions[pos].probe = Some(ProbeSite {
                    index: next_index,
                    kind: probe.kind,
                    open: probe.open,
                    close: probe.close,
                    return_type: probe.return_type.clone(),
                });
                next_index += 1;
            }
        }
    }

    let edges: Vec<Edge> =
        reached.edges.iter().map(|(a, b)| Edge { from: position[a], to: position[b] }).collect::<Vec<_>>();
    let mut edges = edges;
    edges.sort_by_key(|e| (e.from, e.to));

    let mut unresolved: Vec<CallSiteNote> = reached
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
    unresolved.sort_by(|a, b| (&a.file, a.line, &a.call).cmp(&(&b.file, b.line, &b.call)));
    unresolved.dedup_by(|a, b| a.file == b.file && a.line == b.line && a.call == b.call && a.note == b.note);

    tracing::info!("plan ready in {:?}", started.elapsed());
    // Freeing tens of thousands of small allocations takes a noticeable share of the analysis time; nothing waits
    // for it, so it happens off the main thread.
    let _ = std::thread::Builder::new().name("calltime-free-index".into()).spawn(move || drop(index));
    Ok(Plan {
        root_args: args.root.clone(),
        depth: args.depth,
        filter: args.filter.clone(),
        exclude: args.exclude.clone(),
        functions,
        edges,
        unresolved,
        warnings,
    })
}

/// Compiles a `--filter`/`--exclude` value, or says what is wrong with it.
fn path_regex(re: &Option<String>, flag: &str, what: &str, example: &str) -> Result<Option<regex::Regex>> {
    let Some(re) = re else { return Ok(None) };
    regex::Regex::new(re).map(Some).map_err(|e| {
        anyhow::anyhow!(
            "invalid {flag} regex `{re}`: {}\n  hint: {what} is a Rust regex on paths like `krate::module::Type::method`, e.g. {example}",
            regex_error_text(&e)
        )
    })
}

/// Most statements a trivial function may have, its own and those of the trivial functions it calls.
const TRIVIAL_MAX_STATEMENTS: u32 = 6;

/// Std methods that run in constant time without allocating (`Vec::len`, `Option::unwrap`, `slice::get`): a call
/// to one of these, and to nothing in the workspace, keeps a body trivial. A workspace method of the same name is
/// judged by its own body instead.
const CHEAP_STD_METHODS: &[&str] = &[
    "len",
    "is_empty",
    "is_some",
    "is_none",
    "is_ok",
    "is_err",
    "unwrap",
    "expect",
    "unwrap_or",
    "unwrap_or_default",
    "copied",
    "as_ref",
    "as_mut",
    "as_deref",
    "as_deref_mut",
    "as_str",
    "as_slice",
    "as_bytes",
    "as_ptr",
    "get",
    "get_mut",
    "first",
    "last",
    "first_mut",
    "last_mut",
    "pop",
    "index",
    "index_mut",
    "abs",
    "wrapping_add",
    "wrapping_sub",
    "saturating_add",
    "saturating_sub",
    "checked_add",
    "checked_sub",
    "ok",
    "err",
    "is_ascii",
    "is_ascii_digit",
    "is_ascii_alphabetic",
    "is_ascii_alphanumeric",
    "is_ascii_whitespace",
    "is_ascii_punctuation",
    "to_ascii_lowercase",
    "to_ascii_uppercase",
];

/// `a.min(b)`, `std::cmp::max(a, b)`, `mem::replace(..)`: cheap with these argument counts (an iterator's
/// `min()` is a loop).
const CHEAP_STD_FNS: &[(&str, usize)] = &[("min", 2), ("max", 2), ("swap", 2), ("replace", 2), ("take", 1)];

/// Which functions cost less than their probe would: like profilers that leave getters and setters alone, a
/// function whose body runs straight through (no loop, closure or `.await`; see `straight_line_stmts`), has at
/// most a few statements, and calls only other trivial functions and constant-time std accessors.
#[derive(Default)]
struct Trivial {
    /// The statements counted for each function judged so far; `None`: not trivial.
    memo: HashMap<FnId, Option<u32>>,
    /// Functions being judged (a recursive call is never trivial).
    active: HashSet<FnId>,
}

impl Trivial {
    fn cost(&mut self, index: &Index, f: FnId) -> Option<u32> {
        if let Some(known) = self.memo.get(&f) {
            return *known;
        }
        if !self.active.insert(f) {
            return None;
        }
        let cost = self.judge(index, f);
        self.active.remove(&f);
        self.memo.insert(f, cost);
        cost
    }

    fn judge(&mut self, index: &Index, f: FnId) -> Option<u32> {
        let item = &index.fns[f].item;
        if !matches!(item.probe.as_ref()?.kind, crate::plan::ProbeKind::Sync) {
            return None;
        }
        let mut total = item.straight_line_stmts?;
        // A parameter taken by value is dropped at the end unless moved on: that may free memory.
        for ty in &item.value_params {
            let copy = match ty.as_str() {
                "Self" => match index.fns[f].owner {
                    Owner::Impl(imp) => {
                        matches!(index.impls[imp].self_res, SelfRes::Local(t) if index.types[t].is_copy)
                    }
                    _ => false,
                },
                name => index
                    .types_by_name
                    .get(name)
                    .is_some_and(|ts| !ts.is_empty() && ts.iter().all(|&t| index.types[t].is_copy)),
            };
            if !copy {
                return None;
            }
        }
        let resolved = index.resolve_calls(f);
        for (site, targets) in item.calls.iter().zip(&resolved.by_call) {
            let targets: Vec<FnId> = targets.iter().copied().filter(|t| !index.fns[*t].item.test_only).collect();
            let cheap_external = match &site.kind {
                CallKind::Method { name, args, .. } => {
                    CHEAP_STD_METHODS.contains(&name.as_str())
                        || (name == "contains" && site.text.starts_with(&format!("{RANGE_RECEIVER}.")))
                        || CHEAP_STD_FNS.iter().any(|(n, a)| n == name && args.is_some_and(|x| x + 1 == *a))
                }
                CallKind::Qualified { name, .. } => CHEAP_STD_METHODS.contains(&name.as_str()),
                CallKind::Path { path, args, called } => {
                    *called && path.segs.last().is_some_and(|l| CHEAP_STD_FNS.contains(&(l.as_str(), *args)))
                }
                // `x[i]` on a std collection.
                CallKind::Operator { .. } => true,
            };
            if targets.is_empty() {
                if !cheap_external {
                    return None;
                }
                continue;
            }
            // The call may also leave the workspace when its receiver's type is not known.
            let receiver_known = match &site.kind {
                CallKind::Method { receiver, .. } => matches!(receiver, Receiver::Type(_) | Receiver::SelfField(_)),
                _ => true,
            };
            if !receiver_known && !cheap_external {
                return None;
            }
            let mut most = 0;
            for t in targets {
                most = most.max(self.cost(index, t)?);
            }
            total += most;
        }
        (total <= TRIVIAL_MAX_STATEMENTS).then_some(total)
    }
}

/// The regex crate's message without its multi-line caret diagram: `unclosed group`.
fn regex_error_text(err: &regex::Error) -> String {
    let text = err.to_string();
    let last = text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or(&text);
    last.trim().trim_start_matches("error: ").to_owned()
}

/// Replaces the workspace root prefix in a message with nothing, so paths read `src/x.rs:3`.
fn relative_text(text: &str, root: &Path) -> String {
    let prefix = format!("{}{}", root.display(), std::path::MAIN_SEPARATOR);
    text.replace(&prefix, "")
}

/// `Type::method`, `module::func`: the last two segments of the defining path, without the crate name.
pub fn display_name(match_path: &str) -> String {
    let segs = split_path(match_path);
    let tail = &segs[1.min(segs.len())..];
    let start = tail.len().saturating_sub(2);
    let shown = &tail[start..];
    if shown.is_empty() {
        match_path.to_owned()
    } else {
        shown.join("::")
    }
}

/// Splits on `::` outside angle brackets (`krate::Vec<a::B>::m` has three segments).
fn split_path(path: &str) -> Vec<&str> {
    let bytes = path.as_bytes();
    let mut depth = 0i32;
    let mut out = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'<' => depth += 1,
            b'>' => depth -= 1,
            b':' if depth == 0 && bytes.get(i + 1) == Some(&b':') => {
                out.push(&path[start..i]);
                start = i + 2;
                i += 1;
            }
            _ => {}
        }
        i += 1;
    }
    out.push(&path[start..]);
    out
}

/// The functions `arg` names: by `::`-suffix of the defining path (or the rustc-style path exactly). Several
/// definitions of one path (`#[cfg]` variants) are all roots; different paths are ambiguous.
fn find_root(index: &Index, arg: &str, ws_root: &Path) -> Result<Vec<FnId>> {
    let wanted = arg.trim().trim_start_matches("::");
    let suffix = format!("::{wanted}");
    let matches: Vec<FnId> = (0..index.fns.len())
        .filter(|&f| {
            let def = &index.fns[f];
            def.match_path == wanted || def.match_path.ends_with(&suffix) || def.path == wanted
        })
        .collect();
    let matches = if matches.is_empty() { through_reexports(index, wanted) } else { matches };
    if matches.is_empty() {
        let near = nearest_names(index, wanted);
        if near.is_empty() {
            bail!(
                "no function matches --root `{arg}`\n  hint: roots are paths like `krate::module::function` or `krate::module::Type::method`; `cargo calltime graph --root main` works for a binary"
            );
        }
        bail!("no function matches --root `{arg}`\n  hint: did you mean one of: {}", near.join(", "));
    }
    let mut distinct: Vec<&str> = matches.iter().map(|&f| index.fns[f].match_path.as_str()).collect();
    distinct.sort_unstable();
    distinct.dedup();
    if distinct.len() > 1 {
        let mut listed: Vec<String> = matches
            .iter()
            .map(|&f| {
                let def = &index.fns[f];
                let file = index.files[def.file].strip_prefix(ws_root).unwrap_or(&index.files[def.file]);
                format!("{} ({}:{})", def.match_path, file.display(), def.item.line)
            })
            .collect();
        listed.sort();
        listed.dedup();
        bail!(
            "--root `{arg}` matches {} functions: {}\n  hint: pass a longer path, e.g. --root {}",
            distinct.len(),
            listed.join(", "),
            distinct[0]
        );
    }
    Ok(matches)
}

/// `krate::a::f` where `f` is re-exported (`pub use`) rather than defined there.
fn through_reexports(index: &Index, wanted: &str) -> Vec<FnId> {
    let segs: Vec<String> = split_path(wanted).into_iter().map(str::to_owned).collect();
    if segs.len() < 2 {
        return Vec::new();
    }
    let mut found = Vec::new();
    for (k, c) in index.crates.iter().enumerate() {
        if c.spec.name == segs[0] {
            for f in index.resolve_from_root(k, &segs[1..]) {
                if !found.contains(&f) {
                    found.push(f);
                }
            }
        }
    }
    found
}

/// Up to 10 defining paths whose last segment is close to the wanted one (substring or small edit distance).
fn nearest_names(index: &Index, wanted: &str) -> Vec<String> {
    let wanted_last = split_path(wanted).last().copied().unwrap_or(wanted).to_lowercase();
    let limit = (wanted_last.len() / 3).max(2);
    let mut scored: Vec<(usize, usize, &str)> = Vec::new();
    let mut seen: HashSet<&str> = HashSet::new();
    for def in &index.fns {
        if def.item.test_only || !seen.insert(def.match_path.as_str()) {
            continue;
        }
        let name = split_path(&def.match_path).last().copied().unwrap_or("").to_lowercase();
        let score = if name == wanted_last {
            0
        } else if name.contains(&wanted_last) || (name.len() >= 3 && wanted_last.contains(&name)) {
            1
        } else {
            let d = edit_distance(&name, &wanted_last);
            if d > limit {
                continue;
            }
            1 + d
        };
        scored.push((score, def.match_path.len(), def.match_path.as_str()));
    }
    // Closest names first, then the shortest (least nested) paths.
    scored.sort();
    scored.into_iter().take(10).map(|(_, _, p)| format!("`{p}`")).collect()
}

fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for i in 1..=a.len() {
        let mut cur = vec![i; b.len() + 1];
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            cur[j] = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_drop_the_crate_and_keep_two_segments() {
        assert_eq!(display_name("app::server::handle"), "server::handle");
        assert_eq!(display_name("app::main"), "main");
        assert_eq!(display_name("app::a::b::Type::method"), "Type::method");
        assert_eq!(display_name("app::m::Vec<a::B>::len"), "Vec<a::B>::len");
    }

    #[test]
    fn edit_distance_counts_single_edits() {
        assert_eq!(edit_distance("handle", "handel"), 2);
        assert_eq!(edit_distance("parse", "parse"), 0);
        assert_eq!(edit_distance("", "abc"), 3);
    }
}
