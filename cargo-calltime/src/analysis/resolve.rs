//! Call resolution: which workspace functions a call site may reach.
//!
//! Precise where syntax tells (paths, `Self::`, receivers of known type); trait calls go to every workspace impl plus
//! the default body; a method call on a receiver of unknown type goes to every workspace method of that name and
//! arity, up to [`FAN_OUT_CAP`] candidates, and is reported.

use super::index::{CrateId, FnId, ImplDef, ImplId, Index, ModId, Owner, SelfRes, TraitId, TypeId, TypeRes};
use super::std_model::{
    DERIVED_METHODS, GUARDS, INTEGERS, ITERATOR_METHODS, PRELUDE_FNS, SLICE, SMART_POINTERS, STD_TYPES,
};
use super::syntax::{CallKind, CallSite, PathRef, Receiver, TyRef};

/// Most candidates a call resolved by name and arity may fan out to; beyond it the call is reported, not followed.
pub const FAN_OUT_CAP: usize = 8;

/// Outgoing edges of one function and the notes on its call sites.
#[derive(Debug, Default, Clone)]
pub struct Resolved {
    pub callees: Vec<FnId>,
    /// (index into the function's calls, note)
    pub notes: Vec<(usize, String)>,
    /// What each call site resolved to, by index into the function's calls.
    pub by_call: Vec<Vec<FnId>>,
}

enum Outcome {
    Fns(Vec<FnId>),
    /// Leaves the workspace (std, a dependency, a derived or foreign trait method).
    External,
    /// Not found; `Some(module)` when the path led into a workspace module that lacks the name.
    Missing(Option<ModId>),
    /// The type is not in scope; these are the associated functions of workspace types with its name.
    ByTypeName(Vec<FnId>),
    /// A workspace type without a method of that name: derived, reached through Deref, or made by a macro.
    MissingOnType(TypeId),
}

mod returns;

/// What a function body's paths resolve against.
#[derive(Clone, Copy)]
struct Ctx<'a> {
    /// The caller's crate: guesses by name stay within what it can name.
    krate: CrateId,
    scope: ModId,
    owner: Owner,
    generics: &'a [(String, Vec<PathRef>)],
}

impl Index {
    /// Resolves every call site of `f`.
    pub fn resolve_calls(&self, f: FnId) -> Resolved {
        let def = &self.fns[f];
        let ctx = Ctx { krate: def.krate, scope: def.scope, owner: def.owner, generics: &def.item.generics };
        let mut out = Resolved::default();
        for (i, call) in def.item.calls.iter().enumerate() {
            let before = out.callees.len();
            if let Some(note) = self.resolve_call(&ctx, call, &mut out.callees) {
                out.notes.push((i, note));
            }
            // Keep the order stable and free of repeats within one call.
            let mut seen = std::collections::HashSet::new();
            let tail: Vec<FnId> = out.callees.drain(before..).filter(|c| seen.insert(*c)).collect();
            out.by_call.push(tail.clone());
            out.callees.extend(tail);
        }
        out.callees.sort_unstable();
        out.callees.dedup();
        out
    }

    fn resolve_call(&self, ctx: &Ctx, call: &CallSite, out: &mut Vec<FnId>) -> Option<String> {
        match &call.kind {
            CallKind::Path { path, args, called } => match self.value_path(ctx, path) {
                Outcome::Fns(fns) => {
                    out.extend(fns);
                    None
                }
                Outcome::External => None,
                Outcome::MissingOnType(t) => called.then(|| {
                    format!(
                        "unresolved: no function `{}` on `{}` in the workspace (made by a derive or another macro?)",
                        path.segs.last().map(String::as_str).unwrap_or_default(),
                        self.types[t].name
                    )
                }),
                Outcome::ByTypeName(fns) => {
                    if !called {
                        return None;
                    }
                    let n = fns.len();
                    out.extend(fns);
                    Some(format!("over-approximated: type not in scope, {n} candidates by type name"))
                }
                Outcome::Missing(module) => {
                    if !called {
                        return None;
                    }
                    let name = path.segs.last()?;
                    let candidates: Vec<FnId> = self
                        .free_by_name
                        .get(name)
                        .map(|v| {
                            v.iter()
                                .copied()
                                .filter(|&f| self.fns[f].item.arity == *args && self.guess_allowed(ctx.krate, f))
                                .collect()
                        })
                        .unwrap_or_default();
                    if candidates.is_empty() {
                        // `drop` is the prelude's only free function; anything else missing was probably made by a
                        // macro or imported by a glob from outside the workspace.
                        if module.is_none() && (path.segs.len() > 1 || PRELUDE_FNS.contains(&name.as_str())) {
                            return None;
                        }
                        return Some("unresolved: not found (generated by a macro, or a glob import from outside the workspace?)".to_owned());
                    }
                    self.fan_out(candidates, out)
                }
            },
            CallKind::Qualified { self_ty, trait_path, name } => {
                let fns = self.qualified(ctx, self_ty, trait_path.as_ref(), name);
                out.extend(fns);
                None
            }
            CallKind::Method { name, args, receiver } if name == "into" && *args == Some(0) => {
                self.resolve_into(ctx, receiver, None, None, out)
            }
            CallKind::Into { receiver, source, target } => {
                self.resolve_into(ctx, receiver, source.as_deref(), target.as_ref(), out)
            }
            CallKind::Method { name, args, receiver } => self.method_call(ctx, name, *args, receiver, out),
            CallKind::Operator { trait_name, methods, receiver } => {
                let typed = match receiver {
                    Receiver::Type(ty) | Receiver::Guessed(ty) => Some((ty.clone(), ctx.scope)),
                    Receiver::SelfField(field) => self.self_field_type(ctx, field),
                    _ => None,
                };
                if let Some((ty, scope)) = typed {
                    if let Some(t) = self.local_type(ctx, &ty, scope) {
                        out.extend(self.trait_impl_methods(t, trait_name, methods));
                        out.extend(self.trait_impl_methods(t, &format!("{trait_name}Mut"), methods));
                    }
                }
                None
            }
        }
    }

