//! Per-file extraction: parses one source file with syn and keeps only what the index needs (items, `use`s,
//! signatures, call sites, probe offsets) as plain data.
//!
//! Everything that touches a span happens here, on the thread that parsed the file: proc-macro2's fallback source
//! map is thread-local, so spans must be turned into lines and byte offsets before the file's work item ends.

use std::collections::HashMap;

use proc_macro2::{Delimiter, Span, TokenStream, TokenTree};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::visit::Visit;
use syn::{Attribute, Expr, FnArg, ImplItem, Item, Pat, ReturnType, Stmt, TraitItem, Type, TypeParamBound};

use crate::plan::ProbeKind;

/// A path as written, without generic arguments: `a::b::c`, `::x`, `crate::m::f`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PathRef {
    pub segs: Vec<String>,
    pub leading_colon: bool,
}

impl PathRef {
    fn from_syn(path: &syn::Path) -> PathRef {
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
    /// The type of field `field` of the type `owner` names: a binding of a pattern (`Tag::Heading { level, .. }`:
    /// owner `Tag`, field `Heading::level`; `Point(x, _)`: owner `Point`, field `0`).
    Field {
        owner: PathRef,
        field: String,
    },
    Unknown,
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
    /// `.chars()`, `.to_string()`, ...) returns. Only workspace traits with blanket impls can add methods to it.
    Std,
    Unknown,
}

/// Methods whose result is a std type whatever they are called on (iterator adaptors, string views).
const STD_RESULT_METHODS: &[&str] = &[
    "enumerate",
    "zip",
    "chain",
    "rev",
    "skip",
    "take",
    "peekable",
    "cloned",
    "copied",
    "filter",
    "filter_map",
    "flat_map",
    "skip_while",
    "take_while",
    "step_by",
    "windows",
    "chunks",
    "chars",
    "bytes",
    "lines",
    "split_whitespace",
    "char_indices",
    "to_string",
    "to_lowercase",
    "to_uppercase",
    "trim",
    "trim_start",
    "trim_end",
    "as_str",
    "as_bytes",
    "len",
    "is_empty",
    "is_some",
    "is_none",
    "is_ok",
    "is_err",
];

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
    pub open: usize,
    pub close: usize,
    pub return_type: Option<String>,
}

#[derive(Debug, Clone, Default)]
pub struct FnItem {
    pub name: String,
    pub line: u32,
    /// Why this function can never take a probe (const fn, `#[naked]`, extern block item, ...).
    pub skip: Option<String>,
    /// Only compiled for tests (`#[test]`, inside `#[cfg(test)]`): never an over-approximation candidate.
    pub test_only: bool,
    pub has_self: bool,
    /// Parameters other than `self`.
    pub arity: usize,
    pub probe: Option<ProbeDraft>,
    pub calls: std::sync::Arc<[CallSite]>,
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
    /// For a body with no loop, closure, `async`/`.await` and no macro but [`CHEAP_MACROS`]: how many statements it
    /// has, nested blocks included. `None` for any other body. Its calls are in `calls`.
    pub straight_line_stmts: Option<u32>,
    /// Parameters taken by value whose drop may run code: the type's last path segment (`Self` for `self`), or
    /// `?` when the type is not a plain path. References and primitive types are left out.
    pub value_params: Vec<String>,
}

/// The receiver text of a method called on a range expression.
pub const RANGE_RECEIVER: &str = "(..)";

/// Macros that expand to a few comparisons (or to nothing in release builds), or that only run on the way to a
/// panic: allowed in a trivial body (the calls in their arguments are judged like any other call).
pub const CHEAP_MACROS: &[&str] = &[
    "matches",
    "debug_assert",
    "debug_assert_eq",
    "debug_assert_ne",
    "assert",
    "panic",
    "unreachable",
    "unimplemented",
    "todo",
];

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
}

#[derive(Debug, Clone)]
pub struct ImplItemInfo {
    pub self_ty: TyRef,
    /// The self type as written, generic arguments included (`Vec<u8>`), for names of impls on foreign types.
    pub self_ty_text: String,
    pub trait_path: Option<PathRef>,
    pub fns: Vec<FnItem>,
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
    pub kind: ModKind,
}

#[derive(Debug, Clone, Default)]
pub struct ModItems {
    pub uses: Vec<UseItem>,
    pub fns: Vec<FnItem>,
    pub impls: Vec<ImplItemInfo>,
    pub traits: Vec<TraitItemInfo>,
    pub types: Vec<TypeItem>,
    pub mods: Vec<ModItem>,
}

/// What one file contributes to the index.
#[derive(Debug, Clone, Default)]
pub struct FileSummary {
    pub items: ModItems,
    pub lines: usize,
}

/// Parses `text` (the whole file as on disk) and extracts its summary. A parse error is returned as
/// `(line, message)`.
pub fn extract_file(text: &str) -> Result<FileSummary, (usize, String)> {
    // syn::parse_file strips a BOM and a shebang line; do the same here so that every offset can be shifted back
    // to the file as it is on disk.
    let mut base = 0;
    let mut content = text;
    if let Some(rest) = content.strip_prefix('\u{feff}') {
        base += '\u{feff}'.len_utf8();
        content = rest;
    }
    if content.starts_with("#!") && !content[2..].trim_start().starts_with('[') {
        let end = content.find('\n').unwrap_or(content.len());
        base += end;
        content = &content[end..];
    }
    let result = match syn::parse_str::<syn::File>(content) {
        Ok(file) => {
            let mut statics = HashMap::new();
            lazy_statics(&file.items, &mut statics);
            let mut ex = Extractor { base, in_macro: None, next_decl: 0, statics };
            let mut items = ModItems::default();
            ex.items(&file.items, &mut items, &Scope::default());
            Ok(FileSummary { items, lines: text.lines().count() })
        }
        Err(err) => Err((err.span().start().line, err.to_string())),
    };
    // The summary holds no spans: drop this file from the thread's source map so it does not grow without bound.
    proc_macro2::extra::invalidate_current_thread_spans();
    result
}

/// Context inherited by nested items.
#[derive(Clone, Default)]
struct Scope {
    test_only: bool,
    generics: Vec<(String, Vec<PathRef>)>,
}

struct Extractor {
    /// Bytes syn never saw (BOM, shebang) to add to every offset.
    base: usize,
    /// Set while extracting items found inside an item macro invocation: their functions get no probe.
    in_macro: Option<String>,
    /// Numbers the out-of-line `mod x;` declarations of the file in source order.
    next_decl: usize,
    /// Initializers of the file's `thread_local!` and `lazy_static!` statics by name: they run lazily, inside the
    /// first access (`X.with(..)`, `*X`), so their calls are calls of every function of the file that names `X`.
    statics: HashMap<String, Expr>,
}

/// Collects the initializers of `thread_local! { static X: T = init; }` and `lazy_static! { static ref X: T =
/// init; }` in `items` and their inline modules.
fn lazy_statics(items: &[Item], out: &mut HashMap<String, Expr>) {
    for item in items {
        match item {
            Item::Macro(m)
                if m.mac
                    .path
                    .segments
                    .last()
                    .is_some_and(|s| s.ident == "thread_local" || s.ident == "lazy_static") =>
            {
                let tts: Vec<TokenTree> = m.mac.tokens.clone().into_iter().collect();
                let mut i = 0;
                while i < tts.len() {
                    if !matches!(&tts[i], TokenTree::Ident(id) if id == "static") {
                        i += 1;
                        continue;
                    }
                    i += 1;
                    if matches!(tts.get(i), Some(TokenTree::Ident(id)) if id == "ref") {
                        i += 1;
                    }
                    let Some(TokenTree::Ident(name)) = tts.get(i) else { continue };
                    let is_punct = |t: &TokenTree, c: char| matches!(t, TokenTree::Punct(p) if p.as_char() == c);
                    let Some(eq) = (i..tts.len()).find(|&j| is_punct(&tts[j], '=')) else { break };
                    let end = (eq..tts.len()).find(|&j| is_punct(&tts[j], ';')).unwrap_or(tts.len());
                    let mut init: TokenStream = tts[eq + 1..end].iter().cloned().collect();
                    // `= const { expr }`
                    if let [TokenTree::Ident(c), TokenTree::Group(g)] = &tts[eq + 1..end] {
                        if c == "const" {
                            init = g.stream();
                        }
                    }
                    if let Ok(expr) = syn::parse2::<Expr>(init) {
                        out.insert(name.to_string(), expr);
                    }
                    i = end;
                }
            }
            Item::Mod(m) => {
                if let Some((_, inner)) = &m.content {
                    lazy_statics(inner, out);
                }
            }
            _ => {}
        }
    }
}

fn line_of(span: Span) -> u32 {
    span.start().line as u32
}

fn is_test_attr(attr: &Attribute) -> bool {
    attr.path().segments.last().is_some_and(|s| s.ident == "test")
}

