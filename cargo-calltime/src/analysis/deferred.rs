//! Functions that build a value whose work runs later: a closure, a parser combinator, an iterator adapter.
//!
//! `delimited(a, b, c)` in winnow or nom returns `impl Parser`: the call builds the parser in a few nanoseconds
//! and the parse runs when the caller calls `parse_next` on it. A probe at the builder's entry times the building,
//! never the work, retires at once, and costs what the builder costs to keep it and its closure out of line.
//! The same holds for a function that only stores its arguments in the struct it returns: winnow's `Parser::map(self,
//! f) -> Map<Self, F, ..>` builds a named parser type the same way, and a constructor such as `Checkpoint::new(inner)
//! -> Self { Self { inner, marker: Default::default() } }` costs a few moves, less than its probe.
//! Such functions are left out (`SkipReason::BuildsForLater`) unless `--probe-trivial` asks for every probe.

use syn::visit::Visit;
use syn::{Expr, ReturnType, Type, TypeParamBound};

/// Whether a function with this signature and body builds a value whose work runs when it is used, or does no work
/// but build it: its declared return type is an `impl Trait` (a future excepted: futures take their own probe form)
/// or a boxed closure (`Box<dyn Fn*>`), and its body runs no loop of its own (a loop inside a closure it returns
/// runs later); or its body is one expression that stores its arguments in a struct, tuple or enum variant
/// ([`stores_arguments`]).
pub(super) fn builds_for_later(sig: &syn::Signature, block: &syn::Block) -> bool {
    let ReturnType::Type(_, ty) = &sig.output else { return false };
    if sig.asyncness.is_none() && stores_arguments(block) {
        return true;
    }
    if !(opaque_non_future(ty) || boxed_closure(ty)) {
        return false;
    }
    let mut loops = OwnLoops(false);
    loops.visit_block(block);
    !loops.0
}

/// A body that is one expression building a struct (`Map { parser: self, map, marker: Default::default() }`), a
/// tuple struct or enum variant (`Self(inner)`, `Some(x)`: a call of a path whose last segment is capitalised) or a
/// tuple, whose parts are in turn such values or cost nothing of their own: paths (a parameter moved in, `None`, a
/// constant), literals, closures (built, not run), fields and references of those, casts, `x.into()` of those
/// (the conversion an `impl Into<Range>` parameter asks for) and `default()` with no arguments. Any other call makes
/// it a function with work of its own.
fn stores_arguments(block: &syn::Block) -> bool {
    match block.stmts.as_slice() {
        [syn::Stmt::Expr(expr, None)] => is_constructor(strip(expr)) && stored_part(expr),
        _ => false,
    }
}

fn strip(expr: &Expr) -> &Expr {
    match expr {
        Expr::Paren(p) => strip(&p.expr),
        Expr::Group(g) => strip(&g.expr),
        _ => expr,
    }
}

/// A struct literal, a tuple, or a call of a capitalised path (a tuple struct or an enum variant).
fn is_constructor(expr: &Expr) -> bool {
    match expr {
        Expr::Struct(_) | Expr::Tuple(_) => true,
        Expr::Call(call) => capitalised_path(&call.func),
        _ => false,
    }
}

fn capitalised_path(func: &Expr) -> bool {
    let Expr::Path(p) = strip(func) else { return false };
    p.path.segments.last().is_some_and(|s| s.ident.to_string().starts_with(|c: char| c.is_ascii_uppercase()))
}

/// A part of a value [`stores_arguments`] accepts.
fn stored_part(expr: &Expr) -> bool {
    match strip(expr) {
        Expr::Path(_) | Expr::Lit(_) | Expr::Closure(_) => true,
        Expr::Struct(s) => s.fields.iter().all(|f| stored_part(&f.expr)) && s.rest.as_deref().is_none_or(stored_part),
        Expr::Tuple(t) => t.elems.iter().all(stored_part),
        Expr::Array(a) => a.elems.iter().all(stored_part),
        Expr::Call(call) if capitalised_path(&call.func) => call.args.iter().all(stored_part),
        // `Default::default()`, `T::default()`.
        Expr::Call(call) => {
            call.args.is_empty()
                && matches!(strip(&call.func), Expr::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "default"))
        }
        Expr::MethodCall(m) => m.method == "into" && m.args.is_empty() && stored_part(&m.receiver),
        Expr::Field(f) => stored_part(&f.base),
        Expr::Reference(r) => stored_part(&r.expr),
        Expr::Cast(c) => stored_part(&c.expr),
        _ => false,
    }
}

/// `impl Trait` at the top of the return type, none of whose bounds is `Future` or `IntoFuture`.
fn opaque_non_future(ty: &Type) -> bool {
    match ty {
        Type::Paren(p) => opaque_non_future(&p.elem),
        Type::Group(g) => opaque_non_future(&g.elem),
        Type::ImplTrait(t) => !t.bounds.iter().any(|b| match b {
            TypeParamBound::Trait(t) => {
                t.path.segments.last().is_some_and(|s| s.ident == "Future" || s.ident == "IntoFuture")
            }
            _ => false,
        }),
        _ => false,
    }
}

