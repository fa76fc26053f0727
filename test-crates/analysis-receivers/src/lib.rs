//! Method calls on fields and locals whose type is a std collection: they are std's methods, not every workspace
//! method of the same name; a workspace trait implemented for the std type is still reached.

use std::collections::HashMap;
use std::fmt;

/// A workspace trait implemented for a std type: `entries.lookup(k)` on a `HashMap` reaches it.
pub trait Lookup {
    fn lookup(&self, key: &str) -> u32;
}

impl Lookup for HashMap<String, u32> {
    fn lookup(&self, key: &str) -> u32 {
        self.get(key).copied().unwrap_or(0)
    }
}

pub struct Registry {
    names: Vec<String>,
}

impl Registry {
    pub fn get(&self, key: &str) -> Option<u32> {
        self.names.iter().position(|n| n == key).map(|i| i as u32)
    }
}

pub struct Cache;

impl Cache {
    pub fn get(&self, key: &str) -> Option<u32> {
        Some(key.len() as u32)
    }
}

pub struct Inner {
    entries: HashMap<String, u32>,
}

pub struct Store {
    entries: HashMap<String, u32>,
    registry: Registry,
    inner: Inner,
}

impl Store {
    pub fn through_local(&self, key: &str) -> Option<u32> {
        let entries = &self.entries;
        entries.get(key).copied()
    }

    pub fn nested(&self, key: &str) -> Option<u32> {
        self.inner.entries.get(key).copied()
    }

    /// A workspace type's field: its own `get`, not `Cache::get`.
    pub fn workspace_field(&self, key: &str) -> Option<u32> {
        self.registry.get(key)
    }

    pub fn lookup(&self, key: &str) -> u32 {
        self.entries.lookup(key)
    }
}

pub fn of_param(store: &Store, key: &str) -> Option<u32> {
    store.entries.get(key).copied()
}

pub fn of_param_nested(store: &Store, key: &str) -> Option<u32> {
    let inner = &store.inner;
    inner.entries.get(key).copied()
}

pub fn of_param_workspace(store: &Store, key: &str) -> Option<u32> {
    store.registry.get(key)
}

fn make() -> Store {
    Store { entries: HashMap::new(), registry: Registry { names: Vec::new() }, inner: Inner { entries: HashMap::new() } }
}

/// A local whose type the syntax does not show (a function's result): still matched by name.
pub fn unknown_receiver(key: &str) -> Option<u32> {
    let store = make();
    store.entries.get(key).copied()
}

impl fmt::Display for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} names", self.names.len())
    }
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(&self.names).finish()
    }
}

impl fmt::Display for Cache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("cache")
    }
}

pub fn entry(key: &str) -> u32 {
    let store = Store {
        entries: HashMap::new(),
        registry: Registry { names: Vec::new() },
        inner: Inner { entries: HashMap::new() },
    };
    let found = [
        store.through_local(key),
        store.nested(key),
        store.workspace_field(key),
        of_param(&store, key),
        of_param_nested(&store, key),
        of_param_workspace(&store, key),
        unknown_receiver(key),
        Cache.get(key),
    ];
    found.iter().flatten().sum::<u32>() + store.lookup(key)
}
mod blanket;
mod bound;
mod chains;
mod converted;
mod derefs;
mod iterate;
mod made;
mod parsed;
mod sequences;