/// `#[cfg(test)]` or `#[cfg(all(test, ...))]`: compiled only for tests.
fn is_cfg_test(attrs: &[Attribute]) -> bool {
    attrs.iter().any(|attr| {
        if !attr.path().is_ident("cfg") {
            return false;
        }
        let Ok(list) = attr.meta.require_list() else { return false };
        let tokens: Vec<TokenTree> = list.tokens.clone().into_iter().collect();
        match tokens.as_slice() {
            [TokenTree::Ident(i)] => i == "test",
            [TokenTree::Ident(all), TokenTree::Group(g)] if all == "all" => {
                let mut depth_tokens = g.stream().into_iter();
                depth_tokens.any(|t| matches!(t, TokenTree::Ident(ref i) if i == "test"))
            }
            _ => false,
        }
    })
}

fn path_attr(attrs: &[Attribute]) -> Option<String> {
    attrs.iter().find(|a| a.path().is_ident("path")).and_then(|a| match &a.meta {
        syn::Meta::NameValue(nv) => match &nv.value {
            Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) => Some(s.value()),
            _ => None,
        },
        _ => None,
    })
}

fn generics_of(generics: &syn::Generics) -> Vec<(String, Vec<PathRef>)> {
    let mut out: Vec<(String, Vec<PathRef>)> = Vec::new();
    for param in generics.type_params() {
        out.push((param.ident.to_string(), bounds_of(param.bounds.iter())));
    }
    if let Some(where_clause) = &generics.where_clause {
        for pred in &where_clause.predicates {
            if let syn::WherePredicate::Type(pt) = pred {
                if let Type::Path(tp) = &pt.bounded_ty {
                    if let Some(ident) = tp.path.get_ident() {
                        let name = ident.to_string();
                        let bounds = bounds_of(pt.bounds.iter());
                        // Only the declared parameters: `where Concrete: Trait` says nothing about a parameter.
                        if let Some((_, b)) = out.iter_mut().find(|(n, _)| *n == name) {
                            b.extend(bounds);
                        }
                    }
                }
            }
        }
    }
    out
}

fn bounds_of<'a>(bounds: impl Iterator<Item = &'a TypeParamBound>) -> Vec<PathRef> {
    bounds
        .filter_map(|b| match b {
            TypeParamBound::Trait(t) => Some(PathRef::from_syn(&t.path)),
            _ => None,
        })
        .collect()
}

