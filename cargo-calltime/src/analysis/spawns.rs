//! Spawn sites: calls in a body that hand a closure or a future to another thread or task (`thread::spawn`, a
//! scoped thread's `s.spawn`, rayon's `join`/`scope`/`spawn`, tokio's `spawn`/`spawn_blocking`/`spawn_local`,
//! other executors' `spawn`). The rewrite wraps each argument that runs elsewhere in the runtime's `adopt`, so the
//! work it does hangs under the spawning call in the same invocation (calltime-rt/src/adopt.rs).
//!
//! Free functions are resolved through the body's `use`s (`use std::thread; thread::spawn(..)`, `use rayon::join
//! as par;`, globs of the known modules) to a known path; anything else is left alone. Methods (`s.spawn(..)`,
//! `rt.spawn(..)`, `pool.install(..)`) cannot be resolved without types: they are matched by name and the
//! argument's form decides the wrapper (a closure written there, an `async` block, or a call of a workspace async
//! fn, taken to make a future), so an unknown form is never wrapped.

use syn::spanned::Spanned;
use syn::{Expr, ExprCall, ExprMethodCall};

use super::index::{FnId, Index};
use super::syntax::{PathRef, UseKind};
use crate::plan::{SpawnWrap, Wrap};

/// What a known spawn function does with an argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Adopter {
    /// Runs a closure with no parameter elsewhere.
    Closure,
    /// Runs a closure given a reference (a rayon scope) elsewhere.
    RefClosure,
    /// Polls a future elsewhere.
    Future,
}

/// Names a spawn call may end in; calls ending in anything else are not looked at.
const SPAWN_NAMES: &[&str] = &[
    "spawn",
    "spawn_fifo",
    "spawn_blocking",
    "spawn_local",
    "spawn_ok",
    "spawn_scoped",
    "join",
    "scope",
    "scope_fifo",
    "install",
];

/// Methods that start a rayon parallel iterator: the closures given to its adaptors run on the pool's threads, one
/// call per item. A chain consumed where it starts is adopted ([`parallel_chain`]); the others are noted so the
/// plan can say that their calls are not recorded, never silently.
const PARALLEL_ITERATOR_NAMES: &[&str] = &[
    "par_iter",
    "par_iter_mut",
    "into_par_iter",
    "par_bridge",
    "par_chunks",
    "par_chunks_mut",
    "par_chunks_exact",
    "par_windows",
    "par_split",
    "par_lines",
    "par_bytes",
    "par_chars",
    "par_drain",
    "par_extend",
    "par_sort_by",
    "par_sort_by_key",
    "par_sort_unstable_by",
    "par_sort_unstable_by_key",
];

/// Methods of a parallel iterator (and of its parallel slices) that start one and consume it in the same call: a
/// chain may end there.
const SELF_CONSUMING: &[&str] = &["par_sort_by", "par_sort_by_key", "par_sort_unstable_by", "par_sort_unstable_by_key"];

/// Methods that consume a rayon parallel iterator (`ParallelIterator`, `IndexedParallelIterator`): the chain's
/// closures have all run when the call returns, so a context made before the chain can be dropped after it.
const PARALLEL_CONSUMERS: &[&str] = &[
    "for_each",
    "for_each_with",
    "for_each_init",
    "try_for_each",
    "try_for_each_with",
    "try_for_each_init",
    "count",
    "reduce",
    "reduce_with",
    "try_reduce",
    "try_reduce_with",
    "sum",
    "product",
    "min",
    "min_by",
    "min_by_key",
    "max",
    "max_by",
    "max_by_key",
    "find_any",
    "find_first",
    "find_last",
    "find_map_any",
    "find_map_first",
    "find_map_last",
    "any",
    "all",
    "collect",
    "collect_into_vec",
    "collect_vec_list",
    "unzip",
    "unzip_into_vecs",
    "partition",
    "partition_map",
    "position_any",
    "position_first",
    "position_last",
    "cmp",
    "partial_cmp",
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
];

