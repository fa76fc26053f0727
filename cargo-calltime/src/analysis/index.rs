//! The workspace index: modules with their value and type namespaces, functions, types, traits and impls, with
//! `use` declarations resolved to a fixed point and every function named the way rustc prints it.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use super::cfg::Cfg;
use super::modules::{CrateSpec, DepTarget, SourceSet};
use super::syntax::{FnItem, ModItems, ModKind, PathRef, TyRef, UseItem, UseKind};
use crate::plan::SkipReason;

pub type ModId = usize;
pub type FnId = usize;
pub type TypeId = usize;
pub type TraitId = usize;
pub type ImplId = usize;
pub type CrateId = usize;

/// What a name in the type namespace stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TypeRes {
    Module(ModId),
    Type(TypeId),
    Trait(TraitId),
    /// Something outside the workspace (a dependency, std).
    External,
}

#[derive(Debug, Default)]
pub struct Module {
    pub krate: CrateId,
    pub parent: Option<ModId>,
    pub name: String,
    /// Set for the scope of a function body that declares items.
    pub block_of: Option<FnId>,
    pub test_only: bool,
    /// Items and explicit imports.
    pub types: HashMap<String, TypeRes>,
    pub values: HashMap<String, Vec<FnId>>,
    /// Glob imports: looked at only when the name is neither an item nor explicitly imported.
    pub glob_types: HashMap<String, TypeRes>,
    pub glob_values: HashMap<String, Vec<FnId>>,
    /// Has a glob import of something outside the workspace (`use std::cmp::*;`): unknown names may come from it.
    pub external_glob: bool,
}

/// What nested items inherit from the items that hold them.
#[derive(Debug, Clone, Default)]
struct Inherited {
    test_only: bool,
    /// The `#[cfg(..)]` that is false for the crate, when one of the enclosing items (or the item) has one.
    compiled_out: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    Free,
    Impl(ImplId),
    /// A trait's default body.
    Trait(TraitId),
}

#[derive(Debug)]
pub struct FnDef {
    pub item: FnItem,
    pub krate: CrateId,
    /// The module that declares it (for a method, the impl's module).
    pub module: ModId,
    /// Where paths in its body resolve: its own block scope when the body declares items.
    pub scope: ModId,
    pub owner: Owner,
    pub file: usize,
    /// rustc-style: `krate::m::f`, `<krate::T as krate::Tr>::m`.
    pub path: String,
    /// The defining path the root and filter match: `krate::m::T::m`.
    pub match_path: String,
}

#[derive(Debug)]
pub struct TypeDef {
    pub module: ModId,
    pub name: String,
    pub fields: HashMap<String, TyRef>,
    pub alias: Option<TyRef>,
    pub impls: Vec<ImplId>,
    /// Declared with `#[derive(Copy)]` (every declaration of it under `#[cfg]` variants).
    pub is_copy: bool,
    /// Fields of one of the type's own generic parameters, by the parameter's position (`TypeItem::generic_fields`).
    pub generic_fields: HashMap<String, usize>,
}