fn ty_ref(ty: &Type, generics: &[(String, Vec<PathRef>)]) -> TyRef {
    match ty {
        Type::Reference(r) => ty_ref(&r.elem, generics),
        Type::Paren(p) => ty_ref(&p.elem, generics),
        Type::Group(g) => ty_ref(&g.elem, generics),
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
                let smart = ["Box", "Rc", "Arc"];
                if smart.iter().any(|s| last.ident == s) {
                    if let syn::PathArguments::AngleBracketed(args) = &last.arguments {
                        if let Some(syn::GenericArgument::Type(inner)) = args.args.first() {
                            return ty_ref(inner, generics);
                        }
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

/// Compact text of a type as written: tokens joined without the spaces quote adds.
fn type_text(ty: &Type) -> String {
    use quote_free::tokens_text;
    tokens_text(&quote::ToTokens::to_token_stream(ty))
}

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

impl Extractor {
    fn off(&self, offset: usize) -> usize {
        self.base + offset
    }

    fn items(&mut self, items: &[Item], out: &mut ModItems, scope: &Scope) {
        for item in items {
            self.item(item, out, scope);
        }
    }

    fn item(&mut self, item: &Item, out: &mut ModItems, scope: &Scope) {
        match item {
            Item::Fn(f) => {
                let test_only = scope.test_only || is_cfg_test(&f.attrs) || f.attrs.iter().any(is_test_attr);
                let generics = generics_of(&f.sig.generics);
                let fn_scope = Scope { test_only, generics: [scope.generics.clone(), generics].concat() };
                let item = self.function(&f.attrs, &f.sig, Some(&f.block), &fn_scope);
                out.fns.push(item);
            }
            Item::Impl(imp) => {
                let test_only = scope.test_only || is_cfg_test(&imp.attrs);
                let impl_generics = [scope.generics.clone(), generics_of(&imp.generics)].concat();
                let mut info = ImplItemInfo {
                    self_ty: ty_ref(&imp.self_ty, &impl_generics),
                    self_ty_text: type_text(&imp.self_ty),
                    trait_path: imp.trait_.as_ref().map(|(_, p, _)| PathRef::from_syn(p)),
                    fns: Vec::new(),
                };
                for ii in &imp.items {
                    match ii {
                        ImplItem::Fn(m) => {
                            let test_only = test_only || is_cfg_test(&m.attrs) || m.attrs.iter().any(is_test_attr);
                            let generics = [impl_generics.clone(), generics_of(&m.sig.generics)].concat();
                            let fn_scope = Scope { test_only, generics };
                            info.fns.push(self.function(&m.attrs, &m.sig, Some(&m.block), &fn_scope));
                        }
                        ImplItem::Macro(m) => {
                            if let Ok(items) = m.mac.parse_body_with(parse_impl_items) {
                                let name = macro_name(&m.mac);
                                let saved = self.in_macro.replace(name);
                                for ii in &items {
                                    if let ImplItem::Fn(f) = ii {
                                        let fn_scope = Scope { test_only, generics: impl_generics.clone() };
                                        info.fns.push(self.function(&f.attrs, &f.sig, Some(&f.block), &fn_scope));
                                    }
                                }
                                self.in_macro = saved;
                            }
                        }
                        _ => {}
                    }
                }
                out.impls.push(info);
            }
            Item::Trait(t) => {
                let test_only = scope.test_only || is_cfg_test(&t.attrs);
                let trait_generics = [scope.generics.clone(), generics_of(&t.generics)].concat();
                let mut info = TraitItemInfo {
                    name: t.ident.to_string(),
                    method_names: Vec::new(),
                    defaults: Vec::new(),
                    supertraits: bounds_of(t.supertraits.iter()),
                    test_only,
                };
                for ti in &t.items {
                    if let TraitItem::Fn(m) = ti {
                        info.method_names.push(m.sig.ident.to_string());
                        if let Some(block) = &m.default {
                            let generics = [trait_generics.clone(), generics_of(&m.sig.generics)].concat();
                            let fn_scope = Scope { test_only, generics };
                            info.defaults.push(self.function(&m.attrs, &m.sig, Some(block), &fn_scope));
                        }
                    }
                }
                out.traits.push(info);
            }
            Item::Mod(m) => {
                let test_only = scope.test_only || is_cfg_test(&m.attrs);
                let kind = match &m.content {
                    Some((_, items)) => {
                        let mut inner = ModItems::default();
                        let mod_scope = Scope { test_only, generics: Vec::new() };
                        self.items(items, &mut inner, &mod_scope);
                        ModKind::Inline(Box::new(inner))
                    }
                    None => {
                        self.next_decl += 1;
                        ModKind::External { decl: self.next_decl - 1 }
                    }
                };
                out.mods.push(ModItem {
                    name: m.ident.to_string(),
                    line: line_of(m.ident.span()),
                    path_attr: path_attr(&m.attrs),
                    test_only,
                    kind,
                });
            }
            Item::Use(u) => {
                let mut prefix = PathRef { segs: Vec::new(), leading_colon: u.leading_colon.is_some() };
                flatten_use(&u.tree, &mut prefix, &mut out.uses);
            }
            Item::ExternCrate(e) => {
                let name = e.ident.to_string();
                let alias = e.rename.as_ref().map(|(_, i)| i.to_string()).unwrap_or_else(|| name.clone());
                if name == "self" {
                    out.uses.push(UseItem {
                        path: PathRef { segs: vec!["crate".into()], leading_colon: false },
                        kind: UseKind::Name(alias),
                    });
                } else {
                    out.uses.push(UseItem {
                        path: PathRef { segs: vec![name], leading_colon: true },
                        kind: UseKind::Name(alias),
                    });
                }
            }
            Item::Struct(s) => {
                let generics = generics_of(&s.generics);
                let fields = s
                    .fields
                    .iter()
                    .enumerate()
                    .map(|(i, f)| {
                        let name = f.ident.as_ref().map(|i| i.to_string()).unwrap_or_else(|| i.to_string());
                        (name, ty_ref(&f.ty, &generics))
                    })
                    .collect();
                out.types.push(TypeItem {
                    name: s.ident.to_string(),
                    fields,
                    alias: None,
                    is_copy: derives_copy(&s.attrs),
                });
            }
            Item::Union(u) => {
                let generics = generics_of(&u.generics);
                let fields = u
                    .fields
                    .named
                    .iter()
                    .filter_map(|f| f.ident.as_ref().map(|i| (i.to_string(), ty_ref(&f.ty, &generics))))
                    .collect();
                out.types.push(TypeItem {
                    name: u.ident.to_string(),
                    fields,
                    alias: None,
                    is_copy: derives_copy(&u.attrs),
                });
            }
            Item::Enum(e) => out.types.push(TypeItem {
                name: e.ident.to_string(),
                // Variant fields as `Variant::field` (`Variant::0`), for the bindings of patterns.
                fields: e
                    .variants
                    .iter()
                    .flat_map(|v| {
                        let generics = generics_of(&e.generics);
                        v.fields
                            .iter()
                            .enumerate()
                            .map(|(i, f)| {
                                let name = f.ident.as_ref().map(|i| i.to_string()).unwrap_or_else(|| i.to_string());
                                (format!("{}::{name}", v.ident), ty_ref(&f.ty, &generics))
                            })
                            .collect::<Vec<_>>()
                    })
                    .collect(),
                alias: None,
                is_copy: derives_copy(&e.attrs),
            }),
            Item::Type(t) => {
                let generics = generics_of(&t.generics);
                out.types.push(TypeItem {
                    name: t.ident.to_string(),
                    fields: Vec::new(),
                    alias: Some(ty_ref(&t.ty, &generics)),
                    is_copy: false,
                });
            }
            Item::ForeignMod(fm) => {
                for fi in &fm.items {
                    match fi {
                        syn::ForeignItem::Fn(f) => {
                            let mut item = self.function(&f.attrs, &f.sig, None, scope);
                            item.skip = Some("declared in an extern block".to_owned());
                            out.fns.push(item);
                        }
                        // syn keeps edition 2024's `safe fn` items as raw tokens: `... fn name (...) ...;`
                        syn::ForeignItem::Verbatim(tokens) => {
                            let tts: Vec<TokenTree> = tokens.clone().into_iter().collect();
                            let found = tts.windows(3).find_map(|w| match w {
                                [TokenTree::Ident(kw), TokenTree::Ident(name), TokenTree::Group(g)]
                                    if kw == "fn" && g.delimiter() == Delimiter::Parenthesis =>
                                {
                                    Some((name.clone(), count_args(&g.stream())))
                                }
                                _ => None,
                            });
                            if let Some((name, arity)) = found {
                                out.fns.push(FnItem {
                                    name: name.to_string(),
                                    line: line_of(name.span()),
                                    skip: Some("declared in an extern block".to_owned()),
                                    test_only: scope.test_only,
                                    arity,
                                    ..FnItem::default()
                                });
                            }
                        }
                        _ => {}
                    }
                }
            }
            Item::Macro(m) => {
                // `macro_rules!` bodies are templates, not code; other item macros often wrap plain items.
                if m.ident.is_some() || m.mac.path.is_ident("macro_rules") {
                    return;
                }
                if let Ok(file) = m.mac.parse_body::<syn::File>() {
                    let saved = self.in_macro.replace(macro_name(&m.mac));
                    self.items(&file.items, out, scope);
                    self.in_macro = saved;
                }
            }
            _ => {}
        }
    }

    fn function(
        &mut self,
        attrs: &[Attribute],
        sig: &syn::Signature,
        block: Option<&syn::Block>,
        scope: &Scope,
    ) -> FnItem {
        let mut item = FnItem {
            name: sig.ident.to_string(),
            line: line_of(sig.fn_token.span),
            test_only: scope.test_only,
            generics: scope.generics.clone(),
            ..FnItem::default()
        };
        for input in &sig.inputs {
            match input {
                FnArg::Receiver(r) => {
                    item.has_self = true;
                    if r.reference.is_none() && matches!(&*r.ty, Type::Path(p) if p.path.is_ident("Self")) {
                        item.value_params.push("Self".to_owned());
                    }
                }
                FnArg::Typed(pt) => {
                    item.arity += 1;
                    if let Some(name) = dropped_type(&pt.ty) {
                        item.value_params.push(name);
                    }
                }
            }
        }
        let naked = attrs.iter().any(|a| {
            a.path().is_ident("naked")
                || (a.path().is_ident("unsafe")
                    && a.meta.require_list().is_ok_and(|l| l.tokens.to_string().trim() == "naked"))
        });
        item.skip = if let Some(name) = &self.in_macro {
            Some(format!("generated by macro `{name}!`"))
        } else if attrs.iter().any(is_test_attr) {
            Some("#[test] function".to_owned())
        } else if scope.test_only {
            Some("compiled only for tests (#[cfg(test)])".to_owned())
        } else if sig.constness.is_some() {
            Some("const fn".to_owned())
        } else if naked {
            Some("#[naked] function".to_owned())
        } else {
            None
        };
        let Some(block) = block else { return item };
        item.probe = self.probe(attrs, sig, block, &mut item.skip);
        let mut body = BodyVisitor {
            ex: self,
            calls: Vec::new(),
            items: ModItems::default(),
            env: HashMap::new(),
            guessed: Default::default(),
            locals: Default::default(),
            generics: &scope.generics,
            test_only: scope.test_only,
            params: Default::default(),
            calls_params: false,
            polls_params: false,
            closure_calls: HashMap::new(),
            statics_seen: Default::default(),
        };
        for input in &sig.inputs {
            if let FnArg::Typed(pt) = input {
                let ty = ty_ref(&pt.ty, body.generics);
                if let Pat::Ident(pi) = &*pt.pat {
                    body.env.insert(pi.ident.to_string(), ty);
                    body.params.insert(pi.ident.to_string());
                }
                body.visit_pat(&pt.pat);
            }
        }
        body.visit_block(block);
        if sig.asyncness.is_none() {
            let mut shape = StraightLine { stmts: 0, straight: true };
            shape.visit_block(block);
            item.straight_line_stmts = shape.straight.then_some(shape.stmts);
        }
        let BodyVisitor { calls, items, calls_params, polls_params, .. } = body;
        item.calls = calls.into();
        item.calls_params = calls_params;
        item.polls_params = polls_params;
        let has_items = !(items.fns.is_empty()
            && items.impls.is_empty()
            && items.traits.is_empty()
            && items.mods.is_empty()
            && items.types.is_empty()
            && items.uses.is_empty());
        if has_items {
            item.body_items = Some(Box::new(items));
        }
        item
    }

    /// Where the probe goes. `skip` is set when the function returns a future that cannot be probed.
    fn probe(
        &self,
        attrs: &[Attribute],
        sig: &syn::Signature,
        block: &syn::Block,
        skip: &mut Option<String>,
    ) -> Option<ProbeDraft> {
        let brace_open = block.brace_token.span.open().byte_range().end;
        let inner_end = attrs
            .iter()
            .filter(|a| matches!(a.style, syn::AttrStyle::Inner(_)))
            .map(|a| a.span().byte_range().end)
            .max()
            .unwrap_or(0);
        let open = self.off(brace_open.max(inner_end));
        let close = self.off(block.brace_token.span.close().byte_range().start);
        if sig.asyncness.is_some() {
            return Some(ProbeDraft {
                kind: ProbeKind::Async,
                open,
                close,
                return_type: self.return_type(&sig.output),
            });
        }
        if let ReturnType::Type(_, ty) = &sig.output {
            if returns_future(ty) {
                if let Some(Stmt::Expr(Expr::Async(tail), None)) = block.stmts.last() {
                    return Some(ProbeDraft {
                        kind: ProbeKind::AsyncBlock,
                        open: self.off(tail.async_token.span.byte_range().start),
                        close: self.off(tail.block.brace_token.span.close().byte_range().end),
                        return_type: None,
                    });
                }
                if skip.is_none() {
                    *skip = Some(
                        "returns a future without an `async` tail block: a probe would time only its creation".into(),
                    );
                }
                return None;
            }
        }
        Some(ProbeDraft { kind: ProbeKind::Sync, open, close: open, return_type: None })
    }

    /// The declared return type with every `impl Trait` replaced by `_`; None for `()`.
    fn return_type(&self, output: &ReturnType) -> Option<String> {
        let ReturnType::Type(_, ty) = output else { return None };
        if let Type::Tuple(t) = &**ty {
            if t.elems.is_empty() {
                return None;
            }
        }
        let mut erase = ImplTraitRanges(Vec::new());
        erase.visit_type(ty);
        let mut text = String::new();
        write_type_erased(ty, &erase.0, &mut text);
        Some(text)
    }
}

fn parse_impl_items(input: syn::parse::ParseStream) -> syn::Result<Vec<ImplItem>> {
    let mut items = Vec::new();
    while !input.is_empty() {
        items.push(input.parse()?);
    }
    Ok(items)
}

/// The type name of a by-value parameter whose drop may run code, `?` when the type is not a plain path; `None`
/// for references, raw pointers, function pointers and primitive types.
fn dropped_type(ty: &Type) -> Option<String> {
    const PRIMITIVES: &[&str] = &[
        "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32", "i64", "i128", "isize", "f32", "f64", "bool",
        "char",
    ];
    match ty {
        Type::Reference(_) | Type::Ptr(_) | Type::BareFn(_) | Type::Never(_) => None,
        Type::Paren(p) => dropped_type(&p.elem),
        Type::Group(g) => dropped_type(&g.elem),
        Type::Path(p) if p.qself.is_none() => {
            let last = p.path.segments.last().map(|s| s.ident.to_string()).unwrap_or_default();
            (!PRIMITIVES.contains(&last.as_str())).then_some(last)
        }
        _ => Some("?".to_owned()),
    }
}

fn derives_copy(attrs: &[Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("derive")
            && a.parse_args_with(Punctuated::<syn::Path, syn::Token![,]>::parse_terminated)
                .is_ok_and(|paths| paths.iter().any(|p| p.segments.last().is_some_and(|s| s.ident == "Copy")))
    })
}

fn macro_name(mac: &syn::Macro) -> String {
    mac.path.segments.last().map(|s| s.ident.to_string()).unwrap_or_default()
}

/// `impl Future<..>`, `Pin<Box<dyn Future<..>>>`, `BoxFuture<..>`: a function that hands back a future.
fn returns_future(ty: &Type) -> bool {
    match ty {
        Type::ImplTrait(t) => t.bounds.iter().any(|b| match b {
            TypeParamBound::Trait(t) => t.path.segments.last().is_some_and(|s| s.ident == "Future"),
            _ => false,
        }),
        Type::Path(tp) => {
            let Some(last) = tp.path.segments.last() else { return false };
            if last.ident == "BoxFuture" || last.ident == "LocalBoxFuture" {
                return true;
            }
            if last.ident == "Pin" {
                if let syn::PathArguments::AngleBracketed(args) = &last.arguments {
                    return args.args.iter().any(|a| match a {
                        syn::GenericArgument::Type(inner) => contains_future(inner),
                        _ => false,
                    });
                }
            }
            false
        }
        _ => false,
    }
}

fn contains_future(ty: &Type) -> bool {
    let text = type_text(ty);
    text.contains("Future")
}

struct ImplTraitRanges(Vec<std::ops::Range<usize>>);

impl<'ast> Visit<'ast> for ImplTraitRanges {
    fn visit_type_impl_trait(&mut self, t: &'ast syn::TypeImplTrait) {
        // Outermost only: nested ones vanish with it.
        self.0.push(t.span().byte_range());
    }
}

/// The type's compact text with the given `impl Trait` ranges printed as `_`.
fn write_type_erased(ty: &Type, erased: &[std::ops::Range<usize>], out: &mut String) {
    if erased.is_empty() {
        out.push_str(&type_text(ty));
        return;
    }
    // Re-print token by token, replacing the tokens of an erased range with one `_`.
    let tokens = quote::ToTokens::to_token_stream(ty);
    let mut filtered = TokenStream::new();
    filter_tokens(tokens, erased, &mut filtered, &mut None);
    out.push_str(&quote_free::tokens_text(&filtered));
}

fn filter_tokens(
    tokens: TokenStream,
    erased: &[std::ops::Range<usize>],
    out: &mut TokenStream,
    current: &mut Option<usize>,
) {
    for tt in tokens {
        let start = tt.span().byte_range().start;
        if let Some(idx) = erased.iter().position(|r| r.contains(&start)) {
            if *current != Some(idx) {
                *current = Some(idx);
                out.extend([TokenTree::Ident(proc_macro2::Ident::new("_", Span::call_site()))]);
            }
            continue;
        }
        *current = None;
        match tt {
            TokenTree::Group(g) => {
                let mut inner = TokenStream::new();
                filter_tokens(g.stream(), erased, &mut inner, &mut None);
                out.extend([TokenTree::Group(proc_macro2::Group::new(g.delimiter(), inner))]);
            }
            other => out.extend([other]),
        }
    }
}

fn flatten_use(tree: &syn::UseTree, prefix: &mut PathRef, out: &mut Vec<UseItem>) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.segs.push(p.ident.to_string());
            flatten_use(&p.tree, prefix, out);
            prefix.segs.pop();
        }
        syn::UseTree::Name(n) => {
            let name = n.ident.to_string();
            if name == "self" {
                if let Some(last) = prefix.segs.last() {
                    out.push(UseItem { path: prefix.clone(), kind: UseKind::Name(last.clone()) });
                }
            } else {
                let mut path = prefix.clone();
                path.segs.push(name.clone());
                out.push(UseItem { path, kind: UseKind::Name(name) });
            }
        }
        syn::UseTree::Rename(r) => {
            let alias = r.rename.to_string();
            if alias == "_" {
                return;
            }
            let mut path = prefix.clone();
            if r.ident != "self" {
                path.segs.push(r.ident.to_string());
            }
            out.push(UseItem { path, kind: UseKind::Name(alias) });
        }
        syn::UseTree::Glob(_) => out.push(UseItem { path: prefix.clone(), kind: UseKind::Glob }),
        syn::UseTree::Group(g) => {
            for t in &g.items {
                flatten_use(t, prefix, out);
            }
        }
    }
}