/// Whether a spawn draft is the start of a rayon parallel iterator that is not adopted (see
/// [`PARALLEL_ITERATOR_NAMES`]), or an adopted chain given a closure by name (whose calls are not recorded).
pub fn is_parallel_iterator(draft: &SpawnDraft) -> bool {
    match &draft.callee {
        SpawnCallee::Method(name) => PARALLEL_ITERATOR_NAMES.contains(&name.as_str()),
        SpawnCallee::ParallelChain { by_name, .. } => *by_name > 0,
        SpawnCallee::Path(_) => false,
    }
}

/// The number of parameters each argument of a rayon adaptor or consumer takes when it is a closure (`None`: a value,
/// such as `map_with`'s first), so that a function passed by name (`.map(analyze_one)`, `.reduce(Vec::new, merge)`)
/// can be run through the parallel call's context as a closure of the same arity (its probe is in its body, but on
/// a worker no invocation is current unless an item makes the call's part current). Methods not listed are not
/// wrapped (the plan warns).
const PARALLEL_ARITIES: &[(&str, &[Option<usize>])] = &[
    ("map", &[Some(1)]),
    ("for_each", &[Some(1)]),
    ("filter", &[Some(1)]),
    ("filter_map", &[Some(1)]),
    ("flat_map", &[Some(1)]),
    ("flat_map_iter", &[Some(1)]),
    ("inspect", &[Some(1)]),
    ("update", &[Some(1)]),
    ("any", &[Some(1)]),
    ("all", &[Some(1)]),
    ("find_any", &[Some(1)]),
    ("find_first", &[Some(1)]),
    ("find_last", &[Some(1)]),
    ("find_map_any", &[Some(1)]),
    ("find_map_first", &[Some(1)]),
    ("find_map_last", &[Some(1)]),
    ("position_any", &[Some(1)]),
    ("position_first", &[Some(1)]),
    ("position_last", &[Some(1)]),
    ("try_for_each", &[Some(1)]),
    ("partition_map", &[Some(1)]),
    ("min_by_key", &[Some(1)]),
    ("max_by_key", &[Some(1)]),
    ("par_sort_by_key", &[Some(1)]),
    ("par_sort_unstable_by_key", &[Some(1)]),
    ("min_by", &[Some(2)]),
    ("max_by", &[Some(2)]),
    ("reduce_with", &[Some(2)]),
    ("try_reduce_with", &[Some(2)]),
    ("par_sort_by", &[Some(2)]),
    ("par_sort_unstable_by", &[Some(2)]),
    ("fold", &[Some(0), Some(2)]),
    ("try_fold", &[Some(0), Some(2)]),
    ("reduce", &[Some(0), Some(2)]),
    ("try_reduce", &[Some(0), Some(2)]),
    ("map_init", &[Some(0), Some(2)]),
    ("for_each_init", &[Some(0), Some(2)]),
    ("try_for_each_init", &[Some(0), Some(2)]),
    ("map_with", &[None, Some(2)]),
    ("for_each_with", &[None, Some(2)]),
    ("try_for_each_with", &[None, Some(2)]),
    ("fold_with", &[None, Some(2)]),
    ("try_fold_with", &[None, Some(2)]),
];

/// The arity a closure given as argument `at` of `method` (of `count` arguments) has in a rayon chain (`Some(None)`:
/// the argument is a value), or None when the method is not known.
fn parallel_arity(method: &str, at: usize, count: usize) -> Option<Option<usize>> {
    let (_, arities) = PARALLEL_ARITIES.iter().find(|(name, _)| *name == method)?;
    if arities.len() != count {
        return None;
    }
    Some(arities[at])
}

/// A function passed by name in a parallel iterator's chain (`.map(analyze_one)`): its range, the number of
/// parameters rayon calls it with, and its name's last segment (wrapped only when it names a workspace function).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedItem {
    pub open: usize,
    pub close: usize,
    pub arity: usize,
    pub name: String,
}

/// A closure written in a parallel iterator's chain: its range, where its body starts, and whether it declares its
/// return type (its body is then a block, wrapped inside its braces).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParallelItem {
    pub open: usize,
    pub close: usize,
    pub body: usize,
    pub typed: bool,
}

