//! Which functions cost less than their probe would (left out unless `--probe-trivial`).

use std::collections::{HashMap, HashSet};

use super::index::{FnId, ImplId, Index, Owner, SelfRes, TypeId, TypeRes};
use super::std_model::{
    is_cheap_std_method, CHEAP_STD_FNS, EMPTY_COLLECTIONS, FORWARDER_MAX_STATEMENTS, POINTER_METHODS, PRIMITIVES,
    RANGE_RECEIVER, RAW_POINTER, TRIVIAL_MAX_STATEMENTS,
};
use super::syntax::{CallKind, Receiver, TyRef};
use crate::plan::ProbeKind;

/// Which functions cost less than their probe would: like profilers that leave getters and setters alone, a
/// function whose body runs straight through (no loop, closure or `.await`; see `straight_line_stmts`), has at
/// most a few statements, and calls only other trivial functions and constant-time std accessors.
#[derive(Default)]
pub(super) struct Trivial {
    /// The statements counted for each function judged so far; `None`: not trivial.
    memo: HashMap<FnId, Option<u32>>,
    /// Functions being judged (a recursive call is never trivial).
    active: HashSet<FnId>,
}

impl Trivial {
    pub(super) fn cost(&mut self, index: &Index, f: FnId) -> Option<u32> {
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
        let (mut total, sites) = straight_body(index, f, false)?;
        for site in sites {
            if site.targets.is_empty() {
                if !site.cheap_external {
                    return None;
                }
                continue;
            }
            if !site.receiver_known && !site.cheap_external {
                return None;
            }
            let mut most = 0;
            for t in site.targets {
                most = most.max(self.cost(index, t)?);
            }
            total += most;
        }
        (total <= TRIVIAL_MAX_STATEMENTS).then_some(total)
    }
}

/// What a straight-line body's call site may reach.
struct SiteTargets {
    /// The workspace functions it may call (test-only ones and compiled-out `#[cfg]` variants left out).
    targets: Vec<FnId>,
    /// It may be a constant-time std call.
    cheap_external: bool,
    /// Its receiver's type is known, so it cannot leave the workspace for code the index does not see.
    receiver_known: bool,
    /// Its targets are a guess (by name and arity, every `From` impl for `.into()`): the call may reach code the
    /// index does not see (an impl a macro generates).
    guessed: bool,
    /// The calls inside the closures written as its arguments (`CallSite::arg_calls`): they run where it calls them.
    closure_calls: Vec<usize>,
}