/// `Box<dyn Fn(..)>`, `Box<dyn FnMut(..) + '_>`, `Box<dyn FnOnce(..)>`.
fn boxed_closure(ty: &Type) -> bool {
    let Type::Path(tp) = ty else { return false };
    let Some(last) = tp.path.segments.last() else { return false };
    if last.ident != "Box" {
        return false;
    }
    let syn::PathArguments::AngleBracketed(args) = &last.arguments else { return false };
    let Some(syn::GenericArgument::Type(Type::TraitObject(object))) = args.args.first() else { return false };
    object.bounds.iter().any(|b| match b {
        TypeParamBound::Trait(t) => {
            t.path.segments.last().is_some_and(|s| matches!(s.ident.to_string().as_str(), "Fn" | "FnMut" | "FnOnce"))
        }
        _ => false,
    })
}

/// Finds a loop the body runs itself: not one inside a closure or an async block (they run when called or
/// polled), nor in a nested item (a function of its own).
struct OwnLoops(bool);

impl<'ast> Visit<'ast> for OwnLoops {
    fn visit_item(&mut self, _: &'ast syn::Item) {}
    fn visit_expr(&mut self, expr: &'ast Expr) {
        match expr {
            Expr::ForLoop(_) | Expr::While(_) | Expr::Loop(_) => self.0 = true,
            Expr::Closure(_) | Expr::Async(_) => {}
            _ => syn::visit::visit_expr(self, expr),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judged(source: &str) -> bool {
        let f: syn::ItemFn = syn::parse_str(source).expect("test source parses");
        builds_for_later(&f.sig, &f.block)
    }

    #[test]
    fn a_builder_of_a_closure_or_an_opaque_value_is_left_out_unless_it_loops_itself() {
        // winnow's shape: the loop is in the closure, which runs when the parser is used.
        assert!(judged(
            "fn delimited<I>(mut a: A, mut b: B) -> impl Parser<I, O, E> {
                trace(\"delimited\", move |input: &mut I| { loop { a.parse_next(input)?; } })
            }"
        ));
        // nom's shape: combinators built from other combinators.
        assert!(judged("fn ws<P>(inner: P) -> impl Parser<&str> { delimited(multispace0, inner, multispace0) }"));
        assert!(judged("fn char(c: char) -> impl FnMut(&str) -> IResult<&str, char> { move |i| parse(c, i) }"));
        assert!(judged(
            "fn words(s: &str) -> impl Iterator<Item = &str> + '_ { s.split(' ').filter(|w| !w.is_empty()) }"
        ));
        assert!(judged("fn boxed() -> Box<dyn Fn(u32) -> u32 + Send> { Box::new(|x| x + 1) }"));
        // Work done before returning: the probe times it.
        assert!(!judged(
            "fn sorted(v: &[u32]) -> impl Iterator<Item = u32> {
                let mut out = Vec::new();
                for x in v { out.push(*x); }
                out.into_iter()
            }"
        ));
        // Futures have their own form; `Box<dyn Trait>` of other traits keeps it, as does `Option<impl ..>` but for a
        // value that only stores a closure.
        assert!(!judged("fn later() -> impl Future<Output = u32> { async { 1 } }"));
        assert!(!judged("fn shown() -> Box<dyn Display> { Box::new(1) }"));
        assert!(!judged("fn maybe(n: u32) -> Option<impl Fn()> { (n > 1).then(|| || ()) }"));
        assert!(judged("fn maybe() -> Option<impl Fn()> { Some(|| ()) }"));
        assert!(!judged("fn unit() {}"));
    }

    #[test]
    fn a_function_that_only_stores_its_arguments_in_the_value_it_returns_is_left_out() {
        // winnow's `Parser::map`, `repeat(occurrences: impl Into<Range>, p)`, a constructor.
        assert!(judged(
            "fn map<G>(self, map: G) -> Map<Self, G> { Map { parser: self, map, i: Default::default(), o: PhantomData } }"
        ));
        assert!(judged("fn repeat(n: impl Into<Range>, p: P) -> Repeat<P> { Repeat { n: n.into(), p, acc: None } }"));
        assert!(judged("fn new(inner: T) -> Self { Self { inner, marker: T::default() } }"));
        assert!(judged("fn wrap(x: Vec<u8>, n: u32) -> Wrapped { Wrapped::Both(Inner(x), n as u64, &STATIC, 1) }"));
        assert!(judged("fn pair(a: A, b: B) -> (A, B) { (a, b) }"));
        assert!(judged("fn parser() -> Delimited<A, B> { Delimited { a: A, b: B } }"));
        assert!(judged(
            "fn by_ref(&mut self) -> ByRef<'_, Self> { ByRef { p: self, first: self.first, f: |x| x + 1 } }"
        ));
        // Work of its own: a call (lowercase: a function), a statement before, a loop, a macro, an async fn; a
        // getter is the trivial rule's.
        assert!(!judged("fn from_input(input: &I) -> Self { ErrMode::Backtrack(E::from_input(input)) }"));
        assert!(!judged("fn counted(v: Vec<u8>) -> Counted { Counted { n: v.len(), v } }"));
        assert!(!judged("fn boxed(x: u32) -> Holder { Holder { b: Box::new(x) } }"));
        assert!(!judged("fn logged(x: u32) -> Holder { log(x); Holder { x } }"));
        assert!(!judged("fn listed(x: u32) -> Holder { Holder { v: vec![x] } }"));
        assert!(!judged("async fn later(x: u32) -> Holder { Holder { x } }"));
        assert!(!judged("fn get(&self) -> u32 { self.x }"));
        assert!(!judged("fn picked(a: T, b: T, first: bool) -> T { if first { a } else { b } }"));
    }
}
