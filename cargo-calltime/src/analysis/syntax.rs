//! What per-file extraction produces: plain data about items, `use`s, signatures, call sites and probe offsets,
//! with the small syn helpers the extraction stages share ([`super::items`] for items, [`super::bodies`] for
//! call sites, [`super::receivers`] for receiver types).
//!
//! Everything that touches a span happens on the thread that parsed the file: proc-macro2's fallback source map is
//! thread-local, so spans must be turned into lines and byte offsets before the file's work item ends.

use proc_macro2::{Span, TokenStream, TokenTree};
use syn::{Type, TypeParamBound};

use super::cfg::Cfg;
use super::std_model::{RAW_POINTER, SLICE, SMART_POINTERS, STD_WRAPPERS};
use crate::plan::{ProbeKind, SkipReason};

/// A path as written, without generic arguments: `a::b::c`, `::x`, `crate::m::f`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PathRef {
    pub segs: Vec<String>,
    pub leading_colon: bool,
}

impl PathRef {
    pub(super) fn from_syn(path: &syn::Path) -> PathRef {
        PathRef {
            segs: path.segments.iter().map(|s| s.ident.to_string()).collect(),
            leading_colon: path.leading_colon.is_some(),
        }
    }

    pub fn text(&self) -> String {
        let joined = self.segs.join("::");
        if self.leading_colon {
            format!("::{joined}")
        } else {
            joined
        }
    }
}

/// A type as far as method resolution cares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TyRef {
    /// A named type (references, `Box`, `Rc` and `Arc` stripped).
    Path(PathRef),
    /// A generic parameter, `impl Trait` or `dyn Trait`: the trait bounds.
    Bounds(Vec<PathRef>),
    /// `Self`.
    SelfType,
    /// The type of field `field` of the type `owner`: a binding of a pattern (`Tag::Heading { level, .. }`: owner
    /// `Tag`, field `Heading::level`; `Point(x, _)`: owner `Point`, field `0`), or a field access on a value of known
    /// type (`store.entries`, `self.inner.entries`, `let e = &self.entries`).
    Field {
        owner: Box<TyRef>,
        field: String,
    },
    /// A std container or guard whose contents a known method reaches: `Mutex<T>` (`lock()`), `RwLock<T>`,
    /// `RefCell<T>` (`borrow()`), `Option<T>` and `Result<T, _>` (`unwrap()`, `?`); a guard (`MutexGuard`, `Ref`)
    /// derefs to `inner`. Only the types of fields, parameters, annotated `let`s and return types keep these.
    Wrapped {
        wrapper: String,
        inner: Box<TyRef>,
    },
    /// What `receiver.method(..)` returns: the workspace method's declared return type, or std's rule for a
    /// wrapper (`lock`, `unwrap`, `as_ref`, `clone`, ...). Reduced by `analysis::returns`.
    MethodResult {
        receiver: Box<TyRef>,
        method: String,
    },
    /// What calling the function at this path returns (`make()`, `store::open(..)`): its declared return type.
    CallResult(PathRef),
    /// `expr?`: the `Ok` or `Some` value of `expr`'s type.
    Tried(Box<TyRef>),
    /// Evidently a std value, as [`Receiver::Std`] (a local bound to `x.to_string()`, `s.chars()`, a literal), or a
    /// slice or array ([`SLICE`]).
    Std(&'static str),
    Unknown,
}

impl TyRef {
    /// A type known only once calls are resolved: a result, or `?` applied to one.
    pub(super) fn is_derived(&self) -> bool {
        matches!(self, TyRef::MethodResult { .. } | TyRef::CallResult(_) | TyRef::Tried(_))
    }
}

