//! Functions that build a value whose work runs later: a closure, a parser combinator, an iterator adapter.
//!
//! `delimited(a, b, c)` in winnow or nom returns `impl Parser`: the call builds the parser in a few nanoseconds
//! and the parse runs when the caller calls `parse_next` on it. A probe at the builder's entry times the building,
//! never the work, retires at once, and costs what the builder costs to keep it and its closure out of line.
//! Such functions are left out (`SkipReason::BuildsForLater`) unless `--probe-trivial` asks for every probe.

use syn::visit::Visit;
use syn::{Expr, ReturnType, Type, TypeParamBound};

/// Whether a function with this signature and body builds a value whose work runs when it is used: its declared
/// return type is an `impl Trait` (a future excepted: futures take their own probe form) or a boxed closure
/// (`Box<dyn Fn*>`), and its body runs no loop of its own (a loop inside a closure it returns runs later).
pub(super) fn builds_for_later(output: &ReturnType, block: &syn::Block) -> bool {
    let ReturnType::Type(_, ty) = output else { return false };
    if !(opaque_non_future(ty) || boxed_closure(ty)) {
        return false;
    }
    let mut loops = OwnLoops(false);
    loops.visit_block(block);
    !loops.0
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
        builds_for_later(&f.sig.output, &f.block)
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
        // Futures have their own form; named types, `Box<dyn Trait>` of other traits and `Option<impl ..>` keep it.
        assert!(!judged("fn later() -> impl Future<Output = u32> { async { 1 } }"));
        assert!(!judged("fn parser() -> Delimited<A, B> { Delimited { a: A, b: B } }"));
        assert!(!judged("fn shown() -> Box<dyn Display> { Box::new(1) }"));
        assert!(!judged("fn maybe() -> Option<impl Fn()> { Some(|| ()) }"));
        assert!(!judged("fn unit() {}"));
    }
}