/// A rayon parallel iterator's chain that ends in a consumer (`v.par_iter().map(|x| ..).sum()`), found from the
/// consuming call: the chain's range, the closures written in it, the closures passed by name (not adopted) and the
/// byte offsets of the calls that start a parallel iterator in it (the plan warns about the others). None when the
/// call consumes no chain that starts a parallel iterator, or when the chain goes through another consumer first
/// (that one is its own chain). Names are all syn gives: a receiver that is no rayon iterator gets the same
/// wrapping, which keeps compiling and behaving the same (the closures run as they are).
pub(super) fn parallel_chain(call: &ExprMethodCall, base: usize) -> Option<(SpawnDraft, Vec<usize>)> {
    let name = call.method.to_string();
    if !PARALLEL_CONSUMERS.contains(&name.as_str()) && !SELF_CONSUMING.contains(&name.as_str()) {
        return None;
    }
    let mut items = Vec::new();
    let mut named = Vec::new();
    let mut by_name = 0;
    let mut starts = Vec::new();
    let mut at = call;
    loop {
        collect_args(at, base, &mut items, &mut named, &mut by_name, &mut starts);
        if PARALLEL_ITERATOR_NAMES.contains(&at.method.to_string().as_str()) {
            starts.push(base + at.method.span().byte_range().start);
            break;
        }
        match strip_parens(&at.receiver) {
            Expr::MethodCall(next) if !PARALLEL_CONSUMERS.contains(&next.method.to_string().as_str()) => at = next,
            _ => return None,
        }
    }
    let range = Spanned::span(call).byte_range();
    let callee = SpawnCallee::ParallelChain { start: base + range.start, end: base + range.end, items, named, by_name };
    Some((SpawnDraft { callee, args: Vec::new() }, starts))
}

fn strip_parens(expr: &Expr) -> &Expr {
    match expr {
        Expr::Paren(p) => strip_parens(&p.expr),
        other => other,
    }
}

/// The closures of one call of a chain; an argument that is itself a chain starting a parallel iterator (`zip(b
/// .par_iter().map(..))`) runs in the same parallel call: its closures too.
fn collect_args(
    call: &ExprMethodCall,
    base: usize,
    items: &mut Vec<ParallelItem>,
    named: &mut Vec<NamedItem>,
    by_name: &mut usize,
    starts: &mut Vec<usize>,
) {
    let method = call.method.to_string();
    for (at, arg) in call.args.iter().enumerate() {
        match strip_parens(arg) {
            Expr::Closure(c) if c.asyncness.is_none() => {
                let range = Spanned::span(c).byte_range();
                let body = base + Spanned::span(&*c.body).byte_range().start;
                let typed = !matches!(c.output, syn::ReturnType::Default);
                items.push(ParallelItem { open: base + range.start, close: base + range.end, body, typed });
            }
            Expr::Path(p) if p.qself.is_none() => match parallel_arity(&method, at, call.args.len()) {
                Some(None) => {}
                Some(Some(arity)) => {
                    let range = Spanned::span(arg).byte_range();
                    let name = p.path.segments.last().map(|s| s.ident.to_string()).unwrap_or_default();
                    named.push(NamedItem { open: base + range.start, close: base + range.end, arity, name });
                }
                None => *by_name += 1,
            },
            Expr::Closure(_) | Expr::Path(_) => *by_name += 1,
            Expr::MethodCall(inner) => {
                let mut inner_items = Vec::new();
                let mut inner_named = Vec::new();
                let mut inner_by_name = 0;
                let mut inner_starts = Vec::new();
                let mut at = inner;
                loop {
                    collect_args(at, base, &mut inner_items, &mut inner_named, &mut inner_by_name, &mut inner_starts);
                    if PARALLEL_ITERATOR_NAMES.contains(&at.method.to_string().as_str()) {
                        inner_starts.push(base + at.method.span().byte_range().start);
                        items.extend(inner_items);
                        named.extend(inner_named);
                        *by_name += inner_by_name;
                        starts.extend(inner_starts);
                        break;
                    }
                    match strip_parens(&at.receiver) {
                        Expr::MethodCall(next) => at = next,
                        _ => break,
                    }
                }
            }
            _ => {}
        }
    }
}

