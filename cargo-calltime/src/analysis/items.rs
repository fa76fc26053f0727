//! Item extraction: parses one source file with syn and keeps the items the index needs (functions with their
//! signatures and probe offsets, impls, traits, types, modules, `use`s); function bodies are walked by
//! [`super::bodies`].

use std::collections::{HashMap, HashSet};

use proc_macro2::{Delimiter, Span, TokenStream, TokenTree};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::visit::Visit;
use syn::{
    Attribute, Expr, FnArg, ImplItem, Item, Pat, ReceiverKind, ReturnType, Stmt, TraitItem, Type, TypeParamBound,
};

use super::bodies::{BodyVisitor, StraightLine};
use super::cfg;
use super::chunks;
use super::std_model::{BOXED_FUTURES, CHEAP_MACROS, PRIMITIVES, SMART_POINTERS};
use super::syntax::*;
use crate::plan::{ErrCounting, ProbeKind, SkipReason};

/// Parses `text` (the whole file as on disk) and extracts its summary. A parse error is returned as
/// `(line, message)`.
pub fn extract_file(text: &str) -> Result<FileSummary, (usize, String)> {
    // syn::parse_file strips a BOM and a shebang line; do the same here so that every offset can be shifted back
    // to the file as it is on disk.
    let (base, content) = super::modules::rust_text(text);
    let result = match extract_by_items(base, content) {
        Some(items) => Ok(items),
        None => extract_whole(base, content),
    };
    let result = result.map(|items| FileSummary { items, lines: text.lines().count() });
    // The summary holds no spans: drop this file from the thread's source map so it does not grow without bound.
    proc_macro2::extra::invalidate_current_thread_spans();
    result
}

/// Parses and extracts one top-level item at a time ([`chunks`]): only one item's syntax tree is alive at once.
/// `None` when the file does not cut into items that parse (the caller then parses it whole).
fn extract_by_items(base: usize, content: &str) -> Option<ModItems> {
    let tokens: TokenStream = content.parse().ok()?;
    let chunks = chunks::item_chunks(tokens);
    let mut statics = HashMap::new();
    for chunk in chunks.iter().filter(|c| chunks::mentions_lazy_statics(c)) {
        let item: Item = syn::parse2(chunk.clone()).ok()?;
        lazy_statics(std::slice::from_ref(&item), &mut statics);
    }
    let mut shapes = HashMap::new();
    for chunk in chunks.iter().filter(|c| chunks::mentions_any(c, &["macro_rules"])) {
        let item: Item = syn::parse2(chunk.clone()).ok()?;
        macro_shapes(std::slice::from_ref(&item), &mut shapes);
    }
    let item_free_macros = item_free_macros(&shapes);
    let mut ex = Extractor { base, in_macro: None, next_decl: 0, statics, item_free_macros };
    let mut items = ModItems { macro_rules: straight_macros(&shapes), ..ModItems::default() };
    let scope = Scope::default();
    for chunk in chunks {
        let item: Item = syn::parse2(chunk).ok()?;
        ex.item(&item, &mut items, &scope);
    }
    Some(items)
}

/// The whole file at once: for files [`extract_by_items`] cannot cut, and for the line of a parse error.
fn extract_whole(base: usize, content: &str) -> Result<ModItems, (usize, String)> {
    let file = syn::parse_str::<syn::File>(content).map_err(|err| (err.span().start().line, err.to_string()))?;
    let mut statics = HashMap::new();
    lazy_statics(&file.items, &mut statics);
    let mut shapes = HashMap::new();
    macro_shapes(&file.items, &mut shapes);
    let item_free_macros = item_free_macros(&shapes);
    let mut ex = Extractor { base, in_macro: None, next_decl: 0, statics, item_free_macros };
    let mut items = ModItems { macro_rules: straight_macros(&shapes), ..ModItems::default() };
    ex.items(&file.items, &mut items, &Scope::default());
    Ok(items)
}

/// Context inherited by nested items.
#[derive(Clone, Default)]
pub(super) struct Scope {
    pub(super) test_only: bool,
    pub(super) generics: Vec<(String, Vec<PathRef>)>,
}

