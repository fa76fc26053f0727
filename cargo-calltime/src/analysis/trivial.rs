//! Which functions cost less than their probe would (left out unless `--probe-trivial`).

use std::collections::{HashMap, HashSet};

use super::index::{FnId, Index, Owner, SelfRes};
use super::std_model::{
    is_cheap_std_method, CHEAP_STD_FNS, POINTER_METHODS, RANGE_RECEIVER, RAW_POINTER, TRIVIAL_MAX_STATEMENTS,
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
        let item = &index.fns[f].item;
        if !matches!(item.probe.as_ref()?.kind, ProbeKind::Sync) {
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
                CallKind::Method { name, args, receiver } => {
                    is_cheap_std_method(name)
                        || (name == "contains" && site.text.starts_with(&format!("{RANGE_RECEIVER}.")))
                        || CHEAP_STD_FNS.iter().any(|(n, a)| n == name && args.is_some_and(|x| x + 1 == *a))
                        || (POINTER_METHODS.contains(&name.as_str()) && may_be_a_raw_pointer(index, f, receiver))
                }
                CallKind::Qualified { name, .. } => is_cheap_std_method(name),
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
                // A call's result (`make().go()`) may still have been matched by name.
                CallKind::Method { receiver, .. } => match receiver {
                    Receiver::Type(ty) => !ty.is_derived(),
                    Receiver::SelfField(_) => true,
                    _ => false,
                },
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