/// Free functions that run their arguments elsewhere, by full path, with what each argument is.
const KNOWN_PATHS: &[(&str, &[Adopter])] = &[
    ("std::thread::spawn", &[Adopter::Closure]),
    ("rayon::join", &[Adopter::Closure, Adopter::Closure]),
    ("rayon::scope", &[Adopter::RefClosure]),
    ("rayon::scope_fifo", &[Adopter::RefClosure]),
    ("rayon::spawn", &[Adopter::Closure]),
    ("rayon::spawn_fifo", &[Adopter::Closure]),
    ("tokio::spawn", &[Adopter::Future]),
    ("tokio::task::spawn", &[Adopter::Future]),
    ("tokio::task::spawn_blocking", &[Adopter::Closure]),
    ("tokio::task::spawn_local", &[Adopter::Future]),
    ("async_std::task::spawn", &[Adopter::Future]),
    ("async_std::task::spawn_blocking", &[Adopter::Closure]),
    ("async_std::task::spawn_local", &[Adopter::Future]),
    ("smol::spawn", &[Adopter::Future]),
];

/// The form of an argument, as far as choosing a wrapper goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgShape {
    /// A closure written there (not `async`), whose body starts at `body`.
    Closure {
        params: usize,
        body: usize,
    },
    AsyncBlock,
    /// A function or method call (its result is what is spawned).
    Call,
    Other,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SpawnCallee {
    Path(PathRef),
    Method(String),
    /// A parallel iterator's chain consumed in one expression ([`parallel_chain`]), over bytes `start..end`.
    ParallelChain {
        start: usize,
        end: usize,
        items: Vec<ParallelItem>,
        /// Functions passed by name where rayon's arity for them is known ([`PARALLEL_ARITIES`]).
        named: Vec<NamedItem>,
        /// Closures passed by name that cannot be wrapped (unknown arity, an async closure).
        by_name: usize,
    },
}

/// A call that may spawn: what it calls and each argument's byte range (in the file as on disk) and form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpawnDraft {
    pub callee: SpawnCallee,
    pub args: Vec<SpawnArg>,
}

fn shape(arg: &Expr, base: usize) -> ArgShape {
    match arg {
        Expr::Closure(c) if c.asyncness.is_none() => {
            ArgShape::Closure { params: c.inputs.len(), body: base + Spanned::span(&*c.body).byte_range().start }
        }
        Expr::Async(_) => ArgShape::AsyncBlock,
        Expr::Call(_) | Expr::MethodCall(_) => ArgShape::Call,
        _ => ArgShape::Other,
    }
}

/// An argument: its byte range, its form, and for a call, the name of the function or method it calls.
pub type SpawnArg = (usize, usize, ArgShape, Option<String>);

fn args_of<'a>(args: impl Iterator<Item = &'a Expr>, base: usize) -> Vec<SpawnArg> {
    args.map(|a| {
        let range = Spanned::span(a).byte_range();
        let called = match a {
            Expr::Call(c) => match &*c.func {
                Expr::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
                _ => None,
            },
            Expr::MethodCall(m) => Some(m.method.to_string()),
            _ => None,
        };
        (base + range.start, base + range.end, shape(a, base), called)
    })
    .collect()
}

/// Whether a workspace function named `name` is async (or returns an async block): a method matched by name
/// (`rt.spawn(handle(conn))`) is taken to be given a future only then, since a call could as well make a closure.
fn makes_future(index: &Index, name: &str) -> bool {
    let named = index.free_by_name.get(name).into_iter().chain(index.methods_by_name.get(name)).flatten();
    named.into_iter().any(|&f| {
        let kind = index.fns[f].item.probe.as_ref().map(|p| p.kind);
        matches!(kind, Some(crate::plan::ProbeKind::Async | crate::plan::ProbeKind::AsyncBlock))
    })
}