/// For a synchronous straight-line body (`FnItem::straight_line_stmts`; with `forwarding`, closures written as call
/// arguments allowed: `FnItem::forwarding_stmts`) whose by-value parameters drop nothing: its statement count and
/// what each call site may reach.
fn straight_body(index: &Index, f: FnId, forwarding: bool) -> Option<(u32, Vec<SiteTargets>)> {
    let item = &index.fns[f].item;
    if !matches!(item.probe.as_ref()?.kind, ProbeKind::Sync) {
        return None;
    }
    let stmts = if forwarding { item.forwarding_stmts? } else { item.straight_line_stmts? };
    if !item.straight_line_macros.iter().all(|m| index.straight_macros.contains(m)) {
        return None;
    }
    // A parameter taken by value is dropped at the end unless moved on: that may free memory.
    for ty in &item.value_params {
        let copy = match ty.as_str() {
            "Self" => match index.fns[f].owner {
                Owner::Impl(imp) => impl_self_drops_nothing(index, imp),
                _ => false,
            },
            name => {
                index
                    .types_by_name
                    .get(name)
                    .is_some_and(|ts| !ts.is_empty() && ts.iter().all(|&t| drops_nothing(index, t)))
                    || generic_drops_nothing(index, f, name)
            }
        };
        if !copy {
            return None;
        }
    }
    let resolved = index.resolve_calls(f);
    let blanket_method =
        matches!(index.fns[f].owner, Owner::Impl(imp) if matches!(index.impls[imp].self_res, SelfRes::Blanket));
    // `(*self).as_char()` in `impl AsChar for &u8` reaches the impl for `u8`: a method of an impl on a reference
    // does not call itself through its receiver's target.
    let reference_method =
        matches!(index.fns[f].owner, Owner::Impl(imp) if index.impls[imp].self_ty_text.starts_with('&'));
    let mut sites = Vec::with_capacity(item.calls.len());
    for (i, (site, targets)) in item.calls.iter().zip(&resolved.by_call).enumerate() {
        let guessed = resolved.notes.iter().any(|(call, _)| *call == i);
        let mut targets: Vec<FnId> = targets
            .iter()
            .copied()
            .filter(|&t| !index.fns[t].item.test_only)
            // `R::peek(self)` in `impl<R: Read> Read for &mut R` reaches this method again only for another type
            // (`&mut &mut R`), one forward deeper: not a recursion that loops.
            .filter(|&t| !((blanket_method || reference_method) && t == f))
            .collect();
        // `#[cfg]` variants that are not compiled cost nothing, unless none is (then the call is as unknown as
        // before).
        if targets.iter().any(|&t| !index.fns[t].compiled_out()) {
            targets.retain(|&t| !index.fns[t].compiled_out());
        }
        let cheap_external = match &site.kind {
            CallKind::Method { name, args, receiver } => {
                is_cheap_std_method(name)
                    || (name == "contains" && site.text.starts_with(&format!("{RANGE_RECEIVER}.")))
                    || CHEAP_STD_FNS.iter().any(|(n, a)| n == name && args.is_some_and(|x| x + 1 == *a))
                    || (POINTER_METHODS.contains(&name.as_str()) && may_be_a_raw_pointer(index, f, receiver))
            }
            CallKind::Qualified { name, .. } => is_cheap_std_method(name),
            CallKind::Into { .. } => is_cheap_std_method("into"),
            CallKind::Path { path, args, called } => {
                *called
                    && (path.segs.last().is_some_and(|l| CHEAP_STD_FNS.contains(&(l.as_str(), *args)))
                        || (*args == 0 && empty_collection_new(index, &path.segs)))
            }
            // `x[i]` on a std collection.
            CallKind::Operator { .. } => true,
        };
        // The call may also leave the workspace when its receiver's type is not known.
        let receiver_known = match &site.kind {
            // A call's result (`make().go()`) may still have been matched by name.
            CallKind::Method { receiver, .. } | CallKind::Into { receiver, .. } => match receiver {
                Receiver::Type(ty) => !ty.is_derived(),
                Receiver::SelfField(_) => true,
                _ => false,
            },
            _ => true,
        };
        sites.push(SiteTargets {
            targets,
            cheap_external,
            receiver_known,
            guessed,
            closure_calls: site.arg_calls.iter().map(|&c| c as usize).collect(),
        });
    }
    Some((stmts, sites))
}

/// The callees of a forwarder: a straight-line body of at most [`FORWARDER_MAX_STATEMENTS`] statements whose only
/// call into the workspace is one call of known receiver and resolved targets (`self.read.peek()`,
/// `R::discard(self)`, `self.inner.get(k)`; not a guess by name), every other call a constant-time std one. Its
/// probe would time the callee plus a few instructions, so when each candidate callee is measured by a probe of its
/// own or costs less than one (the planner's decision, [`super::planner`]), the forwarder needs none. Closures
/// written as that call's arguments (nom's `multispace0(input) { input.split_at_position_complete(|c| ..) }`) run
/// where the callee calls them, so their calls do not count; a closure given to any other call keeps the body from
/// being a forwarder unless its calls are constant-time std ones. `None` for any other body.
pub(super) fn forwarded_callees(index: &Index, f: FnId) -> Option<Vec<FnId>> {
    let (stmts, sites) = straight_body(index, f, true)?;
    if stmts > FORWARDER_MAX_STATEMENTS {
        return None;
    }
    // The forwarded call: the one call into the workspace that every other such call is inside the closures of.
    let into_workspace: Vec<usize> = (0..sites.len()).filter(|&i| !sites[i].targets.is_empty()).collect();
    let forwarded = *into_workspace
        .iter()
        .find(|&&i| into_workspace.iter().all(|&j| j == i || sites[i].closure_calls.contains(&j)))?;
    let site = &sites[forwarded];
    if !site.receiver_known || site.guessed {
        return None;
    }
    for (i, other) in sites.iter().enumerate() {
        if i != forwarded && !site.closure_calls.contains(&i) && !other.cheap_external {
            return None;
        }
    }
    Some(site.targets.clone())
}