/// Whether a body runs straight through (no loop, closure, async block, `.await`, or macro other than
/// [`CHEAP_MACROS`]), and how many statements it has.
struct StraightLine {
    stmts: u32,
    straight: bool,
}

impl<'ast> Visit<'ast> for StraightLine {
    fn visit_item(&mut self, _: &'ast Item) {
        // A nested item is a function of its own, not code of this body.
    }
    fn visit_stmt(&mut self, stmt: &'ast Stmt) {
        self.stmts += 1;
        syn::visit::visit_stmt(self, stmt);
    }
    fn visit_expr(&mut self, expr: &'ast Expr) {
        match expr {
            Expr::ForLoop(_) | Expr::While(_) | Expr::Loop(_) | Expr::Closure(_) | Expr::Async(_) | Expr::Await(_) => {
                self.straight = false
            }
            _ => syn::visit::visit_expr(self, expr),
        }
    }
    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        if !CHEAP_MACROS.contains(&macro_name(mac).as_str()) {
            self.straight = false;
        }
    }
}

/// Walks one function body: call sites, local types, nested items.
struct BodyVisitor<'a> {
    ex: &'a mut Extractor,
    calls: Vec<CallSite>,
    items: ModItems,
    /// Local variables with a type the extraction could see.
    env: HashMap<String, TyRef>,
    /// Locals whose type in `env` is only a guess (see [`Receiver::Guessed`]).
    guessed: std::collections::HashSet<String>,
    /// Names bound by patterns: a path naming one of them is a local, not a function.
    locals: std::collections::HashSet<String>,
    generics: &'a [(String, Vec<PathRef>)],
    test_only: bool,
    /// The function's parameter names, and whether the body calls one of them (a callback).
    params: std::collections::HashSet<String>,
    calls_params: bool,
    polls_params: bool,
    /// Locals bound to closures (`let handler = |b| ..;`): the calls inside them, for when the local is passed on.
    closure_calls: HashMap<String, Vec<u32>>,
    /// Lazy statics whose initializer's calls were added to this body already.
    statics_seen: std::collections::HashSet<String>,
}