#[derive(Debug)]
pub struct TraitDef {
    pub module: ModId,
    pub name: String,
    pub method_names: HashSet<String>,
    pub defaults: HashMap<String, Vec<FnId>>,
    pub supertrait_paths: Vec<PathRef>,
    pub supertraits: Vec<TraitId>,
    pub impls: Vec<ImplId>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SelfRes {
    Local(TypeId),
    /// `impl<T: Bound> Trait for T`
    Blanket,
    /// A type outside the workspace, by its last path segment (`Vec`).
    Foreign(String),
}

#[derive(Debug)]
pub struct ImplDef {
    pub module: ModId,
    pub self_ty: TyRef,
    pub self_ty_text: String,
    pub trait_path: Option<PathRef>,
    /// `<i64>` of `impl From<i64> for T`: part of the methods' rustc-style paths, which must be unique.
    pub trait_args: String,
    /// `type Target = X;` of the impl, for auto-deref.
    pub deref_target: Option<TyRef>,
    pub self_res: SelfRes,
    pub trait_res: Option<TypeRes>,
    pub methods: HashMap<String, Vec<FnId>>,
}

#[derive(Debug)]
pub struct CrateDef {
    pub spec: CrateSpec,
    pub root: ModId,
    pub extern_prelude: HashMap<String, TypeRes>,
    /// Crates this one can name: itself and its workspace dependencies, transitively.
    pub visible: HashSet<CrateId>,
}

#[derive(Debug, Default)]
pub struct Index {
    pub crates: Vec<CrateDef>,
    pub modules: Vec<Module>,
    pub fns: Vec<FnDef>,
    pub types: Vec<TypeDef>,
    pub traits: Vec<TraitDef>,
    pub impls: Vec<ImplDef>,
    pub files: Vec<PathBuf>,
    file_ids: HashMap<PathBuf, usize>,
    /// Unresolved `use`s per module, kept for the fixed point.
    uses: Vec<(ModId, UseItem)>,
    child_mods: HashMap<(ModId, String), ModId>,
    type_ids: HashMap<(ModId, String), TypeId>,
    trait_ids: HashMap<(ModId, String), TraitId>,
    /// Methods (functions with `self`) by name, for calls whose receiver type is unknown.
    pub methods_by_name: HashMap<String, Vec<FnId>>,
    /// Free functions by name, for calls whose path does not resolve.
    pub free_by_name: HashMap<String, Vec<FnId>>,
    /// Workspace types by name, for paths through a type the resolver cannot see.
    pub types_by_name: HashMap<String, Vec<TypeId>>,
    /// Impls on types outside the workspace, by the type's last path segment.
    pub foreign_impls: HashMap<String, Vec<ImplId>>,
    pub blanket_impls: Vec<ImplId>,
    pub warnings: Vec<String>,
    pub lines: usize,
    /// `#[global_allocator]` statics of the indexed crates that are compiled in and not test-only.
    pub global_allocators: Vec<crate::plan::GlobalAllocator>,
    /// Names of the workspace's `macro_rules!` macros whose every definition runs straight through
    /// (`ModItems::macro_rules`): a body invoking them may still be trivial (`FnItem::straight_line_macros`).
    pub straight_macros: HashSet<String>,
}

/// The macro names every workspace file that defines them defines as straight-line (`Index::straight_macros`).
fn straight_macros(sources: &SourceSet) -> HashSet<String> {
    let mut straight: HashMap<&str, bool> = HashMap::new();
    for summary in sources.files.values() {
        for (name, runs_straight) in &summary.items.macro_rules {
            *straight.entry(name.as_str()).or_insert(true) &= *runs_straight;
        }
    }
    straight.into_iter().filter(|&(_, s)| s).map(|(name, _)| name.to_owned()).collect()
}

impl FnDef {
    /// Its `#[cfg]` (or an enclosing item's) is false: it is not in the program.
    pub fn compiled_out(&self) -> bool {
        matches!(self.item.skip, Some(SkipReason::CfgDisabled(_)))
    }
}

impl Index {
    pub fn build(specs: Vec<CrateSpec>, sources: &SourceSet) -> Index {
        let mut index = Index { lines: sources.lines, warnings: sources.warnings.clone(), ..Index::default() };
        index.straight_macros = straight_macros(sources);
        // Crate roots first, so extern preludes can point at them.
        for (krate, spec) in specs.iter().enumerate() {
            let root = index.modules.len();
            index.modules.push(Module { krate, name: spec.name.clone(), ..Module::default() });
            index.crates.push(CrateDef {
                spec: spec.clone(),
                root,
                extern_prelude: HashMap::new(),
                visible: HashSet::new(),
            });
        }
        let lib_roots: HashMap<usize, ModId> = index
            .crates
            .iter()
            .filter(|c| c.spec.kind == super::modules::TargetKind::Lib)
            .map(|c| (c.spec.package, c.root))
            .collect();
        for c in &mut index.crates {
            for (name, target) in &c.spec.deps {
                let res = match target {
                    DepTarget::Workspace(pkg) => {
                        lib_roots.get(pkg).map(|&m| TypeRes::Module(m)).unwrap_or(TypeRes::External)
                    }
                    DepTarget::External => TypeRes::External,
                };
                c.extern_prelude.insert(name.clone(), res);
            }
            for std_name in ["std", "core", "alloc", "proc_macro", "test"] {
                c.extern_prelude.entry(std_name.to_owned()).or_insert(TypeRes::External);
            }
        }
        for krate in 0..index.crates.len() {
            let mut visible = HashSet::from([krate]);
            let mut stack = vec![krate];
            while let Some(k) = stack.pop() {
                for res in index.crates[k].extern_prelude.values() {
                    if let TypeRes::Module(m) = res {
                        let dep = index.modules[*m].krate;
                        if visible.insert(dep) {
                            stack.push(dep);
                        }
                    }
                }
            }
            index.crates[krate].visible = visible;
        }
        for krate in 0..index.crates.len() {
            let root_file = index.crates[krate].spec.root_file.clone();
            let root = index.crates[krate].root;
            if let Some(summary) = sources.files.get(&root_file) {
                let file = index.file_id(&root_file);
                let mut stack = vec![root_file.clone()];
                index.add_items(root, &summary.items, file, &root_file, sources, &Inherited::default(), &mut stack);
            }
        }
        index.resolve_imports();
        index.resolve_impls();
        index.name_functions();
        index
    }