/// What the extraction knows about a method call's receiver.
#[derive(Debug, Clone)]
pub enum Receiver {
    Type(TyRef),
    /// `self.field`
    SelfField(String),
    /// A type guessed from a constructor-like call (`T::new(..)`, `T::open(..)`): it may really be
    /// `Result<T, _>` or anything else, so a missing method is not worth a note.
    Guessed(TyRef),
    /// Evidently a standard-library value: a literal, `format!(..)`, or what a std adaptor (`.enumerate()`,
    /// `.chars()`, `.to_string()`, ...) returns: the std type's name when the syntax shows it (`str`, `Vec`,
    /// `String`, `u8`; `{integer}` and `{float}` for unsuffixed literals), else empty. Only workspace impls on std
    /// types and blanket impls can add methods to it.
    Std(&'static str),
    Unknown,
}

#[derive(Debug, Clone)]
pub enum CallKind {
    /// `a::b::f(..)` when `called`, or `a::b::f` used as a value.
    Path { path: PathRef, args: usize, called: bool },
    /// `<T as Trait>::m(..)` or `<T>::m(..)`.
    Qualified { self_ty: TyRef, trait_path: Option<PathRef>, name: String },
    /// `x.m(..)`; `args` is None when a macro's tokens had to be scanned.
    Method { name: String, args: Option<usize>, receiver: Receiver },
    /// An operator on a value whose type the syntax shows: `x[i]` is `Index::index`/`IndexMut::index_mut`.
    Operator { trait_name: &'static str, methods: &'static [&'static str], receiver: Receiver },
    /// `x.into()`: a `From::from` (or `Into::into`) impl whose source is the receiver's type and whose target is
    /// `target` when the code names it (the annotated `let` it initialises). `source` is the type's name when the
    /// syntax shows it but the receiver cannot (an enum variant: `Inner::Missing`, `Inner::Short { .. }`).
    Into { receiver: Receiver, source: Option<String>, target: Option<TyRef> },
}

#[derive(Debug, Clone)]
pub struct CallSite {
    pub line: u32,
    /// The call as written, shortened: `x.parse(..)`, `a::b(..)`.
    pub text: String,
    pub kind: CallKind,
    /// Calls inside the closures and function values passed as arguments (indices into the same function's
    /// calls): when the callee calls its parameter, these run under the callee.
    pub arg_calls: Vec<u32>,
    /// One of the arguments is a parameter of the enclosing function, passed on (a callback forwarded).
    pub forwards_param: bool,
    /// Calls whose result is passed directly as an argument (`block_on(fetch(x))`): when one is an async fn and
    /// the callee polls or awaits its parameter, the future's body runs under the callee.
    pub arg_futures: Vec<u32>,
}

#[derive(Debug, Clone)]
pub struct ProbeDraft {
    pub kind: ProbeKind,
    /// 1-based line of `open`.
    pub line: u32,
    pub open: usize,
    pub close: usize,
    pub return_type: Option<String>,
    pub errs: crate::plan::ErrCounting,
    /// The body can run in the runtime's closure (`plan::ProbeSite::body_in_closure`).
    pub body_in_closure: bool,
    /// The body may be written twice (`plan::ProbeSite::body_twice`).
    pub body_twice: bool,
}

#[derive(Debug, Clone, Default)]
pub struct FnItem {
    pub name: String,
    pub line: u32,
    /// Why this function can never take a probe (const fn, `#[naked]`, extern block item, ...).
    pub skip: Option<SkipReason>,
    /// Only compiled for tests (`#[test]`, inside `#[cfg(test)]`): never an over-approximation candidate.
    pub test_only: bool,
    /// Its own `#[cfg(..)]` (those of enclosing items are theirs), evaluated per crate by the index.
    pub cfg: Option<Cfg>,
    pub has_self: bool,
    /// Parameters other than `self`.
    pub arity: usize,
    pub probe: Option<ProbeDraft>,
    pub calls: std::sync::Arc<[CallSite]>,
    /// Calls that may run a closure or future on another thread or task (resolved by [`super::spawns`]).
    pub spawns: Vec<super::spawns::SpawnDraft>,
    /// Items declared inside the body (nested functions, impls, `use`s).
    pub body_items: Option<Box<ModItems>>,
    /// Generic parameters in scope (the impl's and the function's) with their trait bounds.
    pub generics: Vec<(String, Vec<PathRef>)>,
    /// The body calls one of its parameters (`f(x)`, `f.call(..)`): closures and functions passed to it run
    /// under it.
    pub calls_params: bool,
    /// The body awaits one of its parameters or polls a future (`fut.as_mut().poll(cx)`): futures passed to it
    /// run under it.
    pub polls_params: bool,
    /// For a body with no loop, closure, `async`/`.await` and no macro but [`CHEAP_MACROS`] and those of
    /// `straight_line_macros`: how many statements it has, nested blocks included. `None` for any other body. Its
    /// calls are in `calls`.
    pub straight_line_stmts: Option<u32>,
    /// As `straight_line_stmts`, but closures written as call arguments allowed (not counted, their calls in the
    /// call site's `arg_calls`): what a forwarder may be (`trivial::forwarded_callees`).
    pub forwarding_stmts: Option<u32>,
    /// The other macros a straight-line body invokes (by last path segment), with arguments that parse as
    /// expressions: it runs straight through only if each is a workspace macro whose rules do
    /// (`ModItems::macro_rules`; serde_json's `tri!`, its own `?`).
    pub straight_line_macros: Vec<String>,
    /// Parameters taken by value whose drop may run code: the type's last path segment (`Self` for `self`), or
    /// `?` when the type is not a plain path. References and primitive types are left out.
    pub value_params: Vec<String>,
    /// The declared return type (wrappers kept), for the receivers of its results: `make().go()`.
    pub returns: Option<TyRef>,
    /// It returns a closure or an `impl Trait` value built without a loop of its own, or only stores its arguments
    /// in the struct it returns: the work runs when the value is used ([`super::deferred`]).
    pub builds_for_later: bool,
}

#[derive(Debug, Clone)]
pub enum UseKind {
    /// `use a::b as alias;` (alias = last segment when not renamed).
    Name(String),
    Glob,
}

#[derive(Debug, Clone)]
pub struct UseItem {
    pub path: PathRef,
    pub kind: UseKind,
}

#[derive(Debug, Clone)]
pub struct TypeItem {
    pub name: String,
    pub fields: Vec<(String, TyRef)>,
    /// `type X = Y;`
    pub alias: Option<TyRef>,
    /// `#[derive(.., Copy, ..)]`: dropping a value of it runs no code.
    pub is_copy: bool,
    /// Fields whose type is one of the type's own generic parameters (`read: R`, `inner: Box<R>`), with that
    /// parameter's position among the type parameters: an impl's self type (`impl<R: Read> Parser<R>`) says
    /// what the parameter is there, so `self.read.peek()` dispatches through the impl's bounds.
    pub generic_fields: Vec<(String, usize)>,
}

#[derive(Debug, Clone)]
pub struct TraitItemInfo {
    pub name: String,
    /// Every method the trait declares (with or without a default body).
    pub method_names: Vec<String>,
    /// The methods with default bodies.
    pub defaults: Vec<FnItem>,
    pub supertraits: Vec<PathRef>,
    pub test_only: bool,
    pub cfg: Option<Cfg>,
}

#[derive(Debug, Clone)]
pub struct ImplItemInfo {
    pub self_ty: TyRef,
    /// The self type as written, generic arguments included (`Vec<u8>`), for names of impls on foreign types.
    pub self_ty_text: String,
    pub trait_path: Option<PathRef>,
    /// The trait's generic arguments as written (`<i64>` in `impl From<i64> for Value`), empty without: they tell
    /// apart the names of one type's impls of a generic trait.
    pub trait_args: String,
    /// `type Target = X;` (a `Deref` impl's target): the type auto-deref reaches.
    pub deref_target: Option<TyRef>,
    pub fns: Vec<FnItem>,
    pub cfg: Option<Cfg>,
}

#[derive(Debug, Clone)]
pub enum ModKind {
    Inline(Box<ModItems>),
    /// `mod x;`: `decl` numbers the out-of-line declarations of one file in source order.
    External {
        decl: usize,
    },
}

#[derive(Debug, Clone)]
pub struct ModItem {
    pub name: String,
    pub line: u32,
    pub path_attr: Option<String>,
    pub test_only: bool,
    pub cfg: Option<Cfg>,
    pub kind: ModKind,
}

pub use crate::plan::AllocatorSite;

#[derive(Debug, Clone, Default)]
pub struct ModItems {
    pub uses: Vec<UseItem>,
    pub fns: Vec<FnItem>,
    pub impls: Vec<ImplItemInfo>,
    pub traits: Vec<TraitItemInfo>,
    pub types: Vec<TypeItem>,
    pub mods: Vec<ModItem>,
    pub global_allocators: Vec<AllocatorSite>,
    /// A file's `macro_rules!` macros (set on the file's top-level items only), each with whether its rules run
    /// straight through (`items::straight_macros`): no loop, closure, call, item, or macro but such ones.
    pub macro_rules: Vec<(String, bool)>,
}

/// What one file contributes to the index.
#[derive(Debug, Clone, Default)]
pub struct FileSummary {
    pub items: ModItems,
    pub lines: usize,
}

pub(super) fn line_of(span: Span) -> u32 {
    span.start().line as u32
}

pub(super) fn bounds_of<'a>(bounds: impl Iterator<Item = &'a TypeParamBound>) -> Vec<PathRef> {
    bounds
        .filter_map(|b| match b {
            TypeParamBound::Trait(t) => Some(PathRef::from_syn(&t.path)),
            _ => None,
        })
        .collect()
}

pub(super) fn ty_ref(ty: &Type, generics: &[(String, Vec<PathRef>)]) -> TyRef {
    ty_ref_of(ty, generics, false)
}

/// The type of a value (a field, a parameter, an annotated `let`, a return type): [`ty_ref`], with std wrappers
/// kept as [`TyRef::Wrapped`] so `lock()`, `borrow()`, `unwrap()` and `?` can reach their contents.
pub(super) fn value_ty_ref(ty: &Type, generics: &[(String, Vec<PathRef>)]) -> TyRef {
    ty_ref_of(ty, generics, true)
}

fn ty_ref_of(ty: &Type, generics: &[(String, Vec<PathRef>)], keep_wrappers: bool) -> TyRef {
    let ty_ref = |ty: &Type, generics: &[(String, Vec<PathRef>)]| ty_ref_of(ty, generics, keep_wrappers);
    match ty {
        Type::Reference(r) => ty_ref(&r.elem, generics),
        Type::Paren(p) => ty_ref(&p.elem, generics),
        Type::Group(g) => ty_ref(&g.elem, generics),
        // `haystack: &[u8]`: std's slice methods, or a workspace impl on a slice or array.
        Type::Slice(_) | Type::Array(_) if keep_wrappers => TyRef::Std(SLICE),
        Type::Ptr(_) if keep_wrappers => TyRef::Std(RAW_POINTER),
        Type::Path(tp) if tp.qself.is_none() => {
            let path = &tp.path;
            if let Some(ident) = path.get_ident() {
                if ident == "Self" {
                    return TyRef::SelfType;
                }
                if let Some((_, bounds)) = generics.iter().find(|(n, _)| ident == n) {
                    return TyRef::Bounds(bounds.clone());
                }
            }
            if let Some(last) = path.segments.last() {
                let first_arg = match &last.arguments {
                    syn::PathArguments::AngleBracketed(args) => args.args.iter().find_map(|a| match a {
                        syn::GenericArgument::Type(inner) => Some(inner),
                        _ => None,
                    }),
                    _ => None,
                };
                if let Some(inner) = first_arg {
                    if SMART_POINTERS.iter().any(|s| last.ident == s) {
                        return ty_ref(inner, generics);
                    }
                    if keep_wrappers && STD_WRAPPERS.iter().any(|s| last.ident == s) {
                        let inner = Box::new(ty_ref(inner, generics));
                        return TyRef::Wrapped { wrapper: last.ident.to_string(), inner };
                    }
                }
            }
            TyRef::Path(PathRef::from_syn(path))
        }
        Type::TraitObject(t) => TyRef::Bounds(bounds_of(t.bounds.iter())),
        Type::ImplTrait(t) => TyRef::Bounds(bounds_of(t.bounds.iter())),
        _ => TyRef::Unknown,
    }
}

/// `State(state): State<AppState>`, `Json(body): Json<Request>`: a one-field wrapper destructured where it is
/// declared binds its type argument, by the extractors' convention (axum, actix-web). The binding's name and type.
pub(super) fn newtype_binding(
    pat: &syn::Pat,
    ty: &Type,
    generics: &[(String, Vec<PathRef>)],
) -> Option<(String, TyRef)> {
    let syn::Pat::TupleStruct(ts) = pat else { return None };
    let [syn::Pat::Ident(binding)] = ts.elems.iter().collect::<Vec<_>>().as_slice() else { return None };
    let Type::Path(tp) = ty else { return None };
    let (pat_last, ty_last) = (ts.path.segments.last()?, tp.path.segments.last()?);
    if pat_last.ident != ty_last.ident || binding.subpat.is_some() {
        return None;
    }
    let syn::PathArguments::AngleBracketed(args) = &ty_last.arguments else { return None };
    let [syn::GenericArgument::Type(inner)] = args.args.iter().collect::<Vec<_>>().as_slice() else { return None };
    Some((binding.ident.to_string(), value_ty_ref(inner, generics)))
}

/// Compact text of a type as written: tokens joined without the spaces quote adds.
pub(super) fn type_text(ty: &Type) -> String {
    tokens_text(&quote::ToTokens::to_token_stream(ty))
}

/// A type's or generic arguments' text without its lifetimes, as rustc names an impl's methods: `&'i str` reads
/// `&str`, `Cow<'a, str>` `Cow<str>`, `Token<'a>` `Token`, `dyn Fn() + 'a` `dyn Fn()`. A char literal (`'x'`) stays.
pub(super) fn without_lifetimes(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let starts_name = chars.get(i + 1).is_some_and(|&n| n.is_alphabetic() || n == '_');
        if c != '\'' || !starts_name {
            out.push(c);
            i += 1;
            continue;
        }
        let mut end = i + 1;
        while chars.get(end).is_some_and(|&n| n.is_alphanumeric() || n == '_') {
            end += 1;
        }
        if chars.get(end) == Some(&'\'') {
            // A char literal such as 'x'.
            out.extend(&chars[i..=end]);
            i = end + 1;
            continue;
        }
        // The lifetime goes with what only it needs: the separator after it, or the `+` before it.
        i = end;
        if chars.get(i) == Some(&',') {
            i += 1;
        }
        while chars.get(i) == Some(&' ') {
            i += 1;
        }
        if out.ends_with('+') {
            out.pop();
        }
        if out.ends_with('<') && chars.get(i) == Some(&'>') {
            out.pop();
            i += 1;
        }
    }
    out
}

pub(super) use quote_free::tokens_text;

mod quote_free {
    use proc_macro2::{Delimiter, TokenStream, TokenTree};