/// `std::ops` traits behind binary operators: (trait, its methods).
fn binary_op_trait(op: &syn::BinOp) -> Option<(&'static str, &'static [&'static str])> {
    use syn::BinOp::*;
    Some(match op {
        Add(_) => ("Add", &["add"]),
        Sub(_) => ("Sub", &["sub"]),
        Mul(_) => ("Mul", &["mul"]),
        Div(_) => ("Div", &["div"]),
        Rem(_) => ("Rem", &["rem"]),
        BitAnd(_) => ("BitAnd", &["bitand"]),
        BitOr(_) => ("BitOr", &["bitor"]),
        BitXor(_) => ("BitXor", &["bitxor"]),
        Shl(_) => ("Shl", &["shl"]),
        Shr(_) => ("Shr", &["shr"]),
        AddAssign(_) => ("AddAssign", &["add_assign"]),
        SubAssign(_) => ("SubAssign", &["sub_assign"]),
        MulAssign(_) => ("MulAssign", &["mul_assign"]),
        DivAssign(_) => ("DivAssign", &["div_assign"]),
        RemAssign(_) => ("RemAssign", &["rem_assign"]),
        BitAndAssign(_) => ("BitAndAssign", &["bitand_assign"]),
        BitOrAssign(_) => ("BitOrAssign", &["bitor_assign"]),
        BitXorAssign(_) => ("BitXorAssign", &["bitxor_assign"]),
        ShlAssign(_) => ("ShlAssign", &["shl_assign"]),
        ShrAssign(_) => ("ShrAssign", &["shr_assign"]),
        Eq(_) | Ne(_) => ("PartialEq", &["eq", "ne"]),
        Lt(_) | Le(_) | Gt(_) | Ge(_) => ("PartialOrd", &["partial_cmp", "lt", "le", "gt", "ge"]),
        _ => return None,
    })
}

/// Macros whose arguments follow a format string: `{}` arguments call `Display::fmt`, `{:?}` `Debug::fmt`.
const FORMAT_MACROS: &[&str] = &[
    "format",
    "format_args",
    "print",
    "println",
    "eprint",
    "eprintln",
    "write",
    "writeln",
    "panic",
    "unreachable",
    "todo",
    "unimplemented",
    "assert",
    "assert_eq",
    "assert_ne",
    "debug_assert",
    "debug_assert_eq",
    "debug_assert_ne",
];

/// A `{..}` of a format string: which argument, and whether it is `Debug` (`{:?}`) rather than `Display`.
#[derive(Debug, PartialEq)]
enum FormatArg {
    Next,
    Index(usize),
    Name(String),
}

/// The arguments a format string takes, in order: (argument, `Some(is_debug)` for `Display` or `Debug`, `None`
/// for other traits (`{:x}`) and for a precision taken from an argument (`{:.*}`)).
fn format_placeholders(fmt: &str) -> Vec<(FormatArg, Option<bool>)> {
    let mut out = Vec::new();
    let mut chars = fmt.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            '{' if chars.peek().is_some_and(|(_, n)| *n == '{') => {
                chars.next();
            }
            '{' => {
                let Some(len) = fmt[i + 1..].find('}') else { break };
                let inner = &fmt[i + 1..i + 1 + len];
                while chars.peek().is_some_and(|(j, _)| *j <= i + 1 + len) {
                    chars.next();
                }
                let (arg, spec) = inner.split_once(':').unwrap_or((inner, ""));
                let arg = arg.trim();
                if spec.contains(".*") {
                    // The precision is taken from the next positional argument first.
                    out.push((FormatArg::Next, None));
                }
                let which = if arg.is_empty() {
                    FormatArg::Next
                } else if let Ok(n) = arg.parse() {
                    FormatArg::Index(n)
                } else {
                    FormatArg::Name(arg.to_owned())
                };
                let kind = if spec.ends_with('?') {
                    Some(true)
                } else if spec.ends_with(['x', 'X', 'o', 'b', 'e', 'E', 'p']) {
                    None
                } else {
                    Some(false)
                };
                out.push((which, kind));
            }
            _ => {}
        }
    }
    out
}

/// The names a pattern binds.
fn pat_idents(pat: &Pat, out: &mut Vec<String>) {
    struct Idents<'o>(&'o mut Vec<String>);
    impl<'ast> Visit<'ast> for Idents<'_> {
        fn visit_pat_ident(&mut self, p: &'ast syn::PatIdent) {
            self.0.push(p.ident.to_string());
            syn::visit::visit_pat_ident(self, p);
        }
        fn visit_expr(&mut self, _: &'ast Expr) {}
        fn visit_type(&mut self, _: &'ast Type) {}
    }
    Idents(out).visit_pat(pat);
}

fn is_type_like(seg: &str) -> bool {
    seg == "Self" || seg.starts_with(|c: char| c.is_ascii_uppercase())
}