    /// What an item inside `outer` (in module `m`) passes on to what it holds: test-only when it or `outer` is, and
    /// compiled out when `outer` is or its own `#[cfg]` is false for its crate.
    fn inherit(&self, m: ModId, outer: &Inherited, test_only: bool, cfg: Option<&Cfg>) -> Inherited {
        let env = &self.crates[self.modules[m].krate].spec.cfg;
        let compiled_out =
            outer.compiled_out.clone().or_else(|| cfg.filter(|c| env.eval(c) == Some(false)).map(|c| c.to_string()));
        Inherited { test_only: outer.test_only || test_only, compiled_out }
    }

    fn file_id(&mut self, path: &Path) -> usize {
        if let Some(&id) = self.file_ids.get(path) {
            return id;
        }
        let id = self.files.len();
        self.files.push(path.to_owned());
        self.file_ids.insert(path.to_owned(), id);
        id
    }

    fn child_module(&mut self, parent: ModId, name: &str, test_only: bool) -> ModId {
        if let Some(&id) = self.child_mods.get(&(parent, name.to_owned())) {
            // `#[cfg]` variants of one module merge; it is test-only only if every variant is.
            self.modules[id].test_only &= test_only;
            return id;
        }
        let id = self.modules.len();
        let krate = self.modules[parent].krate;
        self.modules.push(Module {
            krate,
            parent: Some(parent),
            name: name.to_owned(),
            test_only,
            ..Module::default()
        });
        self.child_mods.insert((parent, name.to_owned()), id);
        self.modules[parent].types.entry(name.to_owned()).or_insert(TypeRes::Module(id));
        id
    }