    /// Whether a function guessed by name could be what code in `caller` calls: it is in a crate `caller` can name
    /// (itself or a dependency), or it implements a trait `caller` can name (a foreign trait, or one of those
    /// crates'), since a downstream crate's impl can come back through a trait object or a generic.
    fn guess_allowed(&self, caller: CrateId, f: FnId) -> bool {
        let def = &self.fns[f];
        if self.crates[caller].visible.contains(&def.krate) {
            return true;
        }
        match def.owner {
            Owner::Impl(i) => match self.impls[i].trait_res {
                Some(TypeRes::Trait(tr)) => {
                    let trait_crate = self.modules[self.traits[tr].module].krate;
                    self.crates[caller].visible.contains(&trait_crate)
                }
                Some(_) => true,
                None => false,
            },
            _ => false,
        }
    }

    fn fan_out(&self, candidates: Vec<FnId>, out: &mut Vec<FnId>) -> Option<String> {
        let n = candidates.len();
        let noun = if n == 1 { "candidate" } else { "candidates" };
        if n > FAN_OUT_CAP {
            return Some(format!("unresolved: {n} {noun} by name and arity (more than {FAN_OUT_CAP})"));
        }
        out.extend(candidates);
        Some(format!("over-approximated: {n} {noun} by name and arity"))
    }