impl BodyVisitor<'_> {
    /// Visits call arguments, remembering which calls sit in closures and function values passed to `site`.
    fn visit_args<'e>(&mut self, site: usize, args: impl Iterator<Item = &'e Expr>) {
        for arg in args {
            if let Expr::Path(p) = strip_refs(arg) {
                if p.path.get_ident().is_some_and(|i| self.params.contains(&i.to_string())) {
                    self.calls[site].forwards_param = true;
                }
            }
            let start = self.calls.len();
            self.visit_expr(arg);
            if let Some(inner) = self.code_calls(arg, start..self.calls.len()) {
                self.calls[site].arg_calls.extend(inner);
            }
            // A call's result passed as is: `block_on(fetch(x))` hands `fetch`'s future to `block_on`.
            if matches!(strip_refs(arg), Expr::Call(_) | Expr::MethodCall(_)) && self.calls.len() > start {
                self.calls[site].arg_futures.push(start as u32);
            }
        }
    }

    /// When `expr` (just visited, adding the calls in `visited`) is code passed as a value: a closure, a function
    /// path, a local bound to a closure, or one of those behind `&`, `Some(..)`, `Box::new(..)`, `as` or in the
    /// branches of an `if`/`match`: the calls that run when it is invoked.
    fn code_calls(&self, expr: &Expr, visited: std::ops::Range<usize>) -> Option<Vec<u32>> {
        match expr {
            // A function named as a value: the call site `visited` holds is that function.
            Expr::Path(p) if !p.path.get_ident().is_some_and(|i| self.locals.contains(&i.to_string())) => {
                Some(visited.map(|i| i as u32).collect())
            }
            _ => self.nested_code_calls(expr, visited),
        }
    }

    /// [`Self::code_calls`] below the top of the expression, where a path is only code when it names a local bound
    /// to a closure (a branch's function path would take the whole `visited` range, conditions included).
    fn nested_code_calls(&self, expr: &Expr, visited: std::ops::Range<usize>) -> Option<Vec<u32>> {
        match expr {
            Expr::Closure(_) => Some(visited.map(|i| i as u32).collect()),
            Expr::Path(p) => p.path.get_ident().and_then(|i| self.closure_calls.get(&i.to_string())).cloned(),
            Expr::Reference(r) => self.nested_code_calls(&r.expr, visited),
            Expr::Paren(p) => self.nested_code_calls(&p.expr, visited),
            Expr::Group(g) => self.nested_code_calls(&g.expr, visited),
            Expr::Cast(c) => self.nested_code_calls(&c.expr, visited),
            Expr::Call(c) if c.args.len() == 1 => {
                let Expr::Path(f) = &*c.func else { return None };
                let segs: Vec<String> = f.path.segments.iter().map(|s| s.ident.to_string()).collect();
                let wrapper = matches!(
                    segs.iter().map(String::as_str).collect::<Vec<_>>()[..],
                    ["Some" | "Ok"] | [.., "Box" | "Rc" | "Arc", "new" | "pin"]
                );
                if wrapper {
                    self.nested_code_calls(&c.args[0], visited)
                } else {
                    None
                }
            }
            Expr::Block(b) => self.tail_code_calls(&b.block, visited),
            Expr::If(i) => {
                let then = self.tail_code_calls(&i.then_branch, visited.clone());
                let other = i.else_branch.as_ref().and_then(|(_, e)| self.nested_code_calls(e, visited));
                merge(then, other)
            }
            Expr::Match(m) => {
                m.arms.iter().fold(None, |acc, arm| merge(acc, self.nested_code_calls(&arm.body, visited.clone())))
            }
            _ => None,
        }
    }

    fn tail_code_calls(&self, block: &syn::Block, visited: std::ops::Range<usize>) -> Option<Vec<u32>> {
        match block.stmts.last() {
            Some(Stmt::Expr(e, None)) => self.nested_code_calls(e, visited),
            _ => None,
        }
    }

    /// Types the bindings of a struct or enum-variant pattern by the fields they bind: `Tag::Heading { level, .. }`,
    /// `TagEnd::Heading(level)`, `Point { x, .. }`. Other bindings are left as they are.
    fn bind_pattern_types(&mut self, pat: &Pat) {
        // (owner type, field prefix) for `Enum::Variant` (two type-like last segments) or a struct path.
        let owner_of = |path: &syn::Path| -> Option<(PathRef, String)> {
            let p = PathRef::from_syn(path);
            let n = p.segs.len();
            let last = p.segs.last()?;
            if !is_type_like(last) || last == "Self" {
                return None;
            }
            if n >= 2 && is_type_like(&p.segs[n - 2]) {
                if p.segs[n - 2] == "Self" {
                    return None;
                }
                Some((PathRef { segs: p.segs[..n - 1].to_vec(), leading_colon: p.leading_colon }, format!("{last}::")))
            } else {
                Some((p, String::new()))
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
                            let ty = TyRef::Field { owner: owner.clone(), field: format!("{prefix}{member}") };
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
                            let ty = TyRef::Field { owner: owner.clone(), field: format!("{prefix}{i}") };
                            self.env.insert(pi.ident.to_string(), ty);
                            self.guessed.remove(&pi.ident.to_string());
                        }
                    }
                }
            }
            Pat::Reference(r) => self.bind_pattern_types(&r.pat),
            Pat::Paren(p) => self.bind_pattern_types(&p.pat),
            Pat::Or(o) => o.cases.iter().for_each(|c| self.bind_pattern_types(c)),
            _ => {}
        }
    }

    /// Whether `expr` is one of the function's parameters (or a local bound to one), seen through `&`, `?`,
    /// `.unwrap()`, `.as_ref()` and the like: `let handler = callback?;`.
    fn is_param(&self, expr: &Expr) -> bool {
        match expr {
            Expr::Path(p) => p.path.get_ident().is_some_and(|i| self.params.contains(&i.to_string())),
            Expr::Reference(r) => self.is_param(&r.expr),
            Expr::Paren(p) => self.is_param(&p.expr),
            Expr::Try(t) => self.is_param(&t.expr),
            Expr::MethodCall(m) if m.args.is_empty() => {
                matches!(m.method.to_string().as_str(), "unwrap" | "as_ref" | "as_mut" | "as_deref" | "clone" | "take")
                    && self.is_param(&m.receiver)
            }
            _ => false,
        }
    }

    /// Calls `Display::fmt`/`Debug::fmt` for the arguments of a formatting macro whose type the syntax shows.
    fn format_calls(&mut self, mac: &syn::Macro, exprs: &Punctuated<Expr, syn::Token![,]>) {
        let Some(pos) = exprs.iter().position(|e| matches!(e, Expr::Lit(l) if matches!(l.lit, syn::Lit::Str(_))))
        else {
            return;
        };
        let Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(fmt), .. }) = &exprs[pos] else { return };
        let fmt = fmt.value();
        if !fmt.contains('{') {
            return;
        }
        let mut positional = Vec::new();
        let mut named = HashMap::new();
        for e in exprs.iter().skip(pos + 1) {
            match e {
                Expr::Assign(a) => {
                    if let Expr::Path(p) = &*a.left {
                        if let Some(i) = p.path.get_ident() {
                            named.insert(i.to_string(), &*a.right);
                        }
                    }
                }
                other => positional.push(other),
            }
        }
        let line = line_of(mac.path.span());
        let mut next = 0;
        for (arg, debug) in format_placeholders(&fmt) {
            let (receiver, text) = match arg {
                FormatArg::Next => {
                    next += 1;
                    match positional.get(next - 1) {
                        Some(e) => self.receiver(e),
                        None => continue,
                    }
                }
                FormatArg::Index(i) => match positional.get(i) {
                    Some(e) => self.receiver(e),
                    None => continue,
                },
                FormatArg::Name(name) => match named.get(&name) {
                    Some(e) => self.receiver(e),
                    None => match self.env.get(&name) {
                        Some(ty) if !self.guessed.contains(&name) => (Receiver::Type(ty.clone()), name),
                        _ => continue,
                    },
                },
            };
            let Some(debug) = debug else { continue };
            if !matches!(receiver, Receiver::Type(_) | Receiver::SelfField(_)) {
                continue;
            }
            let trait_name = if debug { "Debug" } else { "Display" };
            self.calls.push(CallSite {
                line,
                text: format!("{}!(.., {text})", macro_name(mac)),
                kind: CallKind::Operator { trait_name, methods: &["fmt"], receiver },
                arg_calls: Vec::new(),
                forwards_param: false,
                arg_futures: Vec::new(),
            });
        }
    }

    fn path_call(&mut self, qself: Option<&syn::QSelf>, path: &syn::Path, args: usize, called: bool) {
        let line = line_of(path.segments.last().map(|s| s.ident.span()).unwrap_or_else(|| path.span()));
        let p = PathRef::from_syn(path);
        if let Some(q) = qself {
            let Some(name) = p.segs.last().cloned() else { return };
            let trait_path = (q.position > 0).then(|| PathRef { segs: p.segs[..q.position].to_vec(), ..p.clone() });
            let text = format!("<{}>::{name}(..)", type_text(&q.ty));
            let kind = CallKind::Qualified { self_ty: ty_ref(&q.ty, self.generics), trait_path, name };
            self.calls.push(CallSite {
                line,
                text,
                kind,
                arg_calls: Vec::new(),
                forwards_param: false,
                arg_futures: Vec::new(),
            });
            return;
        }
        let Some(last) = p.segs.last() else { return };
        if (is_type_like(last) && last != "Self") || (p.segs.len() == 1 && (last == "Self" || last == "self")) {
            // A tuple-struct or enum-variant constructor, a unit struct or a constant.
            return;
        }
        if p.segs.len() == 1 && self.locals.contains(last) {
            return;
        }
        let text = if called { format!("{}(..)", p.text()) } else { p.text() };
        self.calls.push(CallSite {
            line,
            text,
            kind: CallKind::Path { path: p, args, called },
            arg_calls: Vec::new(),
            forwards_param: false,
            arg_futures: Vec::new(),
        });
    }

    fn receiver(&self, expr: &Expr) -> (Receiver, String) {
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
                        Some(ty) if self.guessed.contains(&name) => Receiver::Guessed(ty.clone()),
                        Some(ty) => Receiver::Type(ty.clone()),
                        None => Receiver::Unknown,
                    };
                    return (receiver, name);
                }
                (Receiver::Unknown, PathRef::from_syn(&p.path).text())
            }
            Expr::Field(f) => {
                if let Expr::Path(base) = &*f.base {
                    if base.path.is_ident("self") {
                        let field = match &f.member {
                            syn::Member::Named(name) => name.to_string(),
                            syn::Member::Unnamed(index) => index.index.to_string(),
                        };
                        return (Receiver::SelfField(field.clone()), format!("self.{field}"));
                    }
                }
                (Receiver::Unknown, "_".to_owned())
            }
            Expr::Call(c) => {
                if let Expr::Path(p) = &*c.func {
                    if let Some(ident) = p.path.get_ident().filter(|i| is_type_like(&i.to_string())) {
                        // A tuple-struct constructor: `Wrapper(x).poke()`.
                        return (Receiver::Type(self.path_type(&p.path)), format!("{ident}(..)"));
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
            Expr::Lit(_) => (Receiver::Std, "_".to_owned()),
            // `(a..=b).contains(x)`: the text marks a range, whose `contains` is two comparisons.
            Expr::Range(_) => (Receiver::Std, RANGE_RECEIVER.to_owned()),
            Expr::Macro(m) if ["format", "vec", "concat", "stringify"].iter().any(|n| m.mac.path.is_ident(n)) => {
                (Receiver::Std, format!("{}!(..)", macro_name(&m.mac)))
            }
            Expr::MethodCall(mc) if STD_RESULT_METHODS.iter().any(|n| mc.method == n) => {
                (Receiver::Std, format!("_.{}(..)", mc.method))
            }
            Expr::Struct(s) if s.qself.is_none() => {
                (Receiver::Type(self.path_type(&s.path)), format!("{} {{..}}", PathRef::from_syn(&s.path).text()))
            }
            _ => (Receiver::Unknown, "_".to_owned()),
        }
    }

    fn path_type(&self, path: &syn::Path) -> TyRef {
        if path.is_ident("Self") {
            TyRef::SelfType
        } else {
            TyRef::Path(PathRef::from_syn(path))
        }
    }

    /// The type a `let` initialiser evidently has (`T { .. }`, another local), or probably has (`T::new(..)`,
    /// `Self::x(..)`: true in the second field).
    fn init_type(&self, expr: &Expr) -> Option<(TyRef, bool)> {
        match expr {
            Expr::Struct(s) if s.qself.is_none() => Some((self.path_type(&s.path), false)),
            Expr::Call(_) => match self.receiver(expr).0 {
                Receiver::Type(t) => Some((t, false)),
                Receiver::Guessed(t) => Some((t, true)),
                _ => None,
            },
            Expr::Reference(r) => self.init_type(&r.expr),
            Expr::Paren(p) => self.init_type(&p.expr),
            Expr::Path(p) => p.path.get_ident().and_then(|i| {
                let name = i.to_string();
                self.env.get(&name).map(|t| (t.clone(), self.guessed.contains(&name)))
            }),
            _ => None,
        }
    }

    fn visit_macro_tokens(&mut self, mac: &syn::Macro) {
        if mac.path.is_ident("macro_rules") {
            return;
        }
        let parser = Punctuated::<Expr, syn::Token![,]>::parse_terminated;
        if let Ok(exprs) = mac.parse_body_with(parser) {
            for e in &exprs {
                self.visit_expr(e);
            }
            if FORMAT_MACROS.iter().any(|m| mac.path.is_ident(m)) {
                self.format_calls(mac, &exprs);
            }
            return;
        }
        if let Ok(stmts) = mac.parse_body_with(syn::Block::parse_within) {
            for s in &stmts {
                self.visit_stmt(s);
            }
            return;
        }
        self.scan_tokens(mac.tokens.clone());
    }

    /// Last resort for macro bodies that are neither expressions nor statements: `f(`, `a::f(` and `.m(`.
    fn scan_tokens(&mut self, tokens: TokenStream) {
        let tts: Vec<TokenTree> = tokens.into_iter().collect();
        for (i, tt) in tts.iter().enumerate() {
            if let TokenTree::Group(g) = tt {
                let is_call = g.delimiter() == Delimiter::Parenthesis
                    && matches!(i.checked_sub(1).map(|j| &tts[j]), Some(TokenTree::Ident(_)));
                if is_call {
                    let TokenTree::Ident(name) = &tts[i - 1] else { continue };
                    let name_str = name.to_string();
                    let keyword = ["if", "while", "match", "return", "for", "in", "fn", "let", "move", "loop"];
                    if keyword.contains(&name_str.as_str()) {
                        self.scan_tokens(g.stream());
                        continue;
                    }
                    let prev = |k: usize| i.checked_sub(k).map(|j| &tts[j]);
                    let line = line_of(name.span());
                    if matches!(prev(2), Some(TokenTree::Punct(p)) if p.as_char() == '.') {
                        self.calls.push(CallSite {
                            line,
                            text: format!("_.{name_str}(..)"),
                            kind: CallKind::Method { name: name_str, args: None, receiver: Receiver::Unknown },
                            arg_calls: Vec::new(),
                            forwards_param: false,
                            arg_futures: Vec::new(),
                        });
                    } else if !matches!(prev(2), Some(TokenTree::Ident(i)) if i == "fn") {
                        // Collect `a :: b :: name` backwards.
                        let mut segs = vec![name_str];
                        let mut j = i - 1;
                        while j >= 3 {
                            let colons = matches!(&tts[j - 1], TokenTree::Punct(p) if p.as_char() == ':')
                                && matches!(&tts[j - 2], TokenTree::Punct(p) if p.as_char() == ':');
                            match (&tts[j - 3], colons) {
                                (TokenTree::Ident(seg), true) => {
                                    segs.insert(0, seg.to_string());
                                    j -= 3;
                                }
                                _ => break,
                            }
                        }
                        let last = segs.last().cloned().unwrap_or_default();
                        let local = segs.len() == 1 && self.locals.contains(&last);
                        if !is_type_like(&last) && !local {
                            let path = PathRef { segs, leading_colon: false };
                            let args = count_args(&g.stream());
                            self.calls.push(CallSite {
                                line,
                                text: format!("{}(..)", path.text()),
                                kind: CallKind::Path { path, args, called: true },
                                arg_calls: Vec::new(),
                                forwards_param: false,
                                arg_futures: Vec::new(),
                            });
                        }
                    }
                }
                self.scan_tokens(g.stream());
            }
        }
    }
}