    /// Prints tokens with a space only between two words, so `Vec < u8 >` reads `Vec<u8>`.
    pub fn tokens_text(tokens: &TokenStream) -> String {
        let mut out = String::new();
        push(tokens, &mut out);
        out
    }

    fn push(tokens: &TokenStream, out: &mut String) {
        for tt in tokens.clone() {
            match tt {
                TokenTree::Group(g) => {
                    let (open, close) = match g.delimiter() {
                        Delimiter::Parenthesis => ("(", ")"),
                        Delimiter::Brace => ("{", "}"),
                        Delimiter::Bracket => ("[", "]"),
                        Delimiter::None => ("", ""),
                    };
                    out.push_str(open);
                    push(&g.stream(), out);
                    out.push_str(close);
                }
                TokenTree::Ident(i) => {
                    if out.ends_with(|c: char| c.is_alphanumeric() || c == '_') {
                        out.push(' ');
                    }
                    out.push_str(&i.to_string());
                }
                TokenTree::Punct(p) => {
                    if p.as_char() == ',' {
                        out.push_str(", ");
                    } else {
                        out.push(p.as_char());
                    }
                }
                TokenTree::Literal(l) => {
                    if out.ends_with(|c: char| c.is_alphanumeric() || c == '_') {
                        out.push(' ');
                    }
                    out.push_str(&l.to_string());
                }
            }
        }
    }
}

pub(super) fn macro_name(mac: &syn::Macro) -> String {
    mac.path.segments.last().map(|s| s.ident.to_string()).unwrap_or_default()
}

pub(super) fn count_args(tokens: &TokenStream) -> usize {
    let mut n = 0;
    let mut any = false;
    for tt in tokens.clone() {
        any = true;
        if matches!(tt, TokenTree::Punct(ref p) if p.as_char() == ',') {
            n += 1;
        }
    }
    if any {
        n + 1
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::without_lifetimes;

    #[test]
    fn lifetimes_leave_a_types_text_as_rustc_names_it() {
        let cases = [
            ("&'i str", "&str"),
            ("&'b mut R", "&mut R"),
            ("Cow<'a, str>", "Cow<str>"),
            ("Token<'a>", "Token"),
            ("Pair<'a, 'b>", "Pair"),
            ("Box<dyn Fn()+'static>", "Box<dyn Fn()>"),
            ("[char;LEN]", "[char;LEN]"),
            ("Matcher<'x'>", "Matcher<'x'>"),
            ("<'a>", ""),
        ];
        for (text, expected) in cases {
            assert_eq!(without_lifetimes(text), expected, "{text}");
        }
    }
}