    fn generic_bounds<'a>(&self, ctx: &'a Ctx, name: &str) -> Option<&'a Vec<PathRef>> {
        ctx.generics.iter().find(|(n, _)| n == name).map(|(_, b)| b)
    }

    fn value_path(&self, ctx: &Ctx, path: &PathRef) -> Outcome {
        let Some((last, prefix)) = path.segs.split_last() else { return Outcome::External };
        if prefix.is_empty() {
            if path.leading_colon {
                return Outcome::External;
            }
            return match self.scope_lookup_values(ctx.scope, last) {
                Some(fns) if !fns.is_empty() => Outcome::Fns(fns.clone()),
                // `use dependency::function;` binds the name to something outside the workspace.
                _ if self.scope_lookup_type(ctx.scope, last) == Some(TypeRes::External) => Outcome::External,
                _ if self.sees_external_glob(ctx.scope) => Outcome::External,
                _ => Outcome::Missing(None),
            };
        }
        if prefix.len() == 1 && prefix[0] == "Self" {
            return self.self_assoc(ctx, last);
        }
        if prefix.len() == 1 {
            if let Some(bounds) = self.generic_bounds(ctx, &prefix[0]) {
                return self.bounds_dispatch(ctx.scope, bounds, last);
            }
        }
        match self.resolve_type_path(ctx.scope, prefix, path.leading_colon) {
            Some(TypeRes::Module(pm)) => {
                let module = &self.modules[pm];
                match module.values.get(last).or_else(|| module.glob_values.get(last)) {
                    Some(fns) if !fns.is_empty() => Outcome::Fns(fns.clone()),
                    _ => Outcome::Missing(Some(pm)),
                }
            }
            // Nothing found on a workspace type or trait: a derived or foreign trait's function. A std derive's
            // leaves the workspace; another name was made by a macro the analysis does not expand (pest_derive's
            // `JsonParser::parse`): a call it cannot follow, noted.
            Some(TypeRes::Type(t)) => match self.assoc_fns(t, last, false) {
                fns if !fns.is_empty() => Outcome::Fns(fns),
                _ if DERIVED_METHODS.contains(&last.as_str()) => Outcome::External,
                _ => Outcome::MissingOnType(t),
            },
            Some(TypeRes::Trait(tr)) => ext(self.trait_dispatch(tr, last)),
            // `dependency::f(..)` or `ForeignType::f(..)`: outside the workspace unless a workspace impl adds it; never
            // a workspace function of the same name (`fn unescape(..) { unescape::unescape(..) }` is no recursion).
            Some(TypeRes::External) => ext(self.foreign_assoc(&prefix[prefix.len() - 1], last)),
            None => {
                let ty_name = &prefix[prefix.len() - 1];
                if ty_name.starts_with(|c: char| c.is_ascii_uppercase()) || STD_TYPES.contains(&ty_name.as_str()) {
                    let foreign = self.foreign_assoc(ty_name, last);
                    if !foreign.is_empty() {
                        return Outcome::Fns(foreign);
                    }
                    // A type the resolver could not see (imported by a macro, say): workspace types of that name.
                    let by_type_name: Vec<FnId> = self
                        .types_by_name
                        .get(ty_name.as_str())
                        .into_iter()
                        .flatten()
                        .flat_map(|&t| self.assoc_fns(t, last, false))
                        .filter(|&f| self.guess_allowed(ctx.krate, f))
                        .collect();
                    if by_type_name.is_empty() {
                        Outcome::External
                    } else {
                        Outcome::ByTypeName(by_type_name)
                    }
                } else {
                    Outcome::Missing(None)
                }
            }
        }
    }

    /// `Self::name` inside an impl or a trait.
    fn self_assoc(&self, ctx: &Ctx, name: &str) -> Outcome {
        match ctx.owner {
            Owner::Impl(i) => {
                let imp = &self.impls[i];
                let mut fns = match &imp.self_res {
                    SelfRes::Local(t) => self.assoc_fns(*t, name, false),
                    SelfRes::Foreign(n) => self.foreign_assoc(n, name),
                    SelfRes::Blanket => imp.methods.get(name).cloned().unwrap_or_default(),
                };
                if fns.is_empty() {
                    if let Some(TypeRes::Trait(tr)) = imp.trait_res {
                        fns = self.trait_dispatch(tr, name);
                    }
                }
                non_empty(fns)
            }
            Owner::Trait(tr) => non_empty(self.trait_dispatch(tr, name)),
            Owner::Free => Outcome::External,
        }
    }

    /// Associated functions named `name` of a workspace type: inherent ones first, else those of its trait impls
    /// (with the traits' default bodies where an impl does not override).
    pub fn assoc_fns(&self, t: TypeId, name: &str, methods_only: bool) -> Vec<FnId> {
        let t = self.follow_alias(t);
        let keep = |f: &FnId| !methods_only || self.fns[*f].item.has_self;
        let impls = &self.types[t].impls;
        let inherent: Vec<FnId> = impls
            .iter()
            .filter(|&&i| self.impls[i].trait_path.is_none())
            .filter_map(|&i| self.impls[i].methods.get(name))
            .flatten()
            .copied()
            .filter(keep)
            .collect();
        if !inherent.is_empty() {
            return inherent;
        }
        let mut out = Vec::new();
        // Traits the type implements itself with this method: a blanket impl of the same trait covers other types
        // (`impl<R: Read> Read for &mut R`, as coherence requires), whose method a call on this type never reaches.
        let mut own_traits: Vec<TypeRes> = Vec::new();
        for &i in impls.iter().chain(self.blanket_impls.iter()) {
            let imp = &self.impls[i];
            if imp.trait_path.is_none() {
                continue;
            }
            let blanket = matches!(imp.self_res, SelfRes::Blanket);
            if blanket && imp.trait_res.as_ref().is_some_and(|tr| own_traits.contains(tr)) {
                continue;
            }
            let before = out.len();
            match imp.methods.get(name) {
                Some(fns) => out.extend(fns.iter().copied().filter(keep)),
                None => {
                    if let Some(TypeRes::Trait(tr)) = imp.trait_res {
                        out.extend(self.trait_default(tr, name).into_iter().filter(keep));
                    }
                }
            }
            if !blanket && out.len() > before {
                if let Some(tr @ TypeRes::Trait(_)) = imp.trait_res {
                    own_traits.push(tr);
                }
            }
        }
        out
    }

    /// The default body of `name` in `tr` or its supertraits.
    fn trait_default(&self, tr: TraitId, name: &str) -> Vec<FnId> {
        let mut seen = vec![tr];
        let mut stack = vec![tr];
        while let Some(t) = stack.pop() {
            if let Some(d) = self.traits[t].defaults.get(name) {
                return d.clone();
            }
            for &s in &self.traits[t].supertraits {
                if !seen.contains(&s) {
                    seen.push(s);
                    stack.push(s);
                }
            }
        }
        Vec::new()
    }

    /// A call through a trait (`Trait::m`, `dyn Trait`, `T: Trait`): every workspace impl's `m` plus the default
    /// body, looked up in the trait that declares `m` (the trait itself or a supertrait).
    pub fn trait_dispatch(&self, tr: TraitId, name: &str) -> Vec<FnId> {
        let mut seen = vec![tr];
        let mut stack = vec![tr];
        let mut out = Vec::new();
        while let Some(t) = stack.pop() {
            let def = &self.traits[t];
            if def.method_names.contains(name) {
                for &i in &def.impls {
                    if let Some(fns) = self.impls[i].methods.get(name) {
                        out.extend(fns.iter().copied());
                    }
                }
                if let Some(d) = def.defaults.get(name) {
                    out.extend(d.iter().copied());
                }
                continue;
            }
            for &s in &def.supertraits {
                if !seen.contains(&s) {
                    seen.push(s);
                    stack.push(s);
                }
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    fn bounds_dispatch(&self, scope: ModId, bounds: &[PathRef], name: &str) -> Outcome {
        let mut fns = Vec::new();
        for b in bounds {
            match self.resolve_type_path(scope, &b.segs, b.leading_colon) {
                Some(TypeRes::Trait(tr)) => fns.extend(self.trait_dispatch(tr, name)),
                // A foreign trait (`I: Iterator`): the workspace impls of a trait of that name.
                _ => {
                    let trait_name = b.segs.last().map(String::as_str).unwrap_or("");
                    for imp in &self.impls {
                        let same = imp.trait_path.as_ref().and_then(|p| p.segs.last()).is_some_and(|n| n == trait_name);
                        if same && !matches!(imp.trait_res, Some(TypeRes::Trait(_))) {
                            fns.extend(imp.methods.get(name).into_iter().flatten().copied());
                        }
                    }
                }
            }
        }
        non_empty(fns)
    }

    /// Methods workspace impls add to a type outside the workspace (`impl MyTrait for Vec<u8>`), and blanket impls.
    fn foreign_assoc(&self, ty_name: &str, name: &str) -> Vec<FnId> {
        let mut out = self.foreign_type_methods(ty_name, name);
        out.extend(self.impl_methods(&self.blanket_impls, name));
        out
    }

    /// Methods named `name` of the workspace impls on the std or foreign type `ty_name` (by its last path segment;
    /// a variant constructor stands for its enum), with the traits' default bodies where an impl does not override.
    fn foreign_type_methods(&self, ty_name: &str, name: &str) -> Vec<FnId> {
        let ty_name = match ty_name {
            "Some" | "None" => "Option",
            "Ok" | "Err" => "Result",
            SLICE => {
                // Impls are keyed by the self type's text: `[u8]`, `[T]`, `[u8; 4]`.
                let mut fns: Vec<FnId> = self
                    .foreign_impls
                    .iter()
                    .filter(|(key, _)| key.starts_with('['))
                    .flat_map(|(_, impls)| self.impl_methods(impls, name))
                    .collect();
                fns.sort_unstable();
                fns.dedup();
                return fns;
            }
            other => other,
        };
        self.foreign_impls.get(ty_name).map(|impls| self.impl_methods(impls, name)).unwrap_or_default()
    }

    /// A method call on a std value (a literal, `vec![..]`, `format!(..)`, a std adaptor's result): the workspace
    /// impls on that std type, or, when the syntax does not tell which std type, on any std type (reported).
    fn std_value_call(&self, ctx: &Ctx, name: &str, ty_name: &str, out: &mut Vec<FnId>) -> Option<String> {
        out.extend(self.impl_methods(&self.blanket_impls, name));
        let (types, known): (Vec<&str>, bool) = match ty_name {
            "{integer}" => (INTEGERS.to_vec(), false),
            "{float}" => (vec!["f32", "f64"], false),
            "" => (self.foreign_impls.keys().map(String::as_str).collect(), false),
            one => (vec![one], true),
        };
        let mut fns: Vec<FnId> = types
            .iter()
            .flat_map(|t| self.foreign_type_methods(t, name))
            .filter(|&f| !self.fns[f].item.test_only && self.guess_allowed(ctx.krate, f))
            .collect();
        fns.sort_unstable();
        fns.dedup();
        if fns.is_empty() || known {
            out.extend(fns);
            return None;
        }
        let n = fns.len();
        out.extend(fns);
        let noun = if n == 1 { "candidate" } else { "candidates" };
        Some(format!("over-approximated: a std value of unknown type, {n} {noun} in workspace impls on std types"))
    }

    fn impl_methods(&self, impls: &[usize], name: &str) -> Vec<FnId> {
        let mut out = Vec::new();
        for &i in impls {
            let imp = &self.impls[i];
            match imp.methods.get(name) {
                Some(fns) => out.extend(fns.iter().copied()),
                None => {
                    if let Some(TypeRes::Trait(tr)) = imp.trait_res {
                        out.extend(self.trait_default(tr, name));
                    }
                }
            }
        }
        out
    }

    fn qualified(&self, ctx: &Ctx, self_ty: &TyRef, trait_path: Option<&PathRef>, name: &str) -> Vec<FnId> {
        let self_type = self.local_type(ctx, self_ty, ctx.scope);
        let trait_res = trait_path.and_then(|p| self.resolve_type_path(ctx.scope, &p.segs, p.leading_colon));
        match (trait_res, self_type) {
            (Some(TypeRes::Trait(tr)), Some(t)) => {
                let t = self.follow_alias(t);
                for &i in &self.types[t].impls {
                    if self.impls[i].trait_res == Some(TypeRes::Trait(tr)) {
                        if let Some(fns) = self.impls[i].methods.get(name) {
                            return fns.clone();
                        }
                        return self.trait_default(tr, name);
                    }
                }
                self.trait_dispatch(tr, name)
            }
            (Some(TypeRes::Trait(tr)), None) => self.trait_dispatch(tr, name),
            (_, Some(t)) => self.assoc_fns(t, name, false),
            _ => Vec::new(),
        }
    }

    /// The workspace type a receiver evidently has, with the scope its declared type resolves in.
    fn method_call(
        &self,
        ctx: &Ctx,
        name: &str,
        args: Option<usize>,
        receiver: &Receiver,
        out: &mut Vec<FnId>,
    ) -> Option<String> {
        let typed = match receiver {
            // A call's result: typed by what the call resolves to, else as unknown as before it was looked at.
            Receiver::Type(ty) | Receiver::Guessed(ty) if ty.is_derived() => {
                self.reduce(*ctx, ty, ctx.scope, 0).map(|t| (t.ty, t.scope, t.ctx))
            }
            Receiver::Type(ty) | Receiver::Guessed(ty) => Some((ty.clone(), ctx.scope, *ctx)),
            Receiver::SelfField(field) => self.self_field_type(ctx, field).map(|(ty, scope)| (ty, scope, *ctx)),
            Receiver::Std(ty_name) => return self.std_value_call(ctx, name, ty_name, out),
            Receiver::Unknown => None,
        };
        let mut missing_on = None;
        if let Some((ty, scope, type_ctx)) = typed {
            match self.method_on(&type_ctx, &ty, scope, name) {
                Outcome::Fns(fns) | Outcome::ByTypeName(fns) => {
                    out.extend(fns);
                    return None;
                }
                Outcome::External => return None,
                // Before the derived-method arm: `to_string` is in that list too, and would hide this edge.
                Outcome::MissingOnType(t)
                    if name == "to_string"
                        && args == Some(0)
                        && !self.trait_impl_methods(t, "Display", &["fmt"]).is_empty() =>
                {
                    // std's blanket `ToString` runs the type's `Display::fmt`.
                    out.extend(self.trait_impl_methods(t, "Display", &["fmt"]));
                    return None;
                }
                Outcome::MissingOnType(t)
                    if ITERATOR_METHODS.contains(&name)
                        && !self.trait_impl_methods(t, "Iterator", &["next"]).is_empty() =>
                {
                    // std's provided method pulls the items through the type's own `next`.
                    out.extend(self.trait_impl_methods(t, "Iterator", &["next"]));
                    return None;
                }
                Outcome::MissingOnType(_) if DERIVED_METHODS.contains(&name) => return None,
                Outcome::MissingOnType(_) if matches!(receiver, Receiver::Guessed(_)) => {}
                Outcome::MissingOnType(t) => {
                    // Auto-deref: the method is the Deref target's, reached through the type's `deref`.
                    let deref = self.trait_impl_methods(t, "Deref", &["deref"]);
                    if let Some(fns) = self.deref_target_methods(t, name).filter(|_| !deref.is_empty()) {
                        // `type Target = Counter;`: the target's method, not every method of that name.
                        out.extend(deref);
                        out.extend(self.trait_impl_methods(t, "DerefMut", &["deref_mut"]));
                        out.extend(fns);
                        return None;
                    }
                    if deref.is_empty() {
                        missing_on = Some(t);
                    } else {
                        out.extend(deref);
                        out.extend(self.trait_impl_methods(t, "DerefMut", &["deref_mut"]));
                    }
                }
                Outcome::Missing(_) => {}
            }
        }
        if name == "parse" && args == Some(0) {
            // `str::parse` runs `FromStr::from_str` of a type the call site rarely names: every visible impl.
            let impls: Vec<FnId> = self
                .impls_of_trait("FromStr", "from_str")
                .into_iter()
                .filter(|&f| self.guess_allowed(ctx.krate, f))
                .collect();
            if !impls.is_empty() {
                return self
                    .fan_out(impls, out)
                    .map(|note| note.replace("by name and arity", "for `.parse()` (FromStr)"));
            }
        }
        let candidates: Vec<FnId> = self
            .methods_by_name
            .get(name)
            .map(|v| {
                v.iter()
                    .copied()
                    .filter(|&f| args.is_none() || args == Some(self.fns[f].item.arity))
                    .filter(|&f| self.guess_allowed(ctx.krate, f))
                    .collect()
            })
            .unwrap_or_default();
        if candidates.is_empty() {
            return missing_on.map(|t| {
                format!(
                    "unresolved: no method `{name}` on `{}` in the workspace (reached through Deref, or generated by a macro?)",
                    self.types[t].name
                )
            });
        }
        self.fan_out(candidates, out)
    }

    /// Methods named `name` of the type `t`'s `Deref` impl's `Target`, when that impl names it and it has them.
    pub(super) fn deref_target_methods(&self, t: TypeId, name: &str) -> Option<Vec<FnId>> {
        let t = self.follow_alias(t);
        self.types[t].impls.iter().find_map(|&i| {
            let imp = &self.impls[i];
            let is_deref = imp.trait_path.as_ref().and_then(|p| p.segs.last()).is_some_and(|n| n == "Deref");
            let target = imp.deref_target.as_ref().filter(|_| is_deref)?;
            let krate = self.modules[imp.module].krate;
            let ctx = Ctx { krate, scope: imp.module, owner: Owner::Impl(i), generics: &[] };
            match self.method_on(&ctx, target, imp.module, name) {
                Outcome::Fns(fns) => Some(fns),
                _ => None,
            }
        })
    }

    /// The workspace type a receiver type names, if any.
    fn local_type(&self, ctx: &Ctx, ty: &TyRef, scope: ModId) -> Option<TypeId> {
        match ty {
            TyRef::Path(p) => match self.resolve_type_path(scope, &p.segs, p.leading_colon) {
                Some(TypeRes::Type(t)) => Some(self.follow_alias(t)),
                _ => None,
            },
            TyRef::SelfType => match ctx.owner {
                Owner::Impl(i) => match self.impls[i].self_res {
                    SelfRes::Local(t) => Some(t),
                    _ => None,
                },
                _ => None,
            },
            TyRef::Field { .. } => {
                let (field_ty, module) = self.field_type(ctx, ty, scope)?;
                self.local_type(ctx, &field_ty, module)
            }
            ty if ty.is_derived() => {
                let typed = self.reduce(*ctx, ty, scope, 0)?;
                self.local_type(&typed.ctx, &typed.ty, typed.scope)
            }
            // A guard's or container's own impls are std's (`Drop` of a `MutexGuard` unlocks).
            _ => None,
        }
    }

    /// For a [`TyRef::Field`]: the field's declared type, with the module it resolves in.
    fn field_type(&self, ctx: &Ctx, ty: &TyRef, scope: ModId) -> Option<(TyRef, ModId)> {
        let TyRef::Field { owner, field } = ty else { return None };
        let t = self.local_type(ctx, owner, scope)?;
        let def = &self.types[t];
        let field_ty = def.fields.get(field)?;
        // A field of generic type (`T`, `Option<T>`) says nothing here: its bounds are the owner's, not the
        // caller's.
        let mut contents = field_ty;
        while let TyRef::Wrapped { inner, .. } = contents {
            contents = inner;
        }
        if matches!(contents, TyRef::Field { .. } | TyRef::Bounds(_)) {
            return None;
        }
        Some((field_ty.clone(), def.module))
    }

    /// Methods of `t`'s impls of a trait named `trait_name` (by its last path segment: `Deref`, `Index`).
    /// Method `method` of every workspace impl of the trait named `trait_name`, whatever its self type.
    fn impls_of_trait(&self, trait_name: &str, method: &str) -> Vec<FnId> {
        let named =
            |imp: &&ImplDef| imp.trait_path.as_ref().and_then(|p| p.segs.last()).is_some_and(|n| n == trait_name);
        self.impls.iter().filter(named).flat_map(|imp| imp.methods.get(method).into_iter().flatten().copied()).collect()
    }

    fn trait_impl_methods(&self, t: TypeId, trait_name: &str, methods: &[&str]) -> Vec<FnId> {
        let mut out = Vec::new();
        for &i in &self.types[self.follow_alias(t)].impls {
            let imp = &self.impls[i];
            let named = imp.trait_path.as_ref().and_then(|p| p.segs.last()).is_some_and(|n| n == trait_name);
            if named {
                for m in methods {
                    out.extend(imp.methods.get(*m).into_iter().flatten().copied());
                }
            }
        }
        out
    }

    /// `x.into()`: std's blanket `Into` calls a `From::from` impl (or the source's own `Into` impl): the one from
    /// the receiver's type (`variant_of`, the enum of a variant written as the receiver, or the receiver's type
    /// when the analysis knows it) to the target type (`target`, when the code names it). What is not known
    /// leaves every workspace impl the caller can see a candidate on that side.
    fn resolve_into(
        &self,
        ctx: &Ctx,
        receiver: &Receiver,
        variant_of: Option<&str>,
        target: Option<&TyRef>,
        out: &mut Vec<FnId>,
    ) -> Option<String> {
        let source = variant_of.map(str::to_owned).or_else(|| self.type_name_of(ctx, receiver));
        let target = target.and_then(|t| match t {
            TyRef::Path(_) | TyRef::SelfType | TyRef::Std(_) => self.type_name(ctx, t),
            _ => None,
        });
        let candidates: Vec<FnId> = self
            .impls
            .iter()
            .filter(|imp| {
                let Some(name) = imp.trait_path.as_ref().and_then(|p| p.segs.last()) else { return false };
                let (from, to) = match name.as_str() {
                    // `impl From<S> for T`, `impl Into<T> for S`.
                    "From" => (written_type_name(&imp.trait_args), written_type_name(&imp.self_ty_text)),
                    "Into" => (written_type_name(&imp.self_ty_text), written_type_name(&imp.trait_args)),
                    _ => return false,
                };
                // A generic parameter (`impl<T: Display> From<T> for Error`) may be any type.
                let fits = |written: &str, known: &Option<String>| {
                    known.as_deref().is_none_or(|k| written == k || is_generic_name(written))
                };
                fits(&from, &source) && fits(&to, &target)
            })
            .flat_map(|imp| imp.methods.get("from").into_iter().chain(imp.methods.get("into")).flatten().copied())
            .filter(|&f| !self.fns[f].item.test_only && self.guess_allowed(ctx.krate, f))
            .collect();
        if candidates.is_empty() {
            return None;
        }
        let n = candidates.len();
        if n == 1 && (source.is_some() || target.is_some()) {
            out.extend(candidates);
            return None;
        }
        // Crates often have a dozen `From` impls for one string or error type: a larger cap than for names.
        let cap = 2 * FAN_OUT_CAP;
        if n > cap {
            return Some(format!("unresolved: {n} workspace `From` impls could be the target (more than {cap})"));
        }
        out.extend(candidates);
        let noun = if n == 1 { "impl" } else { "impls" };
        Some(format!("over-approximated: {n} workspace `From` {noun} could be the target"))
    }

    /// The name of the type a receiver has, when the analysis knows it: a workspace type's (through `Self`,
    /// fields, call results), or a std value's.
    fn type_name_of(&self, ctx: &Ctx, receiver: &Receiver) -> Option<String> {
        match receiver {
            Receiver::Type(ty) => self.type_name(ctx, ty),
            Receiver::SelfField(field) => {
                let (ty, scope) = self.self_field_type(ctx, field)?;
                self.local_type(ctx, &ty, scope).map(|t| self.types[t].name.clone())
            }
            Receiver::Std(name) if !name.is_empty() && !name.starts_with('{') => Some((*name).to_owned()),
            _ => None,
        }
    }

    /// A type's name: a workspace type's own name (aliases followed), else the last segment the code writes.
    fn type_name(&self, ctx: &Ctx, ty: &TyRef) -> Option<String> {
        if let Some(t) = self.local_type(ctx, ty, ctx.scope) {
            return Some(self.types[t].name.clone());
        }
        match ty {
            TyRef::Path(p) => p.segs.last().cloned(),
            TyRef::Std(name) if !name.is_empty() => Some((*name).to_owned()),
            _ => None,
        }
    }

    /// For `type X = Vec<..>;` (an alias of a type outside the workspace): that type's last path segment.
    fn foreign_alias(&self, t: TypeId) -> Option<String> {
        let t = self.follow_alias(t);
        let def = &self.types[t];
        match &def.alias {
            Some(TyRef::Path(p)) => match self.resolve_type_path(def.module, &p.segs, p.leading_colon) {
                Some(TypeRes::Type(_)) => None,
                _ => p.segs.last().cloned(),
            },
            Some(_) => Some(String::new()),
            None => None,
        }
    }

    fn self_field_type(&self, ctx: &Ctx, field: &str) -> Option<(TyRef, ModId)> {
        let Owner::Impl(i) = ctx.owner else { return None };
        let SelfRes::Local(t) = self.impls[i].self_res else { return None };
        let t = self.follow_alias(t);
        if let Some(&param) = self.types[t].generic_fields.get(field) {
            if let Some(ty) = self.impl_type_argument(ctx, i, param) {
                return Some((ty, self.impls[i].module));
            }
        }
        let ty = self.types[t].fields.get(field)?;
        Some((ty.clone(), self.types[t].module))
    }

    /// The `param`-th type argument of impl `i`'s self type as the impl writes it (`R` in `impl<R: Read>
    /// Parser<R>`, with the impl's bounds; `SliceRead` in `impl Parser<SliceRead>`): what a field of that generic
    /// parameter is inside the impl's methods.
    fn impl_type_argument(&self, ctx: &Ctx, i: ImplId, param: usize) -> Option<TyRef> {
        let syn::Type::Path(tp) = syn::parse_str::<syn::Type>(&self.impls[i].self_ty_text).ok()? else { return None };
        let syn::PathArguments::AngleBracketed(args) = &tp.path.segments.last()?.arguments else { return None };
        let arg = args
            .args
            .iter()
            .filter_map(|a| match a {
                syn::GenericArgument::Type(ty) => Some(ty),
                _ => None,
            })
            .nth(param)?;
        let ty = super::syntax::value_ty_ref(arg, ctx.generics);
        // A parameter without bounds, or a type the syntax does not name, says no more than the field did.
        match &ty {
            TyRef::Bounds(bounds) if bounds.is_empty() => None,
            TyRef::Unknown => None,
            _ => Some(ty),
        }
    }

    fn method_on(&self, ctx: &Ctx, ty: &TyRef, scope: ModId, name: &str) -> Outcome {
        match ty {
            TyRef::Path(p) => {
                if p.segs.len() == 1 {
                    if let Some(bounds) = self.generic_bounds(ctx, &p.segs[0]) {
                        return self.bounds_dispatch(scope, bounds, name);
                    }
                }
                match self.resolve_type_path(scope, &p.segs, p.leading_colon) {
                    Some(TypeRes::Type(t)) => match self.foreign_alias(t) {
                        Some(foreign) => ext(self.foreign_assoc(&foreign, name)),
                        None => on_type(t, self.assoc_fns(t, name, true)),
                    },
                    Some(TypeRes::External) => {
                        ext(self.foreign_assoc(p.segs.last().map(String::as_str).unwrap_or(""), name))
                    }
                    None if p.segs.len() == 1 && STD_TYPES.contains(&p.segs[0].as_str()) => {
                        ext(self.foreign_assoc(&p.segs[0], name))
                    }
                    _ => Outcome::Missing(None),
                }
            }
            TyRef::SelfType => match ctx.owner {
                Owner::Impl(i) => match &self.impls[i].self_res {
                    SelfRes::Local(t) => on_type(*t, self.assoc_fns(*t, name, true)),
                    // `self.get(k)` in `impl Trait for HashMap<..>`: std's `get`, or a workspace impl on HashMap.
                    SelfRes::Foreign(foreign) => ext(self.foreign_assoc(foreign, name)),
                    SelfRes::Blanket => Outcome::Missing(None),
                },
                Owner::Trait(tr) => non_empty(self.trait_dispatch(tr, name)),
                Owner::Free => Outcome::Missing(None),
            },
            TyRef::Bounds(bounds) => self.bounds_dispatch(scope, bounds, name),
            TyRef::Field { .. } => match self.field_type(ctx, ty, scope) {
                Some((field_ty, module)) => self.method_on(ctx, &field_ty, module, name),
                None => Outcome::Missing(None),
            },
            // `m.lock().unwrap().go()`: a guard derefs to its contents.
            TyRef::Wrapped { wrapper, inner } if GUARDS.contains(&wrapper.as_str()) => {
                self.method_on(ctx, inner, scope, name)
            }
            TyRef::Wrapped { wrapper, .. } => match self.resolve_type_path(scope, std::slice::from_ref(wrapper), false)
            {
                // A workspace type of that name (`struct Mutex`) wins, as in the type's own resolution.
                Some(TypeRes::Type(t)) if self.foreign_alias(t).is_none() => on_type(t, self.assoc_fns(t, name, true)),
                _ => ext(self.foreign_assoc(wrapper, name)),
            },
            TyRef::Std("") => ext(self.impl_methods(&self.blanket_impls, name)),
            TyRef::Std(ty_name) => ext(self.foreign_assoc(ty_name, name)),
            TyRef::MethodResult { .. } | TyRef::CallResult(_) | TyRef::Tried(_) => {
                match self.reduce(*ctx, ty, scope, 0) {
                    Some(typed) => self.method_on(&typed.ctx, &typed.ty, typed.scope, name),
                    None => Outcome::Missing(None),
                }
            }
            TyRef::Unknown => Outcome::Missing(None),
        }
    }
}

fn on_type(t: TypeId, fns: Vec<FnId>) -> Outcome {
    if fns.is_empty() {
        Outcome::MissingOnType(t)
    } else {
        Outcome::Fns(fns)
    }
}

fn non_empty(fns: Vec<FnId>) -> Outcome {
    if fns.is_empty() {
        Outcome::Missing(None)
    } else {
        Outcome::Fns(fns)
    }
}

/// For types known to be outside the workspace: nothing found means the call leaves it.
fn ext(fns: Vec<FnId>) -> Outcome {
    if fns.is_empty() {
        Outcome::External
    } else {
        Outcome::Fns(fns)
    }
}

/// The name a type written in an impl header has: its last path segment, references, lifetimes, `mut`, generic
/// arguments and the `<..>` around a trait's arguments left out (`<&'a str>`: `str`; `Vec<u8>`: `Vec`).
fn written_type_name(text: &str) -> String {
    let text = text.trim();
    let text = text.strip_prefix('<').and_then(|t| t.strip_suffix('>')).unwrap_or(text).trim();
    let mut rest = text;
    loop {
        let trimmed = rest.trim_start();
        if let Some(r) = trimmed.strip_prefix('&') {
            rest = r;
        } else if let Some(r) =
            trimmed.strip_prefix('\'').map(|r| r.trim_start_matches(|c: char| c.is_alphanumeric() || c == '_'))
        {
            rest = r;
        } else if let Some(r) = trimmed.strip_prefix("mut ") {
            rest = r;
        } else {
            rest = trimmed;
            break;
        }
    }
    let head = rest.split('<').next().unwrap_or(rest);
    let name = head.rsplit("::").next().unwrap_or(head).trim();
    // Receivers' types are named through smart pointers (`Box<Inner>`: `Inner`), so impls' types are too.
    let args = rest[head.len()..].trim().strip_prefix('<').and_then(|r| r.strip_suffix('>'));
    match args {
        Some(inner) if SMART_POINTERS.contains(&name) => written_type_name(inner),
        _ => name.to_owned(),
    }
}

/// A name that looks like a generic parameter (`T`, `E`, `S2`) rather than a type.
fn is_generic_name(name: &str) -> bool {
    name.len() <= 2 && name.starts_with(|c: char| c.is_ascii_uppercase())
}
