//! The call-site visitor: walks one function body and records its call sites (paths, methods, operators,
//! formatting, `for` loops, drops, lazy statics), the code passed as arguments, and whether it calls or polls its
//! parameters. Receiver types come from [`super::receivers`].

use std::collections::HashMap;

use proc_macro2::{Delimiter, TokenStream, TokenTree};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::visit::Visit;
use syn::{Attribute, Expr, Item, Pat, Stmt, Type};

use super::items::{Extractor, Scope};
use super::receivers::operand_may_be_workspace_type;
use super::std_model::{binary_op_trait, CHEAP_MACROS, FORMAT_MACROS, LOCAL_KEY_METHODS};
use super::syntax::*;

/// Whether a body runs straight through (no loop, closure, async block, `.await`, or macro other than
/// [`CHEAP_MACROS`] and those in `macros`), and how many statements it has.
#[derive(Default)]
pub(super) struct StraightLine {
    pub(super) stmts: u32,
    pub(super) straight: bool,
    /// Closures written as arguments of a call (`input.split_at_position(|c| !c.is_alphanumeric())`): not visited,
    /// and counted here instead of making the body not straight. Their code runs where the callee calls them, so
    /// they matter to a forwarder (`FnItem::forwarding_stmts`), never to a trivial body (which has none).
    pub(super) arg_closures: u32,
    /// The other macros invoked, whose arguments parse as expressions (themselves straight): the body runs straight
    /// through only if these do, which the index judges from the workspace's `macro_rules!`.
    pub(super) macros: Vec<String>,
}

impl<'ast> Visit<'ast> for StraightLine {
    fn visit_item(&mut self, _: &'ast Item) {
        // A nested item is a function of its own, not code of this body.
    }
    fn visit_stmt(&mut self, stmt: &'ast Stmt) {
        // `debug_assert!` compiles to nothing in an optimised build.
        let debug_only = matches!(stmt, Stmt::Macro(m) if macro_name(&m.mac).starts_with("debug_assert"));
        self.stmts += u32::from(!debug_only);
        syn::visit::visit_stmt(self, stmt);
    }
    fn visit_block(&mut self, block: &'ast syn::Block) {
        // A block of one expression (`unsafe { *p }`, `else { None }`) is no code of its own: that expression is.
        match block.stmts.as_slice() {
            [Stmt::Expr(only, None)] => self.visit_expr(only),
            _ => syn::visit::visit_block(self, block),
        }
    }
    fn visit_expr(&mut self, expr: &'ast Expr) {
        let args = match expr {
            Expr::Call(call) => Some(&call.args),
            Expr::MethodCall(call) => Some(&call.args),
            _ => None,
        };
        if let Some(args) = args.filter(|args| args.iter().any(|a| matches!(a, Expr::Closure(_)))) {
            match expr {
                Expr::Call(call) => self.visit_expr(&call.func),
                Expr::MethodCall(call) => self.visit_expr(&call.receiver),
                _ => {}
            }
            for arg in args {
                match arg {
                    Expr::Closure(_) => self.arg_closures += 1,
                    other => self.visit_expr(other),
                }
            }
            return;
        }
        match expr {
            Expr::ForLoop(_) | Expr::While(_) | Expr::Loop(_) | Expr::Closure(_) | Expr::Async(_) | Expr::Await(_) => {
                self.straight = false
            }

            _ => syn::visit::visit_expr(self, expr),
        }
    }
    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        let name = macro_name(mac);
        if CHEAP_MACROS.contains(&name.as_str()) {
            return;
        }
        match mac.parse_body_with(Punctuated::<Expr, syn::Token![,]>::parse_terminated) {
            Ok(args) => {
                args.iter().for_each(|arg| self.visit_expr(arg));
                if !self.macros.contains(&name) {
                    self.macros.push(name);
                }
            }
            Err(_) => self.straight = false,
        }
    }
}