/// A path call that may spawn (its last segment is a spawn name); `base` is added to every offset.
pub(super) fn path_draft(call: &ExprCall, base: usize) -> Option<SpawnDraft> {
    let Expr::Path(p) = &*call.func else { return None };
    let last = p.path.segments.last()?.ident.to_string();
    if p.qself.is_some() || !SPAWN_NAMES.contains(&last.as_str()) {
        return None;
    }
    Some(SpawnDraft { callee: SpawnCallee::Path(PathRef::from_syn(&p.path)), args: args_of(call.args.iter(), base) })
}

/// A method call that may spawn (its name is a spawn name).
pub(super) fn method_draft(call: &ExprMethodCall, base: usize) -> Option<SpawnDraft> {
    let name = call.method.to_string();
    if !SPAWN_NAMES.contains(&name.as_str()) && !PARALLEL_ITERATOR_NAMES.contains(&name.as_str()) {
        return None;
    }
    Some(SpawnDraft { callee: SpawnCallee::Method(name), args: args_of(call.args.iter(), base) })
}

/// The wrappers for function `f`'s spawn sites.
pub fn wraps(index: &Index, f: FnId) -> Vec<SpawnWrap> {
    let def = &index.fns[f];
    let mut out = Vec::new();
    for draft in def.item.spawns.iter() {
        let adopters: Vec<Option<Adopter>> = match &draft.callee {
            SpawnCallee::Path(path) => match known_path(index, def.scope, path) {
                Some(known) => known.iter().copied().map(Some).collect(),
                None => continue,
            },
            // Nothing to wrap: the plan notes them (`parallel_iterator_warning`).
            SpawnCallee::Method(_) if is_parallel_iterator(draft) => continue,
            SpawnCallee::ParallelChain { start, end, items, named, .. } => {
                // A name that is no workspace function (`String::len`, a std constructor) has no probe to reach.
                let named: Vec<&NamedItem> = named
                    .iter()
                    .filter(|item| item.open < item.close && names_workspace_function(index, &item.name))
                    .collect();
                if (items.is_empty() && named.is_empty()) || start >= end {
                    continue;
                }
                out.push(SpawnWrap { open: *start, close: *end, wrap: Wrap::ParallelChain });
                for item in items.iter().filter(|item| item.open < item.body && item.body < item.close) {
                    let wrap = Wrap::ParallelItem { body: item.body, typed: item.typed };
                    out.push(SpawnWrap { open: item.open, close: item.close, wrap });
                }
                for item in named {
                    let wrap = Wrap::ParallelNamed { arity: item.arity };
                    out.push(SpawnWrap { open: item.open, close: item.close, wrap });
                }
                continue;
            }
            SpawnCallee::Method(name) => method_adopters(name, &draft.args),
        };
        for ((open, close, shape, called), adopter) in draft.args.iter().zip(adopters) {
            let (open, close, shape) = (*open, *close, *shape);
            let by_name = matches!(draft.callee, SpawnCallee::Method(_));
            if by_name && shape == ArgShape::Call && !called.as_deref().is_some_and(|name| makes_future(index, name)) {
                continue;
            }
            let wrap = match (adopter, shape) {
                (None, _) => None,
                // A closure written there keeps its form, so the callee still infers its parameters' types.
                (Some(Adopter::Closure), ArgShape::Closure { params: 0, body })
                | (Some(Adopter::RefClosure), ArgShape::Closure { params: 1, body }) => {
                    Some(Wrap::ClosureLiteral { body })
                }
                (Some(Adopter::Closure), ArgShape::Call | ArgShape::Other) => Some(Wrap::ClosureValue),
                (Some(Adopter::Future), ArgShape::Call | ArgShape::Other | ArgShape::AsyncBlock) => Some(Wrap::Future),
                // A closure by name taking a reference, or a form that does not fit: left alone.
                _ => None,
            };
            if let Some(wrap) = wrap.filter(|_| open < close) {
                out.push(SpawnWrap { open, close, wrap });
            }
        }
    }
    out
}

/// Whether `name` is the name of a workspace function (free, associated or a method).
fn names_workspace_function(index: &Index, name: &str) -> bool {
    index.free_by_name.contains_key(name) || index.methods_by_name.contains_key(name)
}

