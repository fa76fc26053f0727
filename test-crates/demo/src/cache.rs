use std::collections::HashMap;

use crate::store::Store;

/// A read-through cache in front of a store.
#[derive(Default)]
pub struct Cache {
    entries: HashMap<String, String>,
    pub hits: u64,
    pub misses: u64,
}

impl Cache {
    pub fn get_or_load(&mut self, key: &str, store: &dyn Store) -> Option<String> {
        if let Some(value) = self.entries.get(key) {
            self.hits += 1;
            return Some(value.clone());
        }
        self.misses += 1;
        let value = store.load(key)?;
        self.entries.insert(key.to_owned(), value.clone());
        Some(value)
    }
}
