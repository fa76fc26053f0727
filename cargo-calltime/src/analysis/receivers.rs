//! Receiver type inference: what the syntax of a body shows about the type of a method call's receiver, an
//! operand or a `let` initializer (locals, `self`, fields, constructors, pattern bindings), for call resolution.

use syn::Expr;
use syn::Pat;

use super::bodies::{is_type_like, pat_idents, strip_parens, BodyVisitor};
use super::std_model::{
    binary_op_trait, literal_type, returns_std_value, std_macro_type, std_result_type, std_trait_method,
    OPERATOR_PRIMITIVES, RANGE_RECEIVER, SMART_POINTERS, STD_VALUE_MACROS,
};
use super::syntax::*;

impl BodyVisitor<'_> {
    /// Forgets what was known of the names a pattern binds anew (`if let Some(s) = ..` shadows an earlier `s`).
    pub(super) fn unbind(&mut self, pat: &Pat) {
        let mut bound = Vec::new();
        pat_idents(pat, &mut bound);
        for name in bound {
            self.env.remove(&name);
            self.guessed.remove(&name);
        }
    }

    /// `fmt::Display::fmt(d, f)`: a std trait's method called by path runs the first argument's impl (rustc-demangle's
    /// `DemangleStyle::fmt` reaches the v0 printer so), as `d.fmt(f)` would; the path alone leaves the workspace.
    pub(super) fn std_trait_path_call(&mut self, p: &syn::ExprPath, call: &syn::ExprCall) {
        let segs = &p.path.segments;
        let (Some(first), true, None) = (call.args.first(), segs.len() >= 2, p.qself.as_ref()) else { return };
        let (trait_seg, method) = (&segs[segs.len() - 2], &segs[segs.len() - 1]);
        let Some((trait_name, methods)) = std_trait_method(&trait_seg.ident.to_string(), &method.ident.to_string())
        else {
            return;
        };
        let (receiver, recv_text) = self.receiver(first);
        if matches!(receiver, Receiver::Type(_) | Receiver::SelfField(_) | Receiver::Guessed(_)) {
            self.calls.push(CallSite {
                line: line_of(method.ident.span()),
                text: format!("{trait_name}::{}({recv_text}, ..)", method.ident),
                kind: CallKind::Operator { trait_name, methods, receiver },
                arg_calls: Vec::new(),
                forwards_param: false,
                arg_futures: Vec::new(),
            });
        }
    }

    /// The type of what `Some(x)` or `Ok(x)` binds from a `match` or `if let` scrutinee, as the syntax shows it
    /// (with whether it is a guess): what `?` gives of the scrutinee, or the argument of a scrutinee written
    /// `Some(a)`.
    pub(super) fn scrutinee_type(&self, expr: &Expr) -> Option<(TyRef, bool)> {
        let (expr, contents) = match strip_parens(expr) {
            Expr::Call(c) if c.args.len() == 1 && is_some_or_ok(&c.func) => (&c.args[0], true),
            other => (other, false),
        };
        let (ty, guessed) = match self.receiver(expr).0 {
            Receiver::Type(t) => (t, false),
            Receiver::Guessed(t) => (t, true),
            Receiver::SelfField(field) => (TyRef::Field { owner: Box::new(TyRef::SelfType), field }, false),
            Receiver::Std(_) | Receiver::Unknown => return None,
        };
        Some((if contents { ty } else { TyRef::Tried(Box::new(ty)) }, guessed))
    }

    /// Types the bindings of a struct or enum-variant pattern by the fields they bind: `Tag::Heading { level, .. }`,
    /// `TagEnd::Heading(level)`, `Point { x, .. }`; and the value `Some(x)` or `Ok(x)` binds from a scrutinee of a
    /// known type (`match self.style { Some(ref d) => .. }`, `if let Some(out) = &mut self.out`): what `?` would
    /// give of it. Other bindings are left as they are.
    pub(super) fn bind_pattern_types(&mut self, pat: &Pat, scrutinee: Option<&(TyRef, bool)>) {
        if let (Pat::TupleStruct(ts), Some((ty, guessed))) = (pat, scrutinee) {
            if ts.qself.is_none() && is_some_or_ok_path(&ts.path) {
                if let [Pat::Ident(pi)] = ts.elems.iter().collect::<Vec<_>>().as_slice() {
                    if pi.subpat.is_none() {
                        let name = pi.ident.to_string();
                        self.env.insert(name.clone(), ty.clone());
                        if *guessed {
                            self.guessed.insert(name);
                        } else {
                            self.guessed.remove(&name);
                        }
                    }
                }
                return;
            }
        }
        // (owner type, field prefix) for `Enum::Variant` (two type-like last segments, `Self::Variant` too) or a
        // struct path (`Self { .. }` too).
        let owner_of = |path: &syn::Path| -> Option<(TyRef, String)> {
            let p = PathRef::from_syn(path);
            let n = p.segs.len();
            let last = p.segs.last()?;
            if !is_type_like(last) {
                return None;
            }
            if last == "Self" {
                return (n == 1).then(|| (TyRef::SelfType, String::new()));
            }
            if n >= 2 && is_type_like(&p.segs[n - 2]) {
                let owner = if p.segs[n - 2] == "Self" {
                    if n > 2 {
                        return None;
                    }
                    TyRef::SelfType
                } else {
                    TyRef::Path(PathRef { segs: p.segs[..n - 1].to_vec(), leading_colon: p.leading_colon })
                };
                Some((owner, format!("{last}::")))
            } else {
                Some((TyRef::Path(p), String::new()))
            }
        };
        match pat {
            Pat::Struct(ps) if ps.qself.is_none() => {
                let Some((owner, prefix)) = owner_of(&ps.path) else { return };
                for fp in &ps.fields {
                    let member = match &fp.member {
                        syn::Member::Named(name) => name.to_string(),
                        syn::Member::Unnamed(index) => index.index.to_string(),
                    };
                    if let Pat::Ident(pi) = &*fp.pat {
                        if pi.subpat.is_none() {
                            let ty =
                                TyRef::Field { owner: Box::new(owner.clone()), field: format!("{prefix}{member}") };
                            self.env.insert(pi.ident.to_string(), ty);
                            self.guessed.remove(&pi.ident.to_string());
                        }
                    }
                }
            }
            Pat::TupleStruct(ts) if ts.qself.is_none() => {
                let Some((owner, prefix)) = owner_of(&ts.path) else { return };
                for (i, elem) in ts.elems.iter().enumerate() {
                    if matches!(elem, Pat::Rest(_)) {
                        break;
                    }
                    if let Pat::Ident(pi) = elem {
                        if pi.subpat.is_none() {
                            let ty = TyRef::Field { owner: Box::new(owner.clone()), field: format!("{prefix}{i}") };
                            self.env.insert(pi.ident.to_string(), ty);
                            self.guessed.remove(&pi.ident.to_string());
                        }
                    }
                }
            }
            // `&Some(x)` against a reference to an `Option`: the same contents.
            Pat::Reference(r) => self.bind_pattern_types(&r.pat, scrutinee),
            // `match (&self.source, preview) { (Source::Files(paths), true) => .. }`
            Pat::Tuple(t) => t.elems.iter().for_each(|e| self.bind_pattern_types(e, None)),
            Pat::Slice(s) => s.elems.iter().for_each(|e| self.bind_pattern_types(e, None)),
            Pat::Ident(pi) => {
                if let Some((_, sub)) = &pi.subpat {
                    self.bind_pattern_types(sub, scrutinee);
                }
            }
            Pat::Paren(p) => self.bind_pattern_types(&p.pat, scrutinee),
            Pat::Or(o) => o.cases.iter().for_each(|c| self.bind_pattern_types(c, scrutinee)),
            _ => {}
        }
    }

    pub(super) fn receiver(&self, expr: &Expr) -> (Receiver, String) {
        match expr {
            Expr::Paren(p) => self.receiver(&p.expr),
            Expr::Reference(r) => self.receiver(&r.expr),
            Expr::Group(g) => self.receiver(&g.expr),
            Expr::Path(p) if p.qself.is_none() => {
                if let Some(ident) = p.path.get_ident() {
                    let name = ident.to_string();
                    if name == "self" {
                        return (Receiver::Type(TyRef::SelfType), name);
                    }
                    if is_type_like(&name) && !self.env.contains_key(&name) {
                        // A unit struct used as a value: `Local.go()`.
                        return (Receiver::Type(self.path_type(&p.path)), name);
                    }
                    let receiver = match self.env.get(&name) {
                        Some(TyRef::Std(std_name)) => Receiver::Std(std_name),
                        Some(ty) if self.guessed.contains(&name) => Receiver::Guessed(ty.clone()),
                        Some(ty) => Receiver::Type(ty.clone()),
                        None => Receiver::Unknown,
                    };
                    return (receiver, name);
                }
                (Receiver::Unknown, PathRef::from_syn(&p.path).text())
            }
            Expr::Field(f) => {
                let field = match &f.member {
                    syn::Member::Named(name) => name.to_string(),
                    syn::Member::Unnamed(index) => index.index.to_string(),
                };
                // A field of a value whose type is known has its declared type: `store.entries.get(k)` on a
                // `HashMap` field is std's `get`, not every workspace method named `get`.
                let field_of = |owner: TyRef| TyRef::Field { owner: Box::new(owner), field: field.clone() };
                match self.receiver(&f.base) {
                    (Receiver::Type(TyRef::SelfType), text) if text == "self" => {
                        (Receiver::SelfField(field.clone()), format!("self.{field}"))
                    }
                    (Receiver::Type(owner), text) => (Receiver::Type(field_of(owner)), format!("{text}.{field}")),
                    (Receiver::Guessed(owner), text) => (Receiver::Guessed(field_of(owner)), format!("{text}.{field}")),
                    (Receiver::SelfField(inner), text) => {
                        let owner = TyRef::Field { owner: Box::new(TyRef::SelfType), field: inner };
                        (Receiver::Type(field_of(owner)), format!("{text}.{field}"))
                    }
                    _ => (Receiver::Unknown, "_".to_owned()),
                }
            }
            Expr::Call(c) => {
                if let Expr::Path(p) = &*c.func {
                    // `Arc::clone(&shared)`, `Rc::clone(&shared)`: the argument's type (pointers are looked through).
                    let segs: Vec<String> = p.path.segments.iter().map(|s| s.ident.to_string()).collect();
                    if let ([.., ptr, clone], [arg]) = (segs.as_slice(), c.args.iter().collect::<Vec<_>>().as_slice()) {
                        if SMART_POINTERS.contains(&ptr.as_str()) && clone == "clone" {
                            return self.receiver(arg);
                        }
                    }
                    if let Some(ident) = p.path.get_ident().filter(|i| is_type_like(&i.to_string())) {
                        // A tuple-struct constructor: `Wrapper(x).poke()`.
                        return (Receiver::Type(self.path_type(&p.path)), format!("{ident}(..)"));
                    }
                    let last_is_fn = p.path.segments.last().is_some_and(|s| !is_type_like(&s.ident.to_string()));
                    let ty_seg_like = p.path.segments.len() >= 2
                        && is_type_like(&p.path.segments[p.path.segments.len() - 2].ident.to_string());
                    if p.qself.is_none() && last_is_fn && !ty_seg_like {
                        // `make()`, `store::open(..)`: the function's declared return type.
                        return (Receiver::Type(TyRef::CallResult(PathRef::from_syn(&p.path))), "_".to_owned());
                    }
                    if p.qself.is_none() && p.path.segments.len() >= 2 {
                        let segs: Vec<String> = p.path.segments.iter().map(|s| s.ident.to_string()).collect();
                        let ty_seg = &segs[segs.len() - 2];
                        if is_type_like(ty_seg) {
                            let text = format!("{}(..)", segs.join("::"));
                            let ty = if ty_seg == "Self" && segs.len() == 2 {
                                TyRef::SelfType
                            } else {
                                TyRef::Path(PathRef {
                                    segs: segs[..segs.len() - 1].to_vec(),
                                    leading_colon: p.path.leading_colon.is_some(),
                                })
                            };
                            return (Receiver::Guessed(ty), text);
                        }
                    }
                }
                (Receiver::Unknown, "_".to_owned())
            }
            // `a + b` usually has `a`'s type (`impl Add for T { type Output = T; }`): a guess.
            Expr::Binary(b) if binary_op_trait(&b.op).is_some_and(|(t, _)| !t.starts_with("Partial")) => {
                match self.receiver(&b.left) {
                    (Receiver::Type(t) | Receiver::Guessed(t), text) => (Receiver::Guessed(t), format!("({text} ..)")),
                    (Receiver::SelfField(f), text) => (Receiver::SelfField(f), format!("({text} ..)")),
                    _ => (Receiver::Unknown, "_".to_owned()),
                }
            }
            Expr::Unary(u) if !matches!(u.op, syn::UnOp::Deref(_)) => self.receiver(&u.expr),
            Expr::Lit(lit) => (Receiver::Std(literal_type(&lit.lit)), "_".to_owned()),
            // `(a..=b).contains(x)`: the text marks a range, whose `contains` is two comparisons.
            Expr::Range(_) => (Receiver::Std(""), RANGE_RECEIVER.to_owned()),
            Expr::Macro(m) if STD_VALUE_MACROS.iter().any(|n| m.mac.path.is_ident(n)) => {
                let name = macro_name(&m.mac);
                (Receiver::Std(std_macro_type(&name)), format!("{name}!(..)"))
            }
            Expr::MethodCall(mc) if returns_std_value(&mc.method.to_string()) => {
                let method = mc.method.to_string();
                (Receiver::Std(std_result_type(&method)), format!("_.{method}(..)"))
            }
            // `self.inner.lock().unwrap().go()`, `make().go()`, `open(p)?.go()`: typed once calls are resolved
            // (`analysis::resolve::returns`); the text stays `_`, as for any receiver the syntax does not name.
            Expr::MethodCall(mc) => {
                let method = mc.method.to_string();
                self.derived(&mc.receiver, |receiver| TyRef::MethodResult { receiver, method })
            }
            Expr::Try(t) => self.derived(&t.expr, TyRef::Tried),
            // `(*guard).go()`: smart pointers and guards are looked through anyway.
            Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => self.receiver(&u.expr),
            Expr::Struct(s) if s.qself.is_none() => {
                (Receiver::Type(self.path_type(&s.path)), format!("{} {{..}}", PathRef::from_syn(&s.path).text()))
            }
            _ => (Receiver::Unknown, "_".to_owned()),
        }
    }

    /// A receiver typed by what is done to `inner`'s value (`wrap` builds that type), guessed when `inner`'s type
    /// is; unknown when `inner`'s type is.
    fn derived(&self, inner: &Expr, wrap: impl FnOnce(Box<TyRef>) -> TyRef) -> (Receiver, String) {
        let (ty, guessed) = match self.receiver(inner).0 {
            Receiver::Type(t) => (t, false),
            Receiver::Guessed(t) => (t, true),
            Receiver::SelfField(field) => (TyRef::Field { owner: Box::new(TyRef::SelfType), field }, false),
            Receiver::Std(_) | Receiver::Unknown => return (Receiver::Unknown, "_".to_owned()),
        };
        let ty = wrap(Box::new(ty));
        (if guessed { Receiver::Guessed(ty) } else { Receiver::Type(ty) }, "_".to_owned())
    }

    pub(super) fn path_type(&self, path: &syn::Path) -> TyRef {
        if path.is_ident("Self") {
            TyRef::SelfType
        } else {
            TyRef::Path(PathRef::from_syn(path))
        }
    }

    /// The type a `let` initialiser evidently has (`T { .. }`, another local), or probably has (`T::new(..)`,
    /// `Self::x(..)`: true in the second field).
    pub(super) fn init_type(&self, expr: &Expr) -> Option<(TyRef, bool)> {
        match expr {
            Expr::Struct(s) if s.qself.is_none() => Some((self.path_type(&s.path), false)),
            Expr::Call(_) => match self.receiver(expr).0 {
                Receiver::Type(t) => Some((t, false)),
                Receiver::Guessed(t) => Some((t, true)),
                _ => None,
            },
            Expr::Reference(r) => self.init_type(&r.expr),
            // `let entries = &self.entries;`, `let inner = outer.inner;`: the field's declared type.
            Expr::Field(_) => match self.receiver(expr).0 {
                Receiver::Type(t) => Some((t, false)),
                Receiver::Guessed(t) => Some((t, true)),
                Receiver::SelfField(field) => Some((TyRef::Field { owner: Box::new(TyRef::SelfType), field }, false)),
                _ => None,
            },
            Expr::Paren(p) => self.init_type(&p.expr),
            // `let g = self.inner.lock().unwrap();`, `let f = open(p)?;`, `let s = x.to_string();`, `let n = 5;`
            Expr::MethodCall(_) | Expr::Try(_) | Expr::Lit(_) | Expr::Macro(_) => match self.receiver(expr).0 {
                Receiver::Type(t) => Some((t, false)),
                Receiver::Guessed(t) => Some((t, true)),
                Receiver::Std(std_name) => Some((TyRef::Std(std_name), false)),
                _ => None,
            },
            Expr::Path(p) => p.path.get_ident().and_then(|i| {
                let name = i.to_string();
                self.env.get(&name).map(|t| (t.clone(), self.guessed.contains(&name)))
            }),
            _ => None,
        }
    }
}

/// `Some` or `Ok`, as a pattern's or a call's path.
fn is_some_or_ok_path(path: &syn::Path) -> bool {
    path.is_ident("Some") || path.is_ident("Ok")
}

fn is_some_or_ok(func: &Expr) -> bool {
    matches!(func, Expr::Path(p) if p.qself.is_none() && is_some_or_ok_path(&p.path))
}

/// An operand whose type the syntax shows and which is not a primitive (`usize`, `f64`, ...): its operators may be
/// workspace impls.
pub(super) fn operand_may_be_workspace_type(receiver: &Receiver) -> bool {
    match receiver {
        Receiver::Type(TyRef::Path(p)) | Receiver::Guessed(TyRef::Path(p)) => {
            !(p.segs.len() == 1 && OPERATOR_PRIMITIVES.contains(&p.segs[0].as_str()))
        }
        Receiver::Type(_) | Receiver::Guessed(_) | Receiver::SelfField(_) => true,
        _ => false,
    }
}