/// By name: the last argument, by its form. A closure written there is wrapped whatever its parameters (the
/// wrapped closure has the same signature); only a `spawn` is taken to be given a future.
fn method_adopters(name: &str, args: &[SpawnArg]) -> Vec<Option<Adopter>> {
    let Some(&(_, _, last, _)) = args.last() else { return Vec::new() };
    let adopter = match (name, last) {
        ("join", _) => None,
        (_, ArgShape::Closure { params: 0, .. }) => Some(Adopter::Closure),
        (_, ArgShape::Closure { params: 1, .. }) => Some(Adopter::RefClosure),
        ("spawn" | "spawn_local" | "spawn_ok", ArgShape::AsyncBlock | ArgShape::Call) => Some(Adopter::Future),
        _ => None,
    };
    let mut out = vec![None; args.len()];
    if let Some(slot) = out.last_mut() {
        *slot = adopter;
    }
    out
}

/// The known spawn function `path` names in scope `scope`, through the `use`s in scope.
fn known_path(index: &Index, scope: usize, path: &PathRef) -> Option<&'static [Adopter]> {
    let mut segs = path.segs.clone();
    if !path.leading_colon {
        // Follow imports of the first segment a few times (`use std::thread; use thread::spawn as go;`).
        for _ in 0..4 {
            let first = segs.first().cloned()?;
            let imported = index.uses_in_scope(scope).find_map(|u| match &u.kind {
                UseKind::Name(alias) if *alias == first => Some(u.path.segs.clone()),
                _ => None,
            });
            match imported {
                Some(full) => segs = full.into_iter().chain(segs.into_iter().skip(1)).collect(),
                None => break,
            }
        }
    }
    if let Some(known) = lookup(&segs) {
        return Some(known);
    }
    // A glob of a known module (`use std::thread::*;`, `use rayon::prelude::*` brings no functions).
    if segs.len() == 1 && !path.leading_colon {
        return index.uses_in_scope(scope).find_map(|u| match u.kind {
            UseKind::Glob => lookup(&u.path.segs.iter().chain(&segs).cloned().collect::<Vec<_>>()),
            UseKind::Name(_) => None,
        });
    }
    None
}

