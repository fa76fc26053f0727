use std::collections::BTreeMap;

/// Where records live.
pub trait Store {
    fn load(&self, key: &str) -> Option<String>;
    fn name(&self) -> &'static str;
}

/// Records kept in memory: fast.
pub struct MemoryStore {
    records: BTreeMap<String, String>,
}

impl MemoryStore {
    pub fn with_users() -> MemoryStore {
        let mut records = BTreeMap::new();
        for (id, name) in [(1, "ada"), (2, "grace"), (3, "barbara"), (4, "margaret")] {
            records.insert(format!("users/{id}"), name.to_owned());
        }
        MemoryStore { records }
    }
}

impl Store for MemoryStore {
    fn load(&self, key: &str) -> Option<String> {
        self.records.get(key).cloned()
    }

    fn name(&self) -> &'static str {
        "memory"
    }
}

/// Records "read from disk": computed slowly, so the cache in front of it matters.
pub struct DiskStore {
    pub blocks: u32,
}

impl Store for DiskStore {
    fn load(&self, key: &str) -> Option<String> {
        let id: u32 = key.strip_prefix("posts/")?.parse().ok()?;
        if id > 100 {
            return None;
        }
        let sum = checksum(id, self.blocks);
        Some(format!("post {id} ({sum:08x})"))
    }

    fn name(&self) -> &'static str {
        "disk"
    }
}

/// A deterministic stand-in for reading `blocks` blocks.
pub fn checksum(seed: u32, blocks: u32) -> u32 {
    let mut h: u32 = 0x811c_9dc5 ^ seed;
    for i in 0..blocks * 1000 {
        h = (h ^ i).wrapping_mul(0x0100_0193);
    }
    h
}