/// Walks one function body: call sites, local types, nested items.
pub(super) struct BodyVisitor<'a> {
    pub(super) ex: &'a mut Extractor,
    pub(super) calls: Vec<CallSite>,
    pub(super) items: ModItems,
    /// Local variables with a type the extraction could see.
    pub(super) env: HashMap<String, TyRef>,
    /// Locals whose type in `env` is only a guess (see [`Receiver::Guessed`]).
    pub(super) guessed: std::collections::HashSet<String>,
    /// Names bound by patterns: a path naming one of them is a local, not a function.
    pub(super) locals: std::collections::HashSet<String>,
    pub(super) generics: &'a [(String, Vec<PathRef>)],
    pub(super) test_only: bool,
    /// The function's parameter names, and whether the body calls one of them (a callback).
    pub(super) params: std::collections::HashSet<String>,
    pub(super) calls_params: bool,
    pub(super) polls_params: bool,
    /// Locals bound to closures (`let handler = |b| ..;`): the calls inside them, for when the local is passed on.
    pub(super) closure_calls: HashMap<String, Vec<u32>>,
    /// Lazy statics whose initializer's calls were added to this body already.
    pub(super) statics_seen: std::collections::HashSet<String>,
    /// Calls that may spawn work elsewhere, outside macro bodies (whose text the rewrite cannot wrap safely).
    pub(super) spawns: Vec<super::spawns::SpawnDraft>,
    /// Byte offsets of the parallel iterators started in the chains adopted in `spawns`.
    pub(super) adopted_parallel_starts: Vec<usize>,
    /// `.parse()` calls whose target type the code names (`let t: Timestamp = s.parse()?`), by the byte offset of
    /// their method name: they run that type's `FromStr::from_str`, not any workspace impl's.
    pub(super) parse_targets: HashMap<usize, TyRef>,
    /// `.into()` calls whose target type the code names (`let e: Failure = inner.into();`), likewise.
    pub(super) into_targets: HashMap<usize, TyRef>,
    /// The type of the `match` scrutinee whose arm is visited next, for the values its `Some(x)`/`Ok(x)` binds.
    pub(super) arm_scrutinee: Option<(TyRef, bool)>,
    pub(super) macro_depth: u32,
}

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
pub(super) fn pat_idents(pat: &Pat, out: &mut Vec<String>) {
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

/// `THREAD_ID`, `CACHE`: a static's or constant's name.
fn is_screaming(name: &str) -> bool {
    name.chars().any(|c| c.is_ascii_uppercase())
        && name.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

pub(super) fn is_type_like(seg: &str) -> bool {
    seg == "Self" || seg.starts_with(|c: char| c.is_ascii_uppercase())
}

impl BodyVisitor<'_> {
    /// The type a `.parse()` call parses, when the code names it: by turbofish (`parse::<u64>()`) or by the `let`
    /// it initialises. Only a named type: a generic parameter's `FromStr` may be any impl.
    fn parse_target(&mut self, call: &syn::ExprMethodCall, name: &str) -> Option<TyRef> {
        if name != "parse" || !call.args.is_empty() {
            return None;
        }
        let from_let = self.parse_targets.remove(&(self.ex.base + call.method.span().byte_range().start));
        let turbofish = call.turbofish.as_ref().and_then(|t| match t.args.first() {
            Some(syn::GenericArgument::Type(ty)) if t.args.len() == 1 => Some(value_ty_ref(ty, self.generics)),
            _ => None,
        });
        turbofish.or(from_let).filter(|t| matches!(t, TyRef::Path(_)))
    }

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

fn merge(a: Option<Vec<u32>>, b: Option<Vec<u32>>) -> Option<Vec<u32>> {
    match (a, b) {
        (Some(mut a), Some(b)) => {
            a.extend(b);
            Some(a)
        }
        (a, b) => a.or(b),
    }
}

pub(super) fn strip_refs(expr: &Expr) -> &Expr {
    match expr {
        Expr::Reference(r) => strip_refs(&r.expr),
        Expr::Paren(p) => strip_refs(&p.expr),
        other => other,
    }
}

impl<'ast> Visit<'ast> for BodyVisitor<'_> {
    fn visit_item(&mut self, item: &'ast Item) {
        // Items in a body are functions of their own (named after the enclosing one), not part of its calls.
        let scope = Scope { test_only: self.test_only, generics: Vec::new() };
        self.ex.item(item, &mut self.items, &scope);
    }

    fn visit_expr_call(&mut self, call: &'ast syn::ExprCall) {
        if self.macro_depth == 0 {
            self.spawns.extend(super::spawns::path_draft(call, self.ex.base));
        }
        let before = self.calls.len();
        match &*call.func {
            Expr::Path(p) => {
                if let Some(ident) = p.path.get_ident() {
                    if self.params.contains(&ident.to_string()) {
                        self.calls_params = true;
                    }
                }
                self.std_trait_path_call(p, call);
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
        self.unbind(&f.pat);
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
        let (mut receiver, recv_text) = self.receiver(&call.receiver);
        let name = call.method.to_string();
        // `THREAD_ID.with(|id| ..)`: a `thread_local!` key, which the macro hides from the index: std's `LocalKey`
        // (a type's name is not SCREAMING_CASE, a static's is).
        if LOCAL_KEY_METHODS.contains(&name.as_str()) && is_screaming(&recv_text) {
            receiver = Receiver::Std("LocalKey");
        }
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
        let kind = match self.parse_target(call, &name) {
            // `str::parse` is `<T as FromStr>::from_str` of the type named at the call or by its `let`.
            Some(target) => CallKind::Qualified {
                self_ty: target,
                trait_path: Some(PathRef { segs: vec!["FromStr".to_owned()], leading_colon: false }),
                name: "from_str".to_owned(),
            },
            None if name == "into" && call.args.is_empty() => {
                let target = self.into_targets.remove(&(self.ex.base + call.method.span().byte_range().start));
                CallKind::Into { receiver, source: variant_type(&call.receiver), target }
            }
            None => CallKind::Method { name, args: Some(call.args.len()), receiver },
        };
        self.calls.push(CallSite {
            line: line_of(call.method.span()),
            text: format!("{recv_text}.{}(..)", call.method),
            kind,
            arg_calls: Vec::new(),
            forwards_param: false,
            arg_futures: Vec::new(),
        });
        let site = self.calls.len() - 1;
        if self.macro_depth == 0 {
            let base = self.ex.base;
            if let Some((chain, starts)) = super::spawns::parallel_chain(call, base) {
                self.adopted_parallel_starts.extend(starts);
                self.spawns.push(chain);
            } else if let Some(draft) = super::spawns::method_draft(call, base) {
                // A parallel iterator started in a chain adopted above (its consumer was visited first).
                let start = base + call.method.span().byte_range().start;
                if !(super::spawns::is_parallel_iterator(&draft) && self.adopted_parallel_starts.contains(&start)) {
                    self.spawns.push(draft);
                }
            }
        }
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
        if let (Pat::Type(pt), Some(init)) = (&local.pat, &local.init) {
            if let Some(parse) = parse_call_in(&init.expr) {
                let target = value_ty_ref(&pt.ty, self.generics);
                self.parse_targets.insert(self.ex.base + parse.method.span().byte_range().start, target);
            }
            if let Expr::MethodCall(into) = strip_parens(&init.expr) {
                if into.method == "into" && into.args.is_empty() {
                    let target = value_ty_ref(&pt.ty, self.generics);
                    self.into_targets.insert(self.ex.base + into.method.span().byte_range().start, target);
                }
            }
        }
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
            Pat::Type(pt) => (&*pt.pat, Some((value_ty_ref(&pt.ty, self.generics), false))),
            other => (other, None),
        };
        if let Pat::Ident(pi) = pat {
            let ty = ty.or_else(|| local.init.as_ref().and_then(|i| self.init_type(&i.expr)));
            if let Some((t, _)) = ty.as_ref().filter(|(t, _)| !matches!(t, TyRef::Std(_))) {
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
            self.unbind(input);
            if let Pat::Type(pt) = input {
                if let Pat::Ident(pi) = &*pt.pat {
                    self.env.insert(pi.ident.to_string(), value_ty_ref(&pt.ty, self.generics));
                }
            }
            self.visit_pat(input);
        }
        self.visit_expr(&c.body);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.macro_depth += 1;
        self.visit_macro_tokens(mac);
        self.macro_depth -= 1;
    }

    fn visit_expr_await(&mut self, a: &'ast syn::ExprAwait) {
        if self.is_param(&a.base) {
            self.polls_params = true;
        }
        syn::visit::visit_expr_await(self, a);
    }

    fn visit_arm(&mut self, arm: &'ast syn::Arm) {
        let scrutinee = self.arm_scrutinee.take();
        self.unbind(&arm.pat);
        self.bind_pattern_types(&arm.pat, scrutinee.as_ref());
        syn::visit::visit_arm(self, arm);
    }

    fn visit_expr_let(&mut self, l: &'ast syn::ExprLet) {
        let scrutinee = self.scrutinee_type(&l.expr);
        self.unbind(&l.pat);
        self.bind_pattern_types(&l.pat, scrutinee.as_ref());
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
        self.visit_expr(&m.expr);
        // Typed before any arm binds (`match x { Some(x) => .. }`), and handed to each arm as it is visited.
        let scrutinee = self.scrutinee_type(&m.expr);
        for arm in &m.arms {
            self.arm_scrutinee = scrutinee.clone();
            self.visit_arm(arm);
        }
        self.arm_scrutinee = None;
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

/// The `.parse()` whose value `init` is, through what passes a parsed value on (`?`, `.unwrap()`, `.expect(..)`,
/// `.unwrap_or(..)` and the like): `let t: T = text.parse().expect("..")` parses a `T`.
pub(super) fn strip_parens(expr: &Expr) -> &Expr {
    match expr {
        Expr::Paren(p) => strip_parens(&p.expr),
        other => other,
    }
}

/// The enum an enum variant written as a value belongs to (`Inner::Missing`, `Inner::Short { .. }`,
/// `Inner::Pair(..)`: `Inner`), which the receiver's type cannot name (a variant is no type).
fn variant_type(expr: &Expr) -> Option<String> {
    let path = match strip_parens(expr) {
        Expr::Path(p) if p.qself.is_none() => &p.path,
        Expr::Struct(s) if s.qself.is_none() => &s.path,
        Expr::Call(c) => match &*c.func {
            Expr::Path(p) if p.qself.is_none() => &p.path,
            _ => return None,
        },
        _ => return None,
    };
    let segs: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
    match segs.as_slice() {
        [.., ty, variant] if ty != "Self" && is_type_like(ty) && is_type_like(variant) && !is_screaming(variant) => {
            Some(ty.clone())
        }
        _ => None,
    }
}

fn parse_call_in(init: &Expr) -> Option<&syn::ExprMethodCall> {
    match init {
        Expr::Try(t) => parse_call_in(&t.expr),
        Expr::Paren(p) => parse_call_in(&p.expr),
        Expr::MethodCall(call) if call.method == "parse" && call.args.is_empty() => Some(call),
        Expr::MethodCall(call)
            if matches!(
                call.method.to_string().as_str(),
                "unwrap" | "expect" | "unwrap_or" | "unwrap_or_default" | "unwrap_or_else" | "unwrap_unchecked"
            ) =>
        {
            parse_call_in(&call.receiver)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
