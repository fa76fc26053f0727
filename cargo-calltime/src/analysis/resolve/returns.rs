//! The types of call results, for the receivers they feed (`self.inner.lock().unwrap().go()`, `make().go()`,
//! `open(p)?.go()`): a workspace function's declared return type, std's wrapper methods (`lock`, `borrow`,
//! `unwrap`, `as_ref`, `clone`, ...) and `?`.

use super::{Ctx, Outcome};
use crate::analysis::index::{FnId, Index, ModId};
use crate::analysis::std_model::{sequence_method, wrapper_method, GUARDS, SAME_VALUE_METHODS, SAME_WRAPPER};
use crate::analysis::syntax::TyRef;

/// Results nest as deep as the expression that makes them; this only bounds a pathological one.
const MAX_DEPTH: usize = 32;

/// A type with the context its names resolve in: a callee's return type names the callee's `Self`, generics and
/// module, not the caller's.
pub(super) struct Typed<'s> {
    pub ty: TyRef,
    pub ctx: Ctx<'s>,
    pub scope: ModId,
}

impl Index {
    /// `ty` with its derived parts reduced (call results, `?`, fields of either), so that a method or a type can
    /// be looked up on it. `None` when the syntax does not tell.
    pub(super) fn reduce<'s>(&'s self, ctx: Ctx<'s>, ty: &TyRef, scope: ModId, depth: usize) -> Option<Typed<'s>> {
        if depth > MAX_DEPTH {
            return None;
        }
        match ty {
            TyRef::MethodResult { receiver, method } => {
                let receiver = self.reduce(ctx, receiver, scope, depth + 1)?;
                self.method_result(receiver, method, depth + 1)
            }
            TyRef::CallResult(path) => match self.value_path(&ctx, path) {
                Outcome::Fns(fns) => self.returned(&fns),
                _ => None,
            },
            TyRef::Tried(inner) => {
                let inner = self.reduce(ctx, inner, scope, depth + 1)?;
                match inner.ty {
                    TyRef::Wrapped { wrapper, inner: contents } if wrapper == "Option" || wrapper == "Result" => {
                        Some(Typed { ty: *contents, ..inner })
                    }
                    // Another wrapper is not what `?` takes; a plain type is a guessed constructor's (`T::open()?`).
                    TyRef::Wrapped { .. } => None,
                    _ => Some(inner),
                }
            }
            // `self.inner` in `self.inner.lock()`: the field's declared type, `Mutex<Inner>`.
            TyRef::Field { .. } => {
                let (field_ty, module) = self.field_type(&ctx, ty, scope)?;
                Some(Typed { ty: field_ty, ctx, scope: module })
            }
            _ => Some(Typed { ty: ty.clone(), ctx, scope }),
        }
    }

    /// What `method` called on a value of type `receiver` returns.
    fn method_result<'s>(&'s self, receiver: Typed<'s>, method: &str, depth: usize) -> Option<Typed<'s>> {
        if depth > MAX_DEPTH {
            return None;
        }
        if let TyRef::Wrapped { wrapper, inner } = &receiver.ty {
            if let Some(wrappers) = wrapper_method(wrapper, method) {
                let ty = if wrappers == SAME_WRAPPER {
                    receiver.ty.clone()
                } else {
                    wrappers.iter().rev().fold((**inner).clone(), |ty, w| TyRef::Wrapped {
                        wrapper: (*w).to_owned(),
                        inner: Box::new(ty),
                    })
                };
                return Some(Typed { ty, ..receiver });
            }
            if GUARDS.contains(&wrapper.as_str()) {
                // A guard derefs to its contents: `m.lock().unwrap().go()` is the contents' `go`.
                let contents = Typed { ty: (**inner).clone(), ..receiver };
                return self.method_result(contents, method, depth + 1);
            }
            return None;
        }
        match self.method_on(&receiver.ctx, &receiver.ty, receiver.scope, method) {
            Outcome::Fns(fns) => return self.returned(&fns),
            // Auto-deref, as for the call itself: rusqlite's `tx.prepare_cached(..)?` is `Connection`'s, reached
            // through `Transaction`'s `Deref`, and returns a `CachedStatement`.
            Outcome::MissingOnType(t) => {
                if let Some(fns) = self.deref_target_methods(t, method) {
                    return self.returned(&fns);
                }
            }
            // std's own method of a std sequence (a workspace trait implemented for `Vec` would be in `Fns`).
            Outcome::External => {
                if let Some(ty) = sequence_method(&receiver.ty, method) {
                    return Some(Typed { ty, ..receiver });
                }
            }
            _ => {}
        }
        SAME_VALUE_METHODS.contains(&method).then_some(receiver)
    }

    /// The declared return type of the one function a call reaches, in that function's context. A call that may
    /// reach several (a trait method's impls) has no one type here.
    fn returned(&self, fns: &[FnId]) -> Option<Typed<'_>> {
        let [f] = fns else { return None };
        let def = &self.fns[*f];
        let ty = def.item.returns.clone()?;
        let ctx = Ctx { krate: def.krate, scope: def.scope, owner: def.owner, generics: &def.item.generics };
        Some(Typed { ty, ctx, scope: def.scope })
    }
}