pub(super) struct Extractor {
    /// Bytes syn never saw (BOM, shebang) to add to every offset.
    pub(super) base: usize,
    /// Set while extracting items found inside an item macro invocation: their functions get no probe.
    pub(super) in_macro: Option<String>,
    /// Numbers the out-of-line `mod x;` declarations of the file in source order.
    pub(super) next_decl: usize,
    /// Initializers of the file's `thread_local!` and `lazy_static!` statics by name: they run lazily, inside the
    /// first access (`X.with(..)`, `*X`), so their calls are calls of every function of the file that names `X`.
    pub(super) statics: HashMap<String, Expr>,
    /// The file's `macro_rules!` macros whose expansion declares no item (`item_free_macros`): a body invoking one
    /// as a statement in braces may still be written twice.
    pub(super) item_free_macros: HashSet<String>,
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

/// Identifiers that begin or make an item (or a macro that declares one) when a macro's expansion holds them.
const ITEM_WORDS: [&str; 15] = [
    "fn",
    "static",
    "impl",
    "struct",
    "enum",
    "union",
    "trait",
    "mod",
    "extern",
    "macro",
    "macro_rules",
    "thread_local",
    "lazy_static",
    "global_asm",
    "no_mangle",
];

/// std's macros that expand to an expression or a statement, never to an item: the format-string ones
/// (`std_model::FORMAT_MACROS`: `format!`, `write!`, `panic!`, the asserts, ...) and these.
const OTHER_EXPRESSION_MACROS: [&str; 6] = ["vec", "matches", "concat", "stringify", "line", "cfg"];

/// Whether `name` is one of std's macros that never expand to an item.
fn is_std_expression_macro(name: &str) -> bool {
    super::std_model::FORMAT_MACROS.contains(&name) || OTHER_EXPRESSION_MACROS.contains(&name)
}

/// What a `macro_rules!` of the file may expand to: whether its rules hold an item word (`ITEM_WORDS`), and the
/// macros its rules invoke. Every definition of a name counts (a macro defined twice under `#[cfg]`s).
#[derive(Default)]
struct MacroShape {
    declares: bool,
    /// Its rules hold a loop, a closure (or any `|`), `async`/`.await`, or a call (`f(`, `.m(`, `a::f(`; not a
    /// constructor such as `Err(`): code that may not run straight through, or that `calls` would not see.
    runs_code: bool,
    invokes: Vec<String>,
    /// Those of `invokes` delimited by braces, which may stand as statements.
    brace_invokes: Vec<String>,
}

/// The `macro_rules!` definitions in `items` and their inline modules, by name.
fn macro_shapes(items: &[Item], out: &mut HashMap<String, MacroShape>) {
    for item in items {
        match item {
            Item::Macro(m) if m.mac.path.is_ident("macro_rules") => {
                let Some(name) = &m.ident else { continue };
                let shape = out.entry(name.to_string()).or_default();
                scan_macro_tokens(m.mac.tokens.clone(), shape);
            }
            Item::Mod(m) => {
                if let Some((_, inner)) = &m.content {
                    macro_shapes(inner, out);
                }
            }
            _ => {}
        }
    }
}

/// Adds to `shape` the item words and macro invocations (`name!` then a group) in `tokens`.
fn scan_macro_tokens(tokens: TokenStream, shape: &mut MacroShape) {
    let tts: Vec<TokenTree> = tokens.into_iter().collect();
    for (i, tt) in tts.iter().enumerate() {
        match tt {
            TokenTree::Ident(id) => {
                let name = id.to_string();
                if ITEM_WORDS.contains(&name.as_str()) {
                    shape.declares = true;
                }
                let bang = matches!(tts.get(i + 1), Some(TokenTree::Punct(p)) if p.as_char() == '!');
                let metavariable = i > 0 && matches!(&tts[i - 1], TokenTree::Punct(p) if p.as_char() == '$');
                let called =
                    matches!(tts.get(i + 1), Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Parenthesis);
                let lower = name.starts_with(|c: char| c.is_ascii_lowercase() || c == '_');
                // A fragment before a parenthesis (`$f()`) may be a call of whatever the invocation names.
                if RUNS_CODE_WORDS.contains(&name.as_str())
                    || (called && (metavariable || (lower && !NOT_CALLED_WORDS.contains(&name.as_str()))))
                {
                    shape.runs_code = true;
                }
                if let (true, Some(TokenTree::Group(g))) = (bang, tts.get(i + 2)) {
                    if g.delimiter() == Delimiter::Brace {
                        shape.brace_invokes.push(name.clone());
                    }
                    shape.invokes.push(name);
                }
            }
            TokenTree::Group(g) => scan_macro_tokens(g.stream(), shape),
            TokenTree::Punct(p) if p.as_char() == '|' => shape.runs_code = true,
            _ => {}
        }
    }
}

/// Words that make a macro's expansion more than straight-line code (`MacroShape::runs_code`).
const RUNS_CODE_WORDS: [&str; 6] = ["loop", "while", "for", "async", "await", "move"];

/// Lower-case words a parenthesis may follow in a macro's rules without being a call.
const NOT_CALLED_WORDS: [&str; 14] =
    ["if", "match", "return", "in", "as", "else", "let", "mut", "ref", "break", "unsafe", "expr", "tt", "pat"];

/// The file's macros whose expansion declares no item: no item word in their rules, and every macro they invoke is
/// such a macro of the file or one of std's expression macros (`is_std_expression_macro`; a name the file defines
/// is judged by its own rules). `if !(x)` reads as an invocation of `if`, which is no macro of the file: the macro is then not counted,
/// which only costs the body its second copy.
fn item_free_macros(shapes: &HashMap<String, MacroShape>) -> HashSet<String> {
    let mut free = HashSet::new();
    loop {
        let before = free.len();
        for (name, shape) in shapes {
            let invokes_free = shape
                .invokes
                .iter()
                .all(|m| free.contains(m) || (!shapes.contains_key(m) && is_std_expression_macro(m)));
            if !shape.declares && invokes_free {
                free.insert(name.clone());
            }
        }
        if free.len() == before {
            return free;
        }
    }
}

/// The file's `macro_rules!` macros, each with whether it runs straight through: no item, nothing
/// `MacroShape::runs_code`, and every macro it invokes one of [`CHEAP_MACROS`] or such a macro of the file. A
/// straight-line body may invoke one (its arguments' calls are the body's own: `calls`); the index takes a name as
/// straight only when every definition of it in the workspace is (`Index::straight_macros`). serde_json's `tri!`
/// (`match $e { Ok(val) => val, Err(err) => return Err(err) }`) is; `vec!` or a macro calling a function is not.
fn straight_macros(shapes: &HashMap<String, MacroShape>) -> Vec<(String, bool)> {
    let mut straight: HashSet<&String> = HashSet::new();
    loop {
        let before = straight.len();
        for (name, shape) in shapes {
            let invokes_straight = shape.invokes.iter().all(|m| {
                shapes.get_key_value(m).is_some_and(|(k, _)| straight.contains(k)) || CHEAP_MACROS.contains(&m.as_str())
            });
            if !shape.declares && !shape.runs_code && invokes_straight {
                straight.insert(name);
            }
        }
        if straight.len() == before {
            break;
        }
    }
    let mut all: Vec<(String, bool)> = shapes.keys().map(|name| (name.clone(), straight.contains(name))).collect();
    all.sort();
    all
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

impl Extractor {
    fn off(&self, offset: usize) -> usize {
        self.base + offset
    }

    fn items(&mut self, items: &[Item], out: &mut ModItems, scope: &Scope) {
        for item in items {
            self.item(item, out, scope);
        }
    }

    pub(super) fn item(&mut self, item: &Item, out: &mut ModItems, scope: &Scope) {
        match item {
            Item::Fn(f) => {
                let test_only = scope.test_only || is_cfg_test(&f.attrs) || f.attrs.iter().any(is_test_attr);
                let generics = generics_of(&f.sig.generics);
                let fn_scope = Scope { test_only, generics: [scope.generics.clone(), generics].concat() };
                let mut item = self.function(&f.attrs, &f.sig, Some(&f.block), &fn_scope);
                item.cfg = cfg::of_attrs(&f.attrs);
                out.fns.push(item);
            }
            Item::Impl(imp) => {
                let info = self.impl_item(imp, scope);
                out.impls.push(info);
            }
            Item::Trait(t) => {
                let info = self.trait_item(t, scope);
                out.traits.push(info);
            }
            Item::Mod(m) => {
                let info = self.mod_item(m, scope);
                out.mods.push(info);
            }
            Item::Use(u) => {
                let mut prefix = PathRef { segs: Vec::new(), leading_colon: u.leading_colon.is_some() };
                flatten_use(&u.tree, &mut prefix, &mut out.uses);
            }
            Item::ExternCrate(e) => out.uses.push(extern_crate_use(e)),
            Item::Struct(s) => {
                let generics = generics_of(&s.generics);
                let mut item = data_type(&s.ident, &s.attrs, numbered_fields(&s.fields, "", &generics));
                // A const parameter's argument reads like a type (`Buf<N>`): positions would not line up.
                if s.generics.const_params().next().is_none() {
                    item.generic_fields = generic_fields(&s.fields, &generics);
                }
                out.types.push(item);
            }
            Item::Union(u) => {
                let generics = generics_of(&u.generics);
                let fields = u
                    .fields
                    .named
                    .iter()
                    .filter_map(|f| f.ident.as_ref().map(|i| (i.to_string(), value_ty_ref(&f.ty, &generics))))
                    .collect();
                out.types.push(data_type(&u.ident, &u.attrs, fields));
            }
            Item::Enum(e) => {
                let generics = generics_of(&e.generics);
                // Variant fields as `Variant::field` (`Variant::0`), for the bindings of patterns.
                let fields = e
                    .variants
                    .iter()
                    .flat_map(|v| numbered_fields(&v.fields, &format!("{}::", v.ident), &generics))
                    .collect();
                out.types.push(data_type(&e.ident, &e.attrs, fields));
            }
            Item::Type(t) => {
                let generics = generics_of(&t.generics);
                out.types.push(TypeItem {
                    name: t.ident.to_string(),
                    fields: Vec::new(),
                    alias: Some(ty_ref(&t.ty, &generics)),
                    is_copy: false,
                    generic_fields: Vec::new(),
                });
            }
            Item::Static(s) if s.attrs.iter().any(|a| a.path().is_ident("global_allocator")) => {
                let ty = s.ty.span().byte_range();
                let expr = s.expr.span().byte_range();
                out.global_allocators.push(AllocatorSite {
                    line: line_of(s.static_token.span),
                    ty: (self.off(ty.start), self.off(ty.end)),
                    expr: (self.off(expr.start), self.off(expr.end)),
                });
            }
            Item::ForeignMod(fm) => self.foreign_items(fm, out, scope),
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

    fn impl_item(&mut self, imp: &syn::ItemImpl, scope: &Scope) -> ImplItemInfo {
        let test_only = scope.test_only || is_cfg_test(&imp.attrs);
        let impl_generics = [scope.generics.clone(), generics_of(&imp.generics)].concat();
        let mut info = ImplItemInfo {
            self_ty: ty_ref(&imp.self_ty, &impl_generics),
            self_ty_text: without_lifetimes(&type_text(&imp.self_ty)),
            trait_path: imp.trait_.as_ref().map(|(p, _)| PathRef::from_syn(p)),
            trait_args: imp
                .trait_
                .as_ref()
                .and_then(|(p, _)| p.segments.last())
                .map(|s| without_lifetimes(&tokens_text(&quote::ToTokens::to_token_stream(&s.arguments))))
                .unwrap_or_default(),
            deref_target: None,
            fns: Vec::new(),
            cfg: cfg::of_attrs(&imp.attrs),
        };
        for ii in &imp.items {
            match ii {
                ImplItem::Type(t) if t.ident == "Target" => {
                    info.deref_target = Some(value_ty_ref(&t.ty, &impl_generics))
                }
                ImplItem::Fn(m) => {
                    let test_only = test_only || is_cfg_test(&m.attrs) || m.attrs.iter().any(is_test_attr);
                    let generics = [impl_generics.clone(), generics_of(&m.sig.generics)].concat();
                    let fn_scope = Scope { test_only, generics };
                    let mut item = self.function(&m.attrs, &m.sig, Some(&m.block), &fn_scope);
                    item.cfg = cfg::of_attrs(&m.attrs);
                    info.fns.push(item);
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
        info
    }

    fn trait_item(&mut self, t: &syn::ItemTrait, scope: &Scope) -> TraitItemInfo {
        let test_only = scope.test_only || is_cfg_test(&t.attrs);
        let trait_generics = [scope.generics.clone(), generics_of(&t.generics)].concat();
        let mut info = TraitItemInfo {
            name: t.ident.to_string(),
            method_names: Vec::new(),
            defaults: Vec::new(),
            supertraits: bounds_of(t.supertraits.iter()),
            test_only,
            cfg: cfg::of_attrs(&t.attrs),
        };
        for ti in &t.items {
            if let TraitItem::Fn(m) = ti {
                info.method_names.push(m.sig.ident.to_string());
                if let Some(block) = &m.default {
                    let generics = [trait_generics.clone(), generics_of(&m.sig.generics)].concat();
                    let fn_scope = Scope { test_only, generics };
                    let mut item = self.function(&m.attrs, &m.sig, Some(block), &fn_scope);
                    item.cfg = cfg::of_attrs(&m.attrs);
                    info.defaults.push(item);
                }
            }
        }
        info
    }

    fn mod_item(&mut self, m: &syn::ItemMod, scope: &Scope) -> ModItem {
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
        ModItem {
            name: m.ident.to_string(),
            line: line_of(m.ident.span()),
            path_attr: path_attr(&m.attrs),
            test_only,
            cfg: cfg::of_attrs(&m.attrs),
            kind,
        }
    }

    /// The functions an `extern` block declares: never probed.
    fn foreign_items(&mut self, fm: &syn::ItemForeignMod, out: &mut ModItems, scope: &Scope) {
        for fi in &fm.items {
            match fi {
                syn::ForeignItem::Fn(f) => {
                    let mut item = self.function(&f.attrs, &f.sig, None, scope);
                    item.skip = Some(SkipReason::ExternBlock);
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
                            skip: Some(SkipReason::ExternBlock),
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
        if let ReturnType::Type(_, ty) = &sig.output {
            item.returns = Some(value_ty_ref(ty, &scope.generics));
        }
        for input in &sig.inputs {
            match input {
                FnArg::Receiver(r) => {
                    item.has_self = true;
                    let by_value = match &r.kind {
                        ReceiverKind::Value => true,
                        ReceiverKind::Typed(_, ty) => matches!(&**ty, Type::Path(p) if p.path.is_ident("Self")),
                        _ => false,
                    };
                    if by_value {
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
            Some(SkipReason::GeneratedByMacro(name.clone()))
        } else if attrs.iter().any(is_test_attr) {
            Some(SkipReason::TestFunction)
        } else if scope.test_only {
            Some(SkipReason::TestOnly)
        } else if sig.constness.is_some() {
            Some(SkipReason::ConstFn)
        } else if naked {
            Some(SkipReason::Naked)
        } else {
            None
        };
        let Some(block) = block else { return item };
        item.probe = self.probe(attrs, sig, block, &mut item.skip);
        item.builds_for_later = super::deferred::builds_for_later(sig, block);
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
            spawns: Vec::new(),
            adopted_parallel_starts: Vec::new(),
            parse_targets: HashMap::new(),
            into_targets: HashMap::new(),
            arm_scrutinee: None,
            macro_depth: 0,
        };
        for input in &sig.inputs {
            if let FnArg::Typed(pt) = input {
                let ty = value_ty_ref(&pt.ty, body.generics);
                if let Pat::Ident(pi) = &*pt.pat {
                    body.env.insert(pi.ident.to_string(), ty);
                    body.params.insert(pi.ident.to_string());
                } else if let Some((name, inner)) = newtype_binding(&pt.pat, &pt.ty, body.generics) {
                    body.env.insert(name, inner);
                }
                body.visit_pat(&pt.pat);
            }
        }
        // `fn f(..) -> Failure { inner.into() }`: the tail's `.into()` converts to the declared return type.
        if let (syn::ReturnType::Type(_, ty), None, Some(syn::Stmt::Expr(Expr::MethodCall(into), None))) =
            (&sig.output, sig.asyncness, block.stmts.last())
        {
            if into.method == "into" && into.args.is_empty() {
                let target = value_ty_ref(ty, body.generics);
                let at = body.ex.base + into.method.span().byte_range().start;
                body.into_targets.insert(at, target);
            }
        }
        body.visit_block(block);
        if sig.asyncness.is_none() {
            let mut shape = StraightLine { straight: true, ..StraightLine::default() };
            // The body itself: each statement counts, a lone tail expression too (`shape` leaves out only the blocks
            // of one expression nested in it).
            block.stmts.iter().for_each(|stmt| shape.visit_stmt(stmt));
            item.straight_line_stmts = (shape.straight && shape.arg_closures == 0).then_some(shape.stmts);
            item.forwarding_stmts = shape.straight.then_some(shape.stmts);
            if shape.straight {
                item.straight_line_macros = shape.macros;
            }
        }
        let BodyVisitor { calls, items, calls_params, polls_params, spawns, .. } = body;
        item.calls = calls.into();
        item.spawns = spawns;
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
        skip: &mut Option<SkipReason>,
    ) -> Option<ProbeDraft> {
        let brace = block.brace_token.span.open();
        // After the body's `{` and its inner attributes: (byte offset, line) of the later end.
        let (open, line) = attrs
            .iter()
            .filter(|a| matches!(a.style, syn::AttrStyle::Inner(_)))
            .map(|a| (a.span().byte_range().end, a.span().end().line))
            .chain([(brace.byte_range().end, brace.start().line)])
            .max()
            .unwrap_or((brace.byte_range().end, brace.start().line));
        let (open, line) = (self.off(open), line as u32);
        let close = self.off(block.brace_token.span.close().byte_range().start);
        let errs = err_counting(attrs, &sig.output);
        if sig.asyncness.is_some() {
            return Some(ProbeDraft {
                kind: ProbeKind::Async,
                line,
                open,
                close,
                return_type: self.return_type(&sig.output),
                errs,
                body_in_closure: false,
                body_twice: false,
            });
        }
        if let ReturnType::Type(_, ty) = &sig.output {
            if returns_future(ty) {
                if let Some(Stmt::Expr(Expr::Async(tail), None)) = block.stmts.last() {
                    return Some(ProbeDraft {
                        kind: ProbeKind::AsyncBlock,
                        line: line_of(tail.async_token.span),
                        open: self.off(tail.async_token.span.byte_range().start),
                        close: self.off(tail.block.brace_token.span.close().byte_range().end),
                        return_type: None,
                        errs: ErrCounting::NotAResult,
                        body_in_closure: false,
                        body_twice: false,
                    });
                }
                if skip.is_none() {
                    *skip = Some(SkipReason::FutureWithoutAsyncTail);
                }
                return None;
            }
        }
        // A body whose `Err`s are counted is wrapped, and so is one that fits the runtime's closure (`run`): its
        // closing text goes before the body's `}`, its type pinned to the return type. Otherwise the probe is a guard
        // declared first. A body that may be written twice is, whatever its parameters: the quiet copy in place as
        // written, the other in the form it would have alone (in a closure when its `Err`s are counted, as the guard
        // form's are; else in place under the guard: calltime-rt's `quiet_guard_in!`).
        let in_closure = body_fits_a_closure(attrs, sig);
        let wrapped = errs == ErrCounting::Counted || (errs == ErrCounting::NotAResult && in_closure);
        let never = matches!(&sig.output, ReturnType::Type(_, ty) if matches!(**ty, Type::Never(_)));
        let twice = (wrapped || !never)
            && !returns_impl_trait(&sig.output)
            && may_be_written_twice(block, &self.item_free_macros);
        Some(ProbeDraft {
            kind: ProbeKind::Sync,
            line,
            open,
            close: if wrapped || twice { close } else { open },
            return_type: if wrapped { self.return_type(&sig.output) } else { None },
            errs,
            body_in_closure: wrapped && in_closure,
            body_twice: twice,
        })
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

/// `extern crate x as y;` as the `use` it amounts to.
fn extern_crate_use(e: &syn::ItemExternCrate) -> UseItem {
    let name = e.ident.to_string();
    let alias = e.rename.as_ref().map(|(_, i)| i.to_string()).unwrap_or_else(|| name.clone());
    let path = if name == "self" {
        PathRef { segs: vec!["crate".into()], leading_colon: false }
    } else {
        PathRef { segs: vec![name], leading_colon: true }
    };
    UseItem { path, kind: UseKind::Name(alias) }
}

/// Fields by name, or by position for tuple fields, each prefixed with `prefix`.
fn numbered_fields(fields: &syn::Fields, prefix: &str, generics: &[(String, Vec<PathRef>)]) -> Vec<(String, TyRef)> {
    fields
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let name = f.ident.as_ref().map(|i| i.to_string()).unwrap_or_else(|| i.to_string());
            (format!("{prefix}{name}"), value_ty_ref(&f.ty, generics))
        })
        .collect()
}

/// A struct, enum or union.
fn data_type(ident: &syn::Ident, attrs: &[Attribute], fields: Vec<(String, TyRef)>) -> TypeItem {
    TypeItem { name: ident.to_string(), fields, alias: None, is_copy: derives_copy(attrs), generic_fields: Vec::new() }
}

/// The fields whose type is one of `generics` (through references and smart pointers), with its position.
fn generic_fields(fields: &syn::Fields, generics: &[(String, Vec<PathRef>)]) -> Vec<(String, usize)> {
    fn param_of(ty: &Type, generics: &[(String, Vec<PathRef>)]) -> Option<usize> {
        match ty {
            Type::Reference(r) => param_of(&r.elem, generics),
            Type::Paren(p) => param_of(&p.elem, generics),
            Type::Group(g) => param_of(&g.elem, generics),
            Type::Path(tp) if tp.qself.is_none() => {
                if let Some(ident) = tp.path.get_ident() {
                    return generics.iter().position(|(n, _)| ident == n);
                }
                let last = tp.path.segments.last()?;
                if !SMART_POINTERS.iter().any(|s| last.ident == s) {
                    return None;
                }
                let syn::PathArguments::AngleBracketed(args) = &last.arguments else { return None };
                match args.args.first()? {
                    syn::GenericArgument::Type(inner) => param_of(inner, generics),
                    _ => None,
                }
            }
            _ => None,
        }
    }
    fields
        .iter()
        .enumerate()
        .filter_map(|(i, f)| {
            let name = f.ident.as_ref().map(|i| i.to_string()).unwrap_or_else(|| i.to_string());
            Some((name, param_of(&f.ty, generics)?))
        })
        .collect()
}

fn parse_impl_items(input: syn::parse::ParseStream) -> syn::Result<Vec<ImplItem>> {
    let mut items = Vec::new();
    while !input.is_empty() {
        items.push(input.parse()?);
    }
    Ok(items)
}

/// The type name of a by-value parameter whose drop may run code, `?` when the type is not a plain path; `None`
/// for references, raw pointers, function pointers and primitive types, and tuples, arrays and std plain data
/// ([`std_plain_data`]) of them.
fn dropped_type(ty: &Type) -> Option<String> {
    match ty {
        Type::Reference(_) | Type::Ptr(_) | Type::FnPtr(_) | Type::Never(_) => None,
        Type::Paren(p) => dropped_type(&p.elem),
        Type::Group(g) => dropped_type(&g.elem),
        Type::Path(p) if p.qself.is_none() => {
            let last = p.path.segments.last().map(|s| s.ident.to_string()).unwrap_or_default();
            (!PRIMITIVES.contains(&last.as_str()) && !std_plain_data(p)).then_some(last)
        }
        Type::Tuple(t) if t.elems.iter().all(|e| dropped_type(e).is_none()) => None,
        Type::Array(a) if dropped_type(&a.elem).is_none() => None,
        _ => Some("?".to_owned()),
    }
}

/// std's plain-data types whose drop runs no code when their type arguments' do not: `Option<usize>`,
/// `RangeFrom<usize>`, `Bound<&T>`, `Ordering` (winnow's `Range::raw(start, end: Option<usize>)`).
fn std_plain_data(p: &syn::TypePath) -> bool {
    const PLAIN: &[&str] = &[
        "Option",
        "Range",
        "RangeFrom",
        "RangeTo",
        "RangeInclusive",
        "RangeToInclusive",
        "RangeFull",
        "Bound",
        "Ordering",
        "Duration",
        "PhantomData",
    ];
    let Some(last) = p.path.segments.last() else { return false };
    if !PLAIN.iter().any(|name| last.ident == name) {
        return false;
    }
    match &last.arguments {
        syn::PathArguments::None => true,
        syn::PathArguments::AngleBracketed(args) => args.args.iter().all(|a| match a {
            syn::GenericArgument::Type(ty) => last.ident == "PhantomData" || dropped_type(ty).is_none(),
            syn::GenericArgument::Lifetime(_) => true,
            _ => false,
        }),
        syn::PathArguments::Parenthesized(_) => false,
    }
}

fn derives_copy(attrs: &[Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("derive")
            && a.parse_args_with(Punctuated::<syn::Path, syn::Token![,]>::parse_terminated)
                .is_ok_and(|paths| paths.iter().any(|p| p.segments.last().is_some_and(|s| s.ident == "Copy")))
    })
}

/// Whether a function's `Err` returns can be counted: it returns a type whose last path segment ends in `Result`
/// (`Result<T, E>`, `io::Result<T>`, an alias `ParseResult`), and is not `#[track_caller]` (whose body cannot move
/// into a closure without changing the location it reports).
fn err_counting(attrs: &[Attribute], output: &ReturnType) -> ErrCounting {
    let ReturnType::Type(_, ty) = output else { return ErrCounting::NotAResult };
    let Type::Path(tp) = &**ty else { return ErrCounting::NotAResult };
    if tp.qself.is_some() || !tp.path.segments.last().is_some_and(|s| s.ident.to_string().ends_with("Result")) {
        return ErrCounting::NotAResult;
    }
    if attrs.iter().any(|a| a.path().is_ident("track_caller")) {
        return ErrCounting::TrackCaller;
    }
    ErrCounting::Counted
}

/// Whether a sync body can run in a `move` closure with the same meaning (`plan::ProbeSite::body_in_closure`):
/// not `#[track_caller]` (a closure cannot pass the caller's location on), not returning `!` (not a type argument
/// on stable), and only parameters whose move into the closure drops nothing: references, raw pointers, primitive
/// scalars, `&self` and `&mut self`. Decided on syntax alone, so a type alias of a primitive does not count.
fn body_fits_a_closure(attrs: &[Attribute], sig: &syn::Signature) -> bool {
    fn drops_nothing(ty: &Type) -> bool {
        match ty {
            Type::Reference(_) | Type::Ptr(_) => true,
            Type::Paren(t) => drops_nothing(&t.elem),
            Type::Path(tp) => {
                tp.qself.is_none()
                    && tp.path.leading_colon.is_none()
                    && tp.path.segments.len() == 1
                    && tp.path.segments[0].arguments.is_empty()
                    && SCALARS.iter().any(|s| tp.path.segments[0].ident == s)
            }
            _ => false,
        }
    }
    const SCALARS: [&str; 16] = [
        "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32", "i64", "i128", "isize", "f32", "f64", "bool",
        "char",
    ];
    if attrs.iter().any(|a| a.path().is_ident("track_caller")) || sig.variadic.is_some() {
        return false;
    }
    if let ReturnType::Type(_, ty) = &sig.output {
        if matches!(**ty, Type::Never(_)) {
            return false;
        }
    }
    sig.inputs.iter().all(|input| match input {
        syn::FnArg::Receiver(r) => match &r.kind {
            syn::ReceiverKind::Reference(..) => true,
            syn::ReceiverKind::Typed(_, ty) => matches!(**ty, Type::Reference(_)),
            _ => false,
        },
        syn::FnArg::Typed(t) => drops_nothing(&t.ty),
    })
}

/// Whether a body written twice (the runtime's `quiet_in!`: a copy in place for quiet calls, one in a closure for
/// the others) means what it meant once: it declares no item but `use`, `const`, `type` and nested functions that
/// could be written twice themselves (a `static` written twice is two statics, each seeing part of the calls; an
/// `impl` written twice conflicts with itself; a nested `fn` is one per copy, each block its own scope, unless its
/// symbol is fixed by `#[no_mangle]` or `#[export_name]`), and no statement macro that may declare one: one in
/// braces, unless it is one of the file's `item_free_macros` invoked with no item word in its tokens (serde_json's
/// `check_recursion! { .. }`), or `thread_local!`, `lazy_static!`, `global_asm!`. Macros in expression position
/// are taken as expressions: a `static` one declares inside its own block (a logging macro's call site) would be
/// one per copy, which only splits that call site in two.
fn may_be_written_twice(block: &syn::Block, item_free_macros: &HashSet<String>) -> bool {
    const ITEM_MACROS: [&str; 4] = ["thread_local", "lazy_static", "global_asm", "macro_rules"];
    const FIXED_SYMBOL: [&str; 4] = ["no_mangle", "export_name", "link_section", "unsafe"];
    struct Declares<'a> {
        declares: bool,
        item_free_macros: &'a HashSet<String>,
    }
    impl<'ast> Visit<'ast> for Declares<'_> {
        fn visit_item(&mut self, item: &'ast syn::Item) {
            match item {
                syn::Item::Use(_) | syn::Item::Const(_) | syn::Item::Type(_) => {}
                // A nested function is judged by its own body (a `static` in it would be two as well).
                syn::Item::Fn(f) if !f.attrs.iter().any(|a| FIXED_SYMBOL.iter().any(|w| a.path().is_ident(w))) => {
                    self.visit_block(&f.block)
                }
                _ => self.declares = true,
            }
        }
        fn visit_stmt_macro(&mut self, stmt: &'ast syn::StmtMacro) {
            let name = stmt.mac.path.segments.last().map(|s| s.ident.to_string()).unwrap_or_default();
            if ITEM_MACROS.contains(&name.as_str()) {
                self.declares = true;
            } else if matches!(stmt.mac.delimiter, syn::MacroDelimiter::Brace(_)) {
                let mut tokens = MacroShape::default();
                scan_macro_tokens(stmt.mac.tokens.clone(), &mut tokens);
                let free = |name: &String| self.item_free_macros.contains(name);
                let known = stmt.mac.path.get_ident().is_some_and(|i| free(&i.to_string()));
                // Macros in braces inside its tokens may stand as statements of the expansion: judged likewise.
                if !known || tokens.declares || !tokens.brace_invokes.iter().all(free) {
                    self.declares = true;
                }
            }
        }
    }
    let mut declares = Declares { declares: false, item_free_macros };
    declares.visit_block(block);
    !declares.declares
}

/// Whether the return type holds an `impl Trait` anywhere (`impl Iterator`, `Option<impl Fn()>`): its value may
/// hold a closure's or an async block's type, which differs in each copy of a body written twice, so the two copies
/// would not have the same type (minijinja's `LoaderStore::iter`: "`if` and `else` have incompatible types").
fn returns_impl_trait(output: &ReturnType) -> bool {
    struct HasImpl(bool);
    impl<'ast> Visit<'ast> for HasImpl {
        fn visit_type_impl_trait(&mut self, _: &'ast syn::TypeImplTrait) {
            self.0 = true;
        }
    }
    let ReturnType::Type(_, ty) = output else { return false };
    let mut has = HasImpl(false);
    has.visit_type(ty);
    has.0
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
            if BOXED_FUTURES.iter().any(|name| last.ident == name) {
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
    out.push_str(&tokens_text(&filtered));
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
        assert_eq!(items.fns[2].skip, Some(SkipReason::FutureWithoutAsyncTail));
        assert_eq!(items.fns[3].probe.as_ref().unwrap().return_type, None);
    }

    #[test]
    fn err_counting_follows_the_return_type_and_track_caller() {
        let text = "fn a() -> Result<u8, E> { Ok(1) }\n\
                    fn b() -> io::Result<()> { Ok(()) }\n\
                    fn c() -> ParseResult<u8> { todo!() }\n\
                    #[track_caller] fn d() -> Result<u8, E> { Ok(1) }\n\
                    fn e() -> Option<u8> { None }\n\
                    fn f() -> <T as X>::Result { todo!() }\n\
                    async fn g() -> anyhow::Result<u8> { Ok(1) }\n\
                    fn h() -> Results { todo!() }\n";
        let items = extract_file(text).unwrap().items;
        let errs: Vec<ErrCounting> = items.fns.iter().map(|f| f.probe.as_ref().unwrap().errs).collect();
        use ErrCounting::*;
        assert_eq!(errs, [Counted, Counted, Counted, TrackCaller, NotAResult, NotAResult, Counted, NotAResult]);
        // A counted sync body is wrapped up to its closing brace, pinned to its return type.
        let a = items.fns[0].probe.as_ref().unwrap();
        assert_eq!((&text[a.close..a.close + 1], a.return_type.as_deref()), ("}", Some("Result<u8, E>")));
        // `#[track_caller]`: not wrapped (no closure), but written twice in place, so its closing brace is known.
        let d = items.fns[3].probe.as_ref().unwrap();
        assert_eq!((&text[d.close..d.close + 1], d.return_type.as_deref(), d.body_twice), ("}", None, true));
    }

    #[test]
    fn a_body_is_written_twice_only_when_it_declares_no_item() {
        let text = "fn a(b: u8) -> u8 { 'l: loop { if b > 1 { break 'l b; } return b; } }\n\
                    fn b(s: &str) -> Result<u8, E> { use std::str::FromStr as _; const N: u8 = 1; type T = u8; \
                    let x: T = s.parse()?; tri!(check(x)); Ok(x + N) }\n\
                    fn c() -> usize { static N: AtomicUsize = AtomicUsize::new(0); N.fetch_add(1, Relaxed) }\n\
                    fn d(x: u8) -> u8 { struct W(u8); impl W { fn get(&self) -> u8 { self.0 } } W(x).get() }\n\
                    fn e(x: u8) -> u8 { fn inner(x: u8) -> u8 { x } { inner(x) } }\n\
                    fn f() -> u8 { thread_local!(static T: u8 = 1); T.with(|t| *t) }\n\
                    fn g() -> u8 { my_items! { 1 } 2 }\n\
                    fn h() -> u8 { let f = || { static S: u8 = 1; S }; f() }\n\
                    fn i(v: Vec<u8>) -> usize { v.len() }\n\
                    fn j(v: &[u8]) -> impl Iterator<Item = u8> + '_ { v.iter().map(|x| x + 1) }\n\
                    fn k(v: &[u8]) -> Option<Box<impl Fn() -> u8>> { let n = v.len() as u8; Some(Box::new(move || n)) }\n\
                    fn l(v: &[u8]) -> Box<dyn Fn() -> u8> { let n = v.len() as u8; Box::new(move || n) }\n\
                    fn m(x: u8) -> u8 { fn inner() -> u8 { static S: u8 = 1; S } inner() + x }\n\
                    fn n(x: u8) -> u8 { #[no_mangle] extern \"C\" fn inner() -> u8 { 1 } inner() + x }\n\
                    macro_rules! counted { ($this:ident $($body:tt)*) => { nested! { $this.depth -= 1; } \
                    $this $($body)* assert!($this.depth > 0); }; }\n\
                    macro_rules! nested { ($($body:tt)*) => { $($body)* }; }\n\
                    macro_rules! declaring { ($name:ident) => { static $name: u8 = 1; }; }\n\
                    macro_rules! calls_unknown { ($($body:tt)*) => { unknown! { $($body)* } }; }\n\
                    fn o(&mut self) -> u8 { counted! { self.eat(); let r = self.r; } r }\n\
                    fn p() -> u8 { declaring! { X } X }\n\
                    fn q(&mut self) -> u8 { calls_unknown! { self.r } }\n\
                    fn r(&mut self) -> u8 { counted! { self.eat(); static S: u8 = 1; } S }\n\
                    fn s(&mut self) -> u8 { counted! { self.eat(); unknown! { 1 } } 2 }\n";
        let items = extract_file(text).unwrap().items;
        let twice: Vec<(&str, bool)> =
            items.fns.iter().map(|f| (f.name.as_str(), f.probe.as_ref().unwrap().body_twice)).collect();
        let expected = [
            ("a", true),
            ("b", true),
            ("c", false),
            ("d", false),
            // A nested function without a `static` of its own: one per copy.
            ("e", true),
            ("f", false),
            ("g", false),
            ("h", false),
            // A parameter taken by value: both copies in place (`quiet_guard_in!`).
            ("i", true),
            ("j", false),
            ("k", false),
            ("l", true),
            ("m", false),
            ("n", false),
            // Statement macros in braces: the file's own, judged by their rules and by their invocation's tokens.
            ("o", true),
            ("p", false),
            ("q", false),
            ("r", false),
            ("s", false),
        ];
        assert_eq!(twice, expected);
    }

    #[test]
    fn a_body_fits_a_closure_when_moving_its_parameters_drops_nothing() {
        let text = "fn a(b: u8, s: &str, p: *const u8) -> u8 { b }\n\
                    impl X { fn b(&self) -> &str { &self.s } fn c(&mut self, x: (usize)) {} }\n\
                    impl X { fn d(self) {} fn e(self: Box<Self>) {} fn f(self: &Self) {} }\n\
                    fn g(v: Vec<u8>) {}\n\
                    fn h<T>(t: T) {}\n\
                    fn i() -> ! { loop {} }\n\
                    #[track_caller] fn j() {}\n\
                    fn k() -> Result<u8, E> { Ok(1) }\n\
                    async fn l(b: u8) {}\n\
                    fn m(x: Option<u8>) {}\n";
        let items = extract_file(text).unwrap().items;
        let methods = items.impls.iter().flat_map(|i| &i.fns);
        let mut fits: Vec<(String, bool)> = (items.fns.iter().chain(methods))
            .map(|f| (f.name.clone(), f.probe.as_ref().unwrap().body_in_closure))
            .collect();
        fits.sort();
        let expected = [
            ("a", true),
            ("b", true),
            ("c", true),
            ("d", false),
            ("e", false),
            ("f", true),
            ("g", false),
            ("h", false),
            ("i", false),
            ("j", false),
            ("k", true),
            ("l", false),
            ("m", false),
        ];
        assert_eq!(fits, expected.map(|(n, b)| (n.to_owned(), b)));
        // The closure ends at the body's closing brace.
        let a = items.fns[0].probe.as_ref().unwrap();
        assert_eq!((&text[a.close..a.close + 1], a.return_type.as_deref()), ("}", Some("u8")));
    }

    /// Extraction one item at a time gives what extraction of the whole file gives, for every source file of the
    /// test crates and of this crate.
    #[test]
    fn item_by_item_extraction_equals_whole_file_extraction() {
        let manifest_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut files = Vec::new();
        let mut dirs = vec![manifest_dir.join("src"), manifest_dir.join("../test-crates")];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).unwrap().flatten() {
                let path = entry.path();
                if path.is_dir() && !path.ends_with("target") {
                    dirs.push(path);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    files.push(path);
                }
            }
        }
        assert!(files.len() > 50, "too few files: {}", files.len());
        let mut cut = 0;
        for path in &files {
            let text = std::fs::read_to_string(path).unwrap();
            let content = text.trim_start_matches('\u{feff}');
            let base = text.len() - content.len();
            let Ok(whole) = extract_whole(base, content) else { continue };
            if let Some(by_items) = extract_by_items(base, content) {
                cut += 1;
                assert_eq!(format!("{by_items:?}"), format!("{whole:?}"), "{}", path.display());
            }
            proc_macro2::extra::invalidate_current_thread_spans();
        }
        assert!(cut * 10 >= files.len() * 9, "only {cut} of {} files cut into items", files.len());
    }

    #[test]
    fn unparsable_text_reports_a_line() {
        let err = extract_file("fn ok() {}\n\nfn bad( {\n").unwrap_err();
        assert_eq!(err.0, 3);
    }
}