fn lookup(segs: &[String]) -> Option<&'static [Adopter]> {
    let mut segs: Vec<&str> = segs.iter().map(String::as_str).collect();
    match segs.first() {
        Some(&"core") => segs[0] = "std",
        Some(&"rayon_core") => segs[0] = "rayon",
        _ => {}
    }
    let full = segs.join("::");
    KNOWN_PATHS.iter().find(|(known, _)| *known == full).map(|(_, adopters)| *adopters)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn draft(code: &str) -> Option<SpawnDraft> {
        match syn::parse_str::<Expr>(code).unwrap() {
            Expr::Call(c) => path_draft(&c, 0),
            Expr::MethodCall(m) => method_draft(&m, 0),
            _ => None,
        }
    }

    #[test]
    fn drafts_give_each_argument_its_range_and_form() {
        let code = "rayon::join(|| a(), move || b())";
        let d = draft(code).unwrap();
        assert_eq!(
            d.callee,
            SpawnCallee::Path(PathRef { segs: vec!["rayon".into(), "join".into()], leading_colon: false })
        );
        let texts: Vec<&str> = d.args.iter().map(|&(s, e, ..)| &code[s..e]).collect();
        assert_eq!(texts, ["|| a()", "move || b()"]);
        assert!(draft("x.push(|| 1)").is_none());
        let m = draft("s.spawn(|s| work(s))").unwrap();
        assert_eq!(m.args[0].2, ArgShape::Closure { params: 1, body: 12 });
    }

    #[test]
    fn methods_are_wrapped_by_the_form_of_their_argument() {
        let shapes = |s| vec![(0, 1, s, None)];
        let closure = |params| ArgShape::Closure { params, body: 0 };
        assert_eq!(method_adopters("spawn", &shapes(closure(0))), [Some(Adopter::Closure)]);
        assert_eq!(method_adopters("spawn", &shapes(closure(1))), [Some(Adopter::RefClosure)]);
        assert_eq!(method_adopters("spawn", &shapes(ArgShape::Call)), [Some(Adopter::Future)]);
        assert_eq!(method_adopters("spawn", &shapes(ArgShape::Other)), [None]);
        assert_eq!(method_adopters("join", &shapes(closure(0))), [None]);
        assert_eq!(method_adopters("spawn_blocking", &shapes(ArgShape::Call)), [None]);
        assert_eq!(method_adopters("install", &shapes(closure(0))), [Some(Adopter::Closure)]);
    }

    #[test]
    fn parallel_chains_are_found_from_the_call_that_consumes_them() {
        let chain = |code: &str| match syn::parse_str::<Expr>(code).unwrap() {
            Expr::MethodCall(m) => parallel_chain(&m, 0),
            _ => None,
        };
        let code = "v.par_iter().zip(w.par_iter().map(|x| f(x))).filter(|p| g(p)).map(h).sum::<u64>()";
        let (draft, starts) = chain(code).unwrap();
        let SpawnCallee::ParallelChain { start, end, items, named, by_name } = draft.callee else {
            panic!("{draft:?}")
        };
        assert_eq!((start, end, by_name, starts.len()), (0, code.len(), 0, 2));
        let named: Vec<(&str, usize)> = named.iter().map(|n| (&code[n.open..n.close], n.arity)).collect();
        assert_eq!(named, [("h", 1)]);
        let texts: Vec<&str> = items.iter().map(|item| &code[item.open..item.close]).collect();
        assert_eq!(texts, ["|p| g(p)", "|x| f(x)"]);
        assert!(items.iter().all(|item| !item.typed && code[item.body..].starts_with(['f', 'g'])));
        let typed = "v.into_par_iter().map(|x| -> u64 { f(x) }).reduce(|| 0, |a, b| a + b)";
        let (draft, _) = chain(typed).unwrap();
        let SpawnCallee::ParallelChain { items, .. } = draft.callee else { panic!("{draft:?}") };
        assert_eq!(items.iter().map(|item| item.typed).collect::<Vec<_>>(), [false, false, true]);
        assert!(chain("v.par_sort_by(|a, b| a.cmp(b))").is_some(), "a sort consumes its own iterator");
        // Functions by name: each argument's arity from the method; a value or an unknown method's is not wrapped.
        let named = |code: &str| match chain(code).unwrap().0.callee {
            SpawnCallee::ParallelChain { named, by_name, .. } => {
                (named.iter().map(|n| (code[n.open..n.close].to_owned(), n.arity)).collect::<Vec<_>>(), by_name)
            }
            other => panic!("{other:?}"),
        };
        let owned = |pairs: &[(&str, usize)]| pairs.iter().map(|&(t, a)| (t.to_owned(), a)).collect::<Vec<_>>();
        assert_eq!(
            named("v.par_lines().fold(HashMap::new, count).reduce(HashMap::new, Self::merge)"),
            (owned(&[("HashMap::new", 0), ("Self::merge", 2), ("HashMap::new", 0), ("count", 2)]), 0)
        );
        assert_eq!(
            named("v.par_iter().map_with(sender, send).for_each(drop)"),
            (owned(&[("drop", 1), ("send", 2)]), 0)
        );
        assert_eq!(named("v.par_iter().weird(f).count()"), (Vec::new(), 1));
        // Not consumed where it starts (returned, stored), no parallel iterator, or consumed by an earlier call.
        assert!(chain("v.par_iter().map(|x| f(x))").is_none());
        assert!(chain("v.iter().map(|x| f(x)).sum::<u64>()").is_none());
        assert!(chain("v.par_iter().map(|x| f(x)).collect::<Vec<_>>().iter().max()").is_none());
    }

    #[test]
    fn known_paths_accept_core_and_rayon_core_spellings() {
        let segs = |p: &str| p.split("::").map(String::from).collect::<Vec<_>>();
        assert!(lookup(&segs("std::thread::spawn")).is_some());
        assert!(lookup(&segs("rayon_core::join")).is_some());
        assert!(lookup(&segs("std::thread::scope")).is_none(), "a scope's body runs on the calling thread");
    }
}