/// An operand whose type the syntax shows and which is not a primitive (`usize`, `f64`, ...): its operators may be
/// workspace impls.
fn operand_may_be_workspace_type(receiver: &Receiver) -> bool {
    const PRIMITIVES: &[&str] = &[
        "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32", "i64", "i128", "isize", "f32", "f64", "bool",
        "char", "str", "String",
    ];
    match receiver {
        Receiver::Type(TyRef::Path(p)) | Receiver::Guessed(TyRef::Path(p)) => {
            !(p.segs.len() == 1 && PRIMITIVES.contains(&p.segs[0].as_str()))
        }
        Receiver::Type(_) | Receiver::Guessed(_) | Receiver::SelfField(_) => true,
        _ => false,
    }
}

fn merge(a: Option<Vec<u32>>, b: Option<Vec<u32>>) -> Option<Vec<u32>> {
    match (a, b) {
        (Some(mut a), Some(b)) => {
            a.extend(b);
            Some(a)
        }
        (a, b) => a.or(b),
    }
}

fn strip_refs(expr: &Expr) -> &Expr {
    match expr {
        Expr::Reference(r) => strip_refs(&r.expr),
        Expr::Paren(p) => strip_refs(&p.expr),
        other => other,
    }
}

fn count_args(tokens: &TokenStream) -> usize {
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

impl<'ast> Visit<'ast> for BodyVisitor<'_> {
    fn visit_item(&mut self, item: &'ast Item) {
        // Items in a body are functions of their own (named after the enclosing one), not part of its calls.
        let scope = Scope { test_only: self.test_only, generics: Vec::new() };
        self.ex.item(item, &mut self.items, &scope);
    }

    fn visit_expr_call(&mut self, call: &'ast syn::ExprCall) {
        let before = self.calls.len();
        match &*call.func {
            Expr::Path(p) => {
                if let Some(ident) = p.path.get_ident() {
                    if self.params.contains(&ident.to_string()) {
                        self.calls_params = true;
                    }
                }
                self.path_call(p.qself.as_ref(), &p.path, call.args.len(), true)
            }
            other => self.visit_expr(other),
        }
        if self.calls.len() > before {
            self.visit_args(self.calls.len() - 1, call.args.iter());
        } else {
            for arg in &call.args {
                self.visit_expr(arg);
            }
        }
    }

    fn visit_expr_for_loop(&mut self, f: &'ast syn::ExprForLoop) {
        // `for x in v`: `IntoIterator::into_iter(v)`, then `Iterator::next` on what it returns (for a workspace
        // type, usually the type itself or one of its iterators: both impls are taken).
        let (receiver, recv_text) = self.receiver(&f.expr);
        if matches!(receiver, Receiver::Type(_) | Receiver::SelfField(_) | Receiver::Guessed(_)) {
            let line = line_of(f.for_token.span);
            for (trait_name, methods) in [("IntoIterator", &["into_iter"][..]), ("Iterator", &["next"][..])] {
                self.calls.push(CallSite {
                    line,
                    text: format!("for _ in {recv_text}"),
                    kind: CallKind::Operator { trait_name, methods, receiver: receiver.clone() },
                    arg_calls: Vec::new(),
                    forwards_param: false,
                    arg_futures: Vec::new(),
                });
            }
        }
        syn::visit::visit_expr_for_loop(self, f);
    }

    fn visit_expr_index(&mut self, index: &'ast syn::ExprIndex) {
        let (receiver, recv_text) = self.receiver(&index.expr);
        if matches!(receiver, Receiver::Type(_) | Receiver::SelfField(_)) {
            self.calls.push(CallSite {
                line: line_of(index.bracket_token.span.open()),
                text: format!("{recv_text}[..]"),
                kind: CallKind::Operator { trait_name: "Index", methods: &["index", "index_mut"], receiver },
                arg_calls: Vec::new(),
                forwards_param: false,
                arg_futures: Vec::new(),
            });
        }
        self.visit_expr(&index.expr);
        self.visit_expr(&index.index);
    }

    fn visit_expr_method_call(&mut self, call: &'ast syn::ExprMethodCall) {
        let (receiver, recv_text) = self.receiver(&call.receiver);
        let name = call.method.to_string();
        if name == "poll" {
            self.polls_params = true;
        }
        if matches!(name.as_str(), "call" | "call_mut" | "call_once") {
            if let Expr::Path(p) = strip_refs(&call.receiver) {
                if p.path.get_ident().is_some_and(|i| self.params.contains(&i.to_string())) {
                    self.calls_params = true;
                }
            }
        }
        self.calls.push(CallSite {
            line: line_of(call.method.span()),
            text: format!("{recv_text}.{name}(..)"),
            kind: CallKind::Method { name, args: Some(call.args.len()), receiver },
            arg_calls: Vec::new(),
            forwards_param: false,
            arg_futures: Vec::new(),
        });
        let site = self.calls.len() - 1;
        self.visit_expr(&call.receiver);
        self.visit_args(site, call.args.iter());
    }

    fn visit_expr_path(&mut self, p: &'ast syn::ExprPath) {
        if let Some(ident) = p.path.get_ident().filter(|_| !self.ex.statics.is_empty()) {
            let name = ident.to_string();
            if !self.locals.contains(&name) && !self.statics_seen.contains(&name) {
                if let Some(init) = self.ex.statics.get(&name).cloned() {
                    // The first access runs the initializer (`X.with(..)` of a `thread_local!`, `*X`).
                    self.statics_seen.insert(name);
                    self.visit_expr(&init);
                }
            }
        }
        self.path_call(p.qself.as_ref(), &p.path, 0, false);
    }

    fn visit_local(&mut self, local: &'ast syn::Local) {
        let start = self.calls.len();
        if let Some(init) = &local.init {
            self.visit_expr(&init.expr);
            if let Some((_, diverge)) = &init.diverge {
                self.visit_expr(diverge);
            }
        }
        let mut bound = Vec::new();
        pat_idents(&local.pat, &mut bound);
        let init = local.init.as_ref().map(|i| &*i.expr);
        let code = init.and_then(|e| self.code_calls(e, start..self.calls.len()));
        let from_param = init.is_some_and(|e| self.is_param(e));
        for name in bound {
            match &code {
                Some(calls) if !calls.is_empty() => {
                    self.closure_calls.insert(name.clone(), calls.clone());
                }
                _ => {
                    self.closure_calls.remove(&name);
                }
            }
            if from_param {
                self.params.insert(name);
            }
        }
        let (pat, ty) = match &local.pat {
            Pat::Type(pt) => (&*pt.pat, Some((ty_ref(&pt.ty, self.generics), false))),
            other => (other, None),
        };
        if let Pat::Ident(pi) = pat {
            let ty = ty.or_else(|| local.init.as_ref().and_then(|i| self.init_type(&i.expr)));
            if let Some((t, _)) = &ty {
                // The value is dropped at the end of the scope: a workspace `Drop` impl runs here.
                self.calls.push(CallSite {
                    line: line_of(pi.ident.span()),
                    text: format!("drop({})", pi.ident),
                    kind: CallKind::Operator {
                        trait_name: "Drop",
                        methods: &["drop"],
                        receiver: Receiver::Type(t.clone()),
                    },
                    arg_calls: Vec::new(),
                    forwards_param: false,
                    arg_futures: Vec::new(),
                });
            }
            let name = pi.ident.to_string();
            match ty {
                Some((t, guessed)) => {
                    if guessed {
                        self.guessed.insert(name.clone());
                    } else {
                        self.guessed.remove(&name);
                    }
                    self.env.insert(name, t);
                }
                None => {
                    self.env.remove(&name);
                }
            }
        }
        self.visit_pat(&local.pat);
    }

    fn visit_pat_ident(&mut self, p: &'ast syn::PatIdent) {
        self.locals.insert(p.ident.to_string());
        if let Some((_, sub)) = &p.subpat {
            self.visit_pat(sub);
        }
    }

    fn visit_expr_closure(&mut self, c: &'ast syn::ExprClosure) {
        for input in &c.inputs {
            if let Pat::Type(pt) = input {
                if let Pat::Ident(pi) = &*pt.pat {
                    self.env.insert(pi.ident.to_string(), ty_ref(&pt.ty, self.generics));
                }
            }
            self.visit_pat(input);
        }
        self.visit_expr(&c.body);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.visit_macro_tokens(mac);
    }

    fn visit_expr_await(&mut self, a: &'ast syn::ExprAwait) {
        if self.is_param(&a.base) {
            self.polls_params = true;
        }
        syn::visit::visit_expr_await(self, a);
    }

    fn visit_arm(&mut self, arm: &'ast syn::Arm) {
        self.bind_pattern_types(&arm.pat);
        syn::visit::visit_arm(self, arm);
    }

    fn visit_expr_let(&mut self, l: &'ast syn::ExprLet) {
        self.bind_pattern_types(&l.pat);
        // `if let Some(cb) = callback`: `cb` is the parameter.
        if self.is_param(&l.expr) {
            let mut bound = Vec::new();
            pat_idents(&l.pat, &mut bound);
            self.params.extend(bound);
        }
        syn::visit::visit_expr_let(self, l);
    }

    fn visit_expr_match(&mut self, m: &'ast syn::ExprMatch) {
        if self.is_param(&m.expr) {
            let mut bound = Vec::new();
            for arm in &m.arms {
                pat_idents(&arm.pat, &mut bound);
            }
            self.params.extend(bound);
        }
        syn::visit::visit_expr_match(self, m);
    }

    fn visit_expr_binary(&mut self, b: &'ast syn::ExprBinary) {
        if let Some((trait_name, methods)) = binary_op_trait(&b.op) {
            let (receiver, recv_text) = self.receiver(&b.left);
            if operand_may_be_workspace_type(&receiver) {
                self.calls.push(CallSite {
                    line: line_of(b.op.span()),
                    text: format!("{recv_text} {} _", quote::ToTokens::to_token_stream(&b.op)),
                    kind: CallKind::Operator { trait_name, methods, receiver },
                    arg_calls: Vec::new(),
                    forwards_param: false,
                    arg_futures: Vec::new(),
                });
            }
        }
        syn::visit::visit_expr_binary(self, b);
    }

    fn visit_expr_unary(&mut self, u: &'ast syn::ExprUnary) {
        let op = match u.op {
            syn::UnOp::Neg(_) => Some(("Neg", &["neg"][..], "-")),
            syn::UnOp::Not(_) => Some(("Not", &["not"][..], "!")),
            _ => None,
        };
        if let Some((trait_name, methods, sign)) = op {
            let (receiver, recv_text) = self.receiver(&u.expr);
            if operand_may_be_workspace_type(&receiver) {
                self.calls.push(CallSite {
                    line: line_of(u.op.span()),
                    text: format!("{sign}{recv_text}"),
                    kind: CallKind::Operator { trait_name, methods, receiver },
                    arg_calls: Vec::new(),
                    forwards_param: false,
                    arg_futures: Vec::new(),
                });
            }
        }
        syn::visit::visit_expr_unary(self, u);
    }

    // Types, patterns' paths and attributes hold no calls worth following.
    fn visit_type(&mut self, _: &'ast Type) {}
    fn visit_attribute(&mut self, _: &'ast Attribute) {}
}

#[cfg(test)]
mod tests {
    use rayon::prelude::*;

    use super::*;

    fn first_fn(text: &str) -> FnItem {
        extract_file(text).expect("parses").items.fns.into_iter().next().expect("a function")
    }

    #[test]
    fn offsets_are_bytes_in_the_file_as_on_disk() {
        // Multi-byte characters before the body: proc-macro2 counts characters internally, byte_range gives bytes.
        let text = "const S: &str = \"ééé→\";\nfn f() -> u8 { 1 }\n";
        let f = first_fn(text);
        let probe = f.probe.expect("probe");
        assert_eq!(&text[..probe.open], "const S: &str = \"ééé→\";\nfn f() -> u8 {");
        assert_eq!(f.line, 2);
    }

    #[test]
    fn bom_and_shebang_are_counted() {
        let text = "\u{feff}#!/usr/bin/env run-cargo-script\nfn main() { }\n";
        let f = first_fn(text);
        let probe = f.probe.expect("probe");
        assert!(text[..probe.open].ends_with("fn main() {"));
        assert_eq!(f.line, 2);
        // `#![...]` is an inner attribute, not a shebang.
        let text = "#![allow(unused)]\nfn g() {}\n";
        let f = first_fn(text);
        assert!(text[..f.probe.unwrap().open].ends_with("fn g() {"));
    }

    #[test]
    fn offsets_stay_per_file_across_files_and_threads() {
        // Each file's offsets are relative to that file, whichever thread parsed it and whatever it parsed before.
        let texts: Vec<String> =
            (0..64).map(|i| format!("{}\nfn f{i}() {{ g(); }}\n", "// pad\n".repeat(i % 7))).collect();
        let opens: Vec<(usize, usize)> = texts
            .par_iter()
            .map(|t| {
                let f = first_fn(t);
                (f.probe.unwrap().open, f.line as usize)
            })
            .collect();
        for (i, (t, (open, line))) in texts.iter().zip(opens).enumerate() {
            assert!(t[..open].ends_with(&format!("fn f{i}() {{")), "file {i}");
            assert_eq!(line, i % 7 + 2, "file {i}");
        }
    }

    #[test]
    fn async_forms_and_return_types() {
        let text = "async fn a() -> Result<impl Iterator<Item = u8>, String> { todo!() }\n\
                    fn b() -> impl Future<Output = u8> { let x = 1; async move { x } }\n\
                    fn c() -> impl Future<Output = u8> { std::future::ready(1) }\n\
                    async fn d() -> () {}\n";
        let items = extract_file(text).unwrap().items;
        let a = items.fns[0].probe.as_ref().unwrap();
        assert_eq!(a.kind, ProbeKind::Async);
        assert_eq!(a.return_type.as_deref(), Some("Result<_, String>"));
        assert_eq!(&text[a.close..a.close + 1], "}");
        let b = items.fns[1].probe.as_ref().unwrap();
        assert_eq!(b.kind, ProbeKind::AsyncBlock);
        assert_eq!(&text[b.open..b.close], "async move { x }");
        assert!(items.fns[2].probe.is_none());
        assert!(items.fns[2].skip.as_deref().unwrap().starts_with("returns a future"));
        assert_eq!(items.fns[3].probe.as_ref().unwrap().return_type, None);
    }

    #[test]
    fn format_placeholders_name_their_arguments_and_traits() {
        use FormatArg::*;
        let got = format_placeholders("{{lit}} {} {:?} {0:>4} {name} {x:#?} {:x} {:.*} }}");
        let want = vec![
            (Next, Some(false)),
            (Next, Some(true)),
            (Index(0), Some(false)),
            (Name("name".to_owned()), Some(false)),
            (Name("x".to_owned()), Some(true)),
            (Next, None),
            (Next, None),
            (Next, Some(false)),
        ];
        assert_eq!(got, want);
    }

    #[test]
    fn unparsable_text_reports_a_line() {
        let err = extract_file("fn ok() {}\n\nfn bad( {\n").unwrap_err();
        assert_eq!(err.0, 3);
    }
}