    #[allow(clippy::too_many_arguments)]
    fn add_items(
        &mut self,
        m: ModId,
        items: &ModItems,
        file: usize,
        file_path: &Path,
        sources: &SourceSet,
        outer: &Inherited,
        stack: &mut Vec<PathBuf>,
    ) {
        let test_only = outer.test_only;
        if !test_only && outer.compiled_out.is_none() {
            let manifest_path = &self.crates[self.modules[m].krate].spec.manifest_path;
            for &site in &items.global_allocators {
                let found = crate::plan::GlobalAllocator {
                    file: file_path.to_owned(),
                    manifest_path: manifest_path.clone(),
                    site,
                };
                // A lib and its bins index the same file; one wrap is enough.
                if !self.global_allocators.contains(&found) {
                    self.global_allocators.push(found);
                }
            }
        }
        for u in &items.uses {
            self.uses.push((m, u.clone()));
        }
        for t in &items.types {
            let id = *self.type_ids.entry((m, t.name.clone())).or_insert_with(|| {
                self.types.push(TypeDef {
                    module: m,
                    name: t.name.clone(),
                    fields: HashMap::new(),
                    alias: None,
                    impls: Vec::new(),
                    is_copy: t.is_copy,
                    generic_fields: HashMap::new(),
                });
                self.types_by_name.entry(t.name.clone()).or_default().push(self.types.len() - 1);
                self.types.len() - 1
            });
            self.types[id].is_copy &= t.is_copy;
            for (name, ty) in &t.fields {
                self.types[id].fields.entry(name.clone()).or_insert_with(|| ty.clone());
            }
            for (name, param) in &t.generic_fields {
                self.types[id].generic_fields.entry(name.clone()).or_insert(*param);
            }
            if t.alias.is_some() && self.types[id].alias.is_none() {
                self.types[id].alias = t.alias.clone();
            }
            self.modules[m].types.entry(t.name.clone()).or_insert(TypeRes::Type(id));
        }
        for tr in &items.traits {
            let inherited = self.inherit(m, outer, false, tr.cfg.as_ref());
            let id = *self.trait_ids.entry((m, tr.name.clone())).or_insert_with(|| {
                self.traits.push(TraitDef {
                    module: m,
                    name: tr.name.clone(),
                    method_names: HashSet::new(),
                    defaults: HashMap::new(),
                    supertrait_paths: Vec::new(),
                    supertraits: Vec::new(),
                    impls: Vec::new(),
                });
                self.traits.len() - 1
            });
            self.traits[id].method_names.extend(tr.method_names.iter().cloned());
            self.traits[id].supertrait_paths.extend(tr.supertraits.iter().cloned());
            self.modules[m].types.entry(tr.name.clone()).or_insert(TypeRes::Trait(id));
            for f in &tr.defaults {
                let fid = self.add_fn(m, f, Owner::Trait(id), file, file_path, sources, &inherited, stack);
                self.traits[id].defaults.entry(f.name.clone()).or_default().push(fid);
            }
        }
        for f in &items.fns {
            let fid = self.add_fn(m, f, Owner::Free, file, file_path, sources, outer, stack);
            self.modules[m].values.entry(f.name.clone()).or_default().push(fid);
        }
        for imp in &items.impls {
            let inherited = self.inherit(m, outer, false, imp.cfg.as_ref());
            let id = self.impls.len();
            self.impls.push(ImplDef {
                module: m,
                self_ty: imp.self_ty.clone(),
                self_ty_text: imp.self_ty_text.clone(),
                trait_path: imp.trait_path.clone(),
                trait_args: imp.trait_args.clone(),
                deref_target: imp.deref_target.clone(),
                self_res: SelfRes::Foreign(String::new()),
                trait_res: None,
                methods: HashMap::new(),
            });
            for f in &imp.fns {
                let fid = self.add_fn(m, f, Owner::Impl(id), file, file_path, sources, &inherited, stack);
                self.impls[id].methods.entry(f.name.clone()).or_default().push(fid);
            }
        }
        for md in &items.mods {
            let child_test_only = test_only || md.test_only;
            let child = self.child_module(m, &md.name, child_test_only);
            let inherited = self.inherit(m, outer, md.test_only, md.cfg.as_ref());
            match &md.kind {
                ModKind::Inline(inner) => {
                    self.add_items(child, inner, file, file_path, sources, &inherited, stack);
                }
                ModKind::External { decl } => {
                    let Some(child_path) = sources.children.get(&(file_path.to_owned(), *decl)) else { continue };
                    if stack.contains(child_path) {
                        continue;
                    }
                    let Some(summary) = sources.files.get(child_path) else { continue };
                    let child_file = self.file_id(child_path);
                    stack.push(child_path.clone());
                    self.add_items(child, &summary.items, child_file, child_path, sources, &inherited, stack);
                    stack.pop();
                }
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn add_fn(
        &mut self,
        m: ModId,
        f: &FnItem,
        owner: Owner,
        file: usize,
        file_path: &Path,
        sources: &SourceSet,
        outer: &Inherited,
        stack: &mut Vec<PathBuf>,
    ) -> FnId {
        let test_only = outer.test_only;
        let own = self.inherit(m, outer, f.test_only, f.cfg.as_ref());
        let id = self.fns.len();
        let mut item = FnItem {
            name: f.name.clone(),
            line: f.line,
            skip: f.skip.clone(),
            test_only: f.test_only || test_only,
            cfg: f.cfg.clone(),
            has_self: f.has_self,
            arity: f.arity,
            probe: f.probe.clone(),
            calls: f.calls.clone(),
            spawns: f.spawns.clone(),
            body_items: None,
            generics: f.generics.clone(),
            calls_params: f.calls_params,
            polls_params: f.polls_params,
            straight_line_stmts: f.straight_line_stmts,
            forwarding_stmts: f.forwarding_stmts,
            straight_line_macros: f.straight_line_macros.clone(),
            value_params: f.value_params.clone(),
            returns: f.returns.clone(),
            builds_for_later: f.builds_for_later,
        };
        if test_only && item.skip.is_none() {
            item.skip = Some(SkipReason::TestOnly);
        }
        if let Some(cfg) = &own.compiled_out {
            item.skip = Some(SkipReason::CfgDisabled(cfg.clone()));
        }
        let krate = self.modules[m].krate;
        self.fns.push(FnDef {
            item,
            krate,
            module: m,
            scope: m,
            owner,
            file,
            path: String::new(),
            match_path: String::new(),
        });
        if !(f.test_only || test_only || own.compiled_out.is_some()) {
            if f.has_self {
                self.methods_by_name.entry(f.name.clone()).or_default().push(id);
            } else if owner == Owner::Free {
                self.free_by_name.entry(f.name.clone()).or_default().push(id);
            }
        }
        if let Some(body) = &f.body_items {
            let block = self.modules.len();
            self.modules.push(Module {
                krate,
                parent: Some(m),
                name: f.name.clone(),
                block_of: Some(id),
                test_only: test_only || f.test_only,
                ..Module::default()
            });
            self.fns[id].scope = block;
            self.add_items(block, body, file, file_path, sources, &own, stack);
        }
        id
    }

    /// The nearest enclosing real module (function body scopes are skipped).
    pub fn non_block(&self, mut m: ModId) -> ModId {
        while self.modules[m].block_of.is_some() {
            match self.modules[m].parent {
                Some(p) => m = p,
                None => break,
            }
        }
        m
    }

    pub fn crate_root(&self, m: ModId) -> ModId {
        self.crates[self.modules[m].krate].root
    }

    fn lookup_type_in(&self, m: ModId, name: &str) -> Option<TypeRes> {
        let module = &self.modules[m];
        module.types.get(name).or_else(|| module.glob_types.get(name)).copied()
    }

    fn lookup_values_in(&self, m: ModId, name: &str) -> Option<&Vec<FnId>> {
        let module = &self.modules[m];
        module.values.get(name).or_else(|| module.glob_values.get(name))
    }

    /// Functions a path names from a crate root, through re-exports: `krate::a::f`, `krate::Type::m`.
    pub fn resolve_from_root(&self, krate: CrateId, segs: &[String]) -> Vec<FnId> {
        let root = self.crates[krate].root;
        let Some((last, prefix)) = segs.split_last() else { return Vec::new() };
        if prefix.is_empty() {
            return self.lookup_values_in(root, last).cloned().unwrap_or_default();
        }
        let mut path = vec!["crate".to_owned()];
        path.extend(prefix.iter().cloned());
        match self.resolve_type_path(root, &path, false) {
            Some(TypeRes::Module(m)) => self.lookup_values_in(m, last).cloned().unwrap_or_default(),
            Some(TypeRes::Type(t)) => self.assoc_fns(t, last, false),
            Some(TypeRes::Trait(t)) => self.traits[t].defaults.get(last.as_str()).cloned().unwrap_or_default(),
            _ => Vec::new(),
        }
    }

    /// `m`, then the scopes it is nested in while `m` is a function body's block scope (a block sees the items of
    /// the scopes around it; a module does not see its parent's).
    fn enclosing_scopes(&self, m: ModId) -> impl Iterator<Item = ModId> + '_ {
        std::iter::successors(Some(m), move |&s| match (self.modules[s].block_of, self.modules[s].parent) {
            (Some(_), Some(p)) => Some(p),
            _ => None,
        })
    }

    /// A name as the first segment of a path: enclosing scopes, then the extern prelude.
    pub fn scope_lookup_type(&self, m: ModId, name: &str) -> Option<TypeRes> {
        if let Some(r) = self.enclosing_scopes(m).find_map(|s| self.lookup_type_in(s, name)) {
            return Some(r);
        }
        let krate = &self.crates[self.modules[m].krate];
        if let Some(r) = krate.extern_prelude.get(name) {
            return Some(*r);
        }
        if krate.spec.edition == 2015 {
            return self.lookup_type_in(krate.root, name);
        }
        None
    }

    /// Whether `m` or an enclosing block scope glob-imports something outside the workspace.
    pub fn sees_external_glob(&self, m: ModId) -> bool {
        self.enclosing_scopes(m).any(|s| self.modules[s].external_glob)
    }

    pub fn scope_lookup_values(&self, m: ModId, name: &str) -> Option<&Vec<FnId>> {
        if let Some(r) = self.enclosing_scopes(m).find_map(|s| self.lookup_values_in(s, name)) {
            return Some(r);
        }
        let krate = &self.crates[self.modules[m].krate];
        if krate.spec.edition == 2015 {
            return self.lookup_values_in(krate.root, name);
        }
        None
    }

    /// Resolves a path in the type namespace (modules, types, traits) from scope `m`.
    pub fn resolve_type_path(&self, m: ModId, segs: &[String], leading_colon: bool) -> Option<TypeRes> {
        let (first, rest) = segs.split_first()?;
        let krate = &self.crates[self.modules[m].krate];
        let mut cur = if leading_colon {
            if krate.spec.edition == 2015 {
                self.lookup_type_in(krate.root, first).or_else(|| krate.extern_prelude.get(first.as_str()).copied())
            } else {
                krate.extern_prelude.get(first.as_str()).copied()
            }
        } else {
            match first.as_str() {
                "crate" => Some(TypeRes::Module(krate.root)),
                "self" => Some(TypeRes::Module(self.non_block(m))),
                "super" => self.modules[self.non_block(m)].parent.map(|p| TypeRes::Module(self.non_block(p))),
                "Self" => None,
                name => self.scope_lookup_type(m, name),
            }
        }?;
        for seg in rest {
            cur = match cur {
                TypeRes::Module(x) if seg == "super" => TypeRes::Module(self.non_block(self.modules[x].parent?)),
                TypeRes::Module(x) if seg == "self" => TypeRes::Module(x),
                TypeRes::Module(x) => self.lookup_type_in(x, seg)?,
                TypeRes::External => return Some(TypeRes::External),
                _ => return None,
            };
        }
        Some(cur)
    }

    /// What a `use` path names, in both namespaces.
    fn resolve_use(&self, m: ModId, path: &PathRef) -> (Option<TypeRes>, Vec<FnId>) {
        let Some((last, prefix)) = path.segs.split_last() else { return (None, Vec::new()) };
        if prefix.is_empty() {
            let t = self.resolve_type_path(m, &path.segs, path.leading_colon);
            let v = if path.leading_colon {
                Vec::new()
            } else {
                self.scope_lookup_values(m, last).cloned().unwrap_or_default()
            };
            return (t, v);
        }
        match self.resolve_type_path(m, prefix, path.leading_colon) {
            Some(TypeRes::Module(pm)) => {
                let t = match last.as_str() {
                    "super" | "self" => self.resolve_type_path(m, &path.segs, path.leading_colon),
                    _ => self.lookup_type_in(pm, last),
                };
                (t, self.lookup_values_in(pm, last).cloned().unwrap_or_default())
            }
            Some(TypeRes::External) => (Some(TypeRes::External), Vec::new()),
            _ => (None, Vec::new()),
        }
    }

    /// Resolves every `use` to a fixed point: each round may resolve imports that name earlier imports; globs copy
    /// whole namespaces (cycles stop because nothing new is added).
    fn resolve_imports(&mut self) {
        let uses = std::mem::take(&mut self.uses);
        self.resolve_imports_of(&uses);
        // Kept for `uses_in_scope` (spawn sites resolve paths outside the workspace through them).
        self.uses = uses;
    }

    /// The `use` declarations of scope `m` and of the blocks and function bodies it is in.
    pub fn uses_in_scope(&self, m: ModId) -> impl Iterator<Item = &UseItem> + '_ {
        let scopes: Vec<ModId> = self.enclosing_scopes(m).collect();
        self.uses.iter().filter(move |(um, _)| scopes.contains(um)).map(|(_, u)| u)
    }

    fn resolve_imports_of(&mut self, uses: &[(ModId, UseItem)]) {
        for _round in 0..64 {
            let mut changed = false;
            for (m, u) in uses {
                let m = *m;
                match &u.kind {
                    UseKind::Name(alias) => {
                        let (t, v) = self.resolve_use(m, &u.path);
                        if let Some(t) = t {
                            let entry = self.modules[m].types.entry(alias.clone());
                            if let std::collections::hash_map::Entry::Vacant(e) = entry {
                                e.insert(t);
                                changed = true;
                            }
                        }
                        if !v.is_empty() {
                            let slot = self.modules[m].values.entry(alias.clone()).or_default();
                            for f in v {
                                if !slot.contains(&f) {
                                    slot.push(f);
                                    changed = true;
                                }
                            }
                        }
                    }
                    UseKind::Glob => {
                        let target = if u.path.segs.is_empty() {
                            None
                        } else {
                            self.resolve_type_path(m, &u.path.segs, u.path.leading_colon)
                        };
                        if target == Some(TypeRes::External) {
                            self.modules[m].external_glob = true;
                        }
                        let Some(TypeRes::Module(target)) = target else { continue };
                        if target == m {
                            continue;
                        }
                        let src = &self.modules[target];
                        let types: Vec<(String, TypeRes)> =
                            src.types.iter().chain(src.glob_types.iter()).map(|(k, v)| (k.clone(), *v)).collect();
                        let values: Vec<(String, Vec<FnId>)> = src
                            .values
                            .iter()
                            .chain(src.glob_values.iter())
                            .map(|(k, v)| (k.clone(), v.clone()))
                            .collect();
                        let dst = &mut self.modules[m];
                        for (k, v) in types {
                            if let std::collections::hash_map::Entry::Vacant(e) = dst.glob_types.entry(k) {
                                e.insert(v);
                                changed = true;
                            }
                        }
                        for (k, fns) in values {
                            let slot = dst.glob_values.entry(k).or_default();
                            for f in fns {
                                if !slot.contains(&f) {
                                    slot.push(f);
                                    changed = true;
                                }
                            }
                        }
                    }
                }
            }
            if !changed {
                break;
            }
        }
    }

    /// Follows `type X = Y;` aliases to the type they name.
    pub fn follow_alias(&self, mut t: TypeId) -> TypeId {
        for _ in 0..8 {
            let Some(TyRef::Path(p)) = &self.types[t].alias else { break };
            match self.resolve_type_path(self.types[t].module, &p.segs, p.leading_colon) {
                Some(TypeRes::Type(next)) if next != t => t = next,
                _ => break,
            }
        }
        t
    }

    fn resolve_impls(&mut self) {
        for i in 0..self.impls.len() {
            let imp = &self.impls[i];
            let self_res = match &imp.self_ty {
                TyRef::Path(p) => match self.resolve_type_path(imp.module, &p.segs, p.leading_colon) {
                    Some(TypeRes::Type(t)) => SelfRes::Local(self.follow_alias(t)),
                    _ => SelfRes::Foreign(p.segs.last().cloned().unwrap_or_default()),
                },
                TyRef::Bounds(_) => SelfRes::Blanket,
                _ => SelfRes::Foreign(imp.self_ty_text.clone()),
            };
            let trait_res = imp
                .trait_path
                .as_ref()
                .map(|p| self.resolve_type_path(imp.module, &p.segs, p.leading_colon).unwrap_or(TypeRes::External));
            match &self_res {
                SelfRes::Local(t) => self.types[*t].impls.push(i),
                SelfRes::Blanket => self.blanket_impls.push(i),
                SelfRes::Foreign(name) => self.foreign_impls.entry(name.clone()).or_default().push(i),
            }
            if let Some(TypeRes::Trait(tr)) = trait_res {
                self.traits[tr].impls.push(i);
            }
            self.impls[i].self_res = self_res;
            self.impls[i].trait_res = trait_res;
        }
        for t in 0..self.traits.len() {
            let module = self.traits[t].module;
            let supers: Vec<TraitId> = self.traits[t]
                .supertrait_paths
                .iter()
                .filter_map(|p| match self.resolve_type_path(module, &p.segs, p.leading_colon) {
                    Some(TypeRes::Trait(s)) if s != t => Some(s),
                    _ => None,
                })
                .collect();
            self.traits[t].supertraits = supers;
        }
    }

    fn name_functions(&mut self) {
        let mut module_paths: Vec<Option<String>> = vec![None; self.modules.len()];
        for f in 0..self.fns.len() {
            let (path, match_path) = self.fn_names(f, &mut module_paths, 0);
            self.fns[f].path = path;
            self.fns[f].match_path = match_path;
        }
    }

    fn module_path(&self, m: ModId, cache: &mut Vec<Option<String>>, depth: usize) -> String {
        if let Some(p) = &cache[m] {
            return p.clone();
        }
        let module = &self.modules[m];
        let path = match (module.block_of, module.parent) {
            (Some(f), _) if depth < 32 => self.fn_names(f, cache, depth + 1).1,
            (_, Some(parent)) => format!("{}::{}", self.module_path(parent, cache, depth + 1), module.name),
            _ => module.name.clone(),
        };
        cache[m] = Some(path.clone());
        path
    }

    fn type_path(&self, t: TypeId, cache: &mut Vec<Option<String>>, depth: usize) -> String {
        format!("{}::{}", self.module_path(self.types[t].module, cache, depth + 1), self.types[t].name)
    }

    fn trait_path(&self, t: TraitId, cache: &mut Vec<Option<String>>, depth: usize) -> String {
        format!("{}::{}", self.module_path(self.traits[t].module, cache, depth + 1), self.traits[t].name)
    }

    /// (rustc-style path, defining path).
    fn fn_names(&self, f: FnId, cache: &mut Vec<Option<String>>, depth: usize) -> (String, String) {
        let def = &self.fns[f];
        let name = &def.item.name;
        match def.owner {
            Owner::Free => {
                let p = format!("{}::{name}", self.module_path(def.module, cache, depth + 1));
                (p.clone(), p)
            }
            Owner::Trait(t) => {
                let p = format!("{}::{name}", self.trait_path(t, cache, depth + 1));
                (p.clone(), p)
            }
            Owner::Impl(i) => {
                let imp = &self.impls[i];
                let (self_text, self_match) = match &imp.self_res {
                    SelfRes::Local(t) => {
                        let p = self.type_path(*t, cache, depth + 1);
                        (p.clone(), p)
                    }
                    _ => {
                        let base = self.module_path(imp.module, cache, depth + 1);
                        (imp.self_ty_text.clone(), format!("{base}::{}", imp.self_ty_text))
                    }
                };
                let match_path = format!("{self_match}::{name}");
                let path = match (&imp.trait_res, &imp.trait_path) {
                    (Some(TypeRes::Trait(t)), _) => {
                        let trait_path = self.trait_path(*t, cache, depth + 1);
                        format!("<{self_text} as {trait_path}{}>::{name}", imp.trait_args)
                    }
                    (_, Some(tp)) => format!("<{self_text} as {}{}>::{name}", tp.text(), imp.trait_args),
                    _ => match_path.clone(),
                };
                (path, match_path)
            }
        }
    }
}