/// `Vec::new()`, `MapImpl::default()` with `type MapImpl<K, V> = BTreeMap<K, V>`: an empty std collection
/// ([`EMPTY_COLLECTIONS`]), named directly or through a workspace alias. Only reached for calls that resolve to no
/// workspace function, so a workspace type of the same name never counts.
fn empty_collection_new(index: &Index, segs: &[String]) -> bool {
    let [.., ty, new] = segs else { return false };
    if new != "new" && new != "default" {
        return false;
    }
    if EMPTY_COLLECTIONS.contains(&ty.as_str()) {
        return true;
    }
    index.types_by_name.get(ty.as_str()).is_some_and(|ts| {
        !ts.is_empty()
            && ts.iter().all(|&t| match &index.types[t].alias {
                Some(TyRef::Path(p)) => p.segs.last().is_some_and(|l| EMPTY_COLLECTIONS.contains(&l.as_str())),
                _ => false,
            })
    })
}

/// Whether dropping the self type of impl `imp` runs no code: a workspace type that drops nothing, a primitive
/// (`impl AsChar for char`) or a reference (`impl AsChar for &u8`).
fn impl_self_drops_nothing(index: &Index, imp: ImplId) -> bool {
    let def = &index.impls[imp];
    match &def.self_res {
        SelfRes::Local(t) => drops_nothing(index, *t),
        SelfRes::Foreign(name) => def.self_ty_text.starts_with('&') || PRIMITIVES.contains(&name.as_str()),
        SelfRes::Blanket => false,
    }
}

/// Whether the generic parameter `name` of `f` (`token: C` with `C: AsChar`) can only be a type that drops nothing:
/// one of its bounds is a workspace trait whose every impl is on such a type (none a blanket impl). A type outside
/// the workspace implementing the trait (a crate depending on it) is not seen.
fn generic_drops_nothing(index: &Index, f: FnId, name: &str) -> bool {
    let def = &index.fns[f];
    let Some((_, bounds)) = def.item.generics.iter().rev().find(|(n, _)| n == name) else { return false };
    bounds.iter().any(|b| match index.resolve_type_path(def.module, &b.segs, b.leading_colon) {
        Some(TypeRes::Trait(tr)) => {
            let impls = &index.traits[tr].impls;
            !impls.is_empty() && impls.iter().all(|&imp| impl_self_drops_nothing(index, imp))
        }
        _ => false,
    })
}

/// Whether dropping a value of the workspace type `t` runs no code: it derives `Copy`, or it has no fields (a unit
/// struct, an enum of unit variants) and no `Drop` impl.
fn drops_nothing(index: &Index, t: TypeId) -> bool {
    let def = &index.types[t];
    def.is_copy
        || (def.alias.is_none()
            && def.fields.is_empty()
            && !def
                .impls
                .iter()
                .any(|&i| index.impls[i].trait_path.as_ref().and_then(|p| p.segs.last()).is_some_and(|n| n == "Drop")))
}

/// Whether a method's receiver may be a raw pointer (for [`POINTER_METHODS`]): a raw pointer field of `Self`, a value
/// declared as one, or a value whose type the syntax does not show (`let p = v.as_ptr();`). Not a named type.
fn may_be_a_raw_pointer(index: &Index, f: FnId, receiver: &Receiver) -> bool {
    let is_pointer = |ty: &TyRef| matches!(ty, TyRef::Std(name) if *name == RAW_POINTER);
    match receiver {
        Receiver::Unknown => true,
        Receiver::Type(ty) => is_pointer(ty),
        Receiver::SelfField(field) => match index.fns[f].owner {
            Owner::Impl(imp) => match index.impls[imp].self_res {
                SelfRes::Local(t) => index.types[t].fields.get(field).is_some_and(is_pointer),
                _ => false,
            },
            _ => false,
        },
        Receiver::Std(_) | Receiver::Guessed(_) => false,
    }
}
