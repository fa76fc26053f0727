//! Frame names for views: the short `display` name where it is unique in the function table, a longer name where
//! two functions would otherwise look the same. Folded stacks (and the flamegraphs drawn from them) take
//! [`Names::for_stacks`], whose names never hold a `;`.

use std::collections::HashMap;

use crate::trace::FunctionTable;

/// One unique, stack-safe name per function index.
#[derive(Debug, Clone)]
pub struct Names {
    /// Indexed by function index.
    names: Vec<Option<String>>,
}

impl Names {
    pub fn new(table: &FunctionTable) -> Names {
        let count = |keys: Vec<String>| {
            let mut seen: HashMap<String, usize> = HashMap::new();
            for k in &keys {
                *seen.entry(k.clone()).or_default() += 1;
            }
            (keys, seen)
        };
        let (display, display_seen) = count(table.functions.iter().map(|f| f.display.clone()).collect());
        // A shared display name falls back to the full path ...
        let (longer, longer_seen) = count(
            table
                .functions
                .iter()
                .zip(&display)
                .map(|(f, d)| if display_seen[d] > 1 { f.path.clone() } else { d.clone() })
                .collect(),
        );
        // ... and a shared path (one function defined under several `#[cfg]`s) to the path and its location.
        let (located, located_seen) = count(
            table
                .functions
                .iter()
                .zip(&longer)
                .map(|(f, n)| {
                    if longer_seen[n] > 1 {
                        let file = f.file.rsplit(['/', '\\']).next().unwrap_or(&f.file);
                        format!("{n} ({file}:{})", f.line)
                    } else {
                        n.clone()
                    }
                })
                .collect(),
        );
        let mut names: Vec<Option<String>> = Vec::new();
        for (f, n) in table.functions.iter().zip(located) {
            let n = if located_seen[&n] > 1 { format!("{n} #{}", f.index) } else { n };
            let at = f.index as usize;
            // A corrupt table with a huge index must not make us allocate gigabytes: such a function is `#index`.
            if at < 1 << 24 {
                if names.len() <= at {
                    names.resize(at + 1, None);
                }
                names[at] = Some(n);
            }
        }
        Names { names }
    }

    /// The names for folded stacks, where `;` separates frames: each `;` in a name (`<[char; LEN] as T>::f`) is a
    /// `,` ([`stack_safe`]). Views that show a name as text keep it as written.
    pub fn for_stacks(table: &FunctionTable) -> Names {
        let mut names = Names::new(table);
        for name in names.names.iter_mut().flatten() {
            *name = stack_safe(name);
        }
        names
    }

    /// The name of function `index`; `#index` when the table does not name it.
    pub fn get(&self, index: u32) -> String {
        self.names.get(index as usize).cloned().flatten().unwrap_or_else(|| format!("#{index}"))
    }
}

/// One key per function index for what is stored and compared across runs: the function's path, made unique
/// where two functions share it (one function under several `#[cfg]`s, two impls whose trait arguments the
/// analysis could not tell apart) by its location, then by its index. Indexed by function index; an index the
/// table does not name is `#index`.
pub fn unique_paths(table: &FunctionTable) -> Vec<String> {
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for f in &table.functions {
        *seen.entry(f.path.as_str()).or_default() += 1;
    }
    let located: Vec<String> = table
        .functions
        .iter()
        .map(|f| if seen[f.path.as_str()] > 1 { format!("{} ({}:{})", f.path, f.file, f.line) } else { f.path.clone() })
        .collect();
    let mut located_seen: HashMap<&str, usize> = HashMap::new();
    for l in &located {
        *located_seen.entry(l.as_str()).or_default() += 1;
    }
    let mut out: Vec<String> = Vec::new();
    for (f, l) in table.functions.iter().zip(&located) {
        let at = f.index as usize;
        if at >= 1 << 24 {
            continue;
        }
        if out.len() <= at {
            out.resize_with(at + 1, String::new);
        }
        out[at] = if located_seen[l.as_str()] > 1 { format!("{l} #{}", f.index) } else { l.clone() };
    }
    for (i, key) in out.iter_mut().enumerate() {
        if key.is_empty() {
            *key = format!("#{i}");
        }
    }
    out
}

/// Folded stacks separate frames with `;` and end with ` <count>`: a `;` inside a name (`<[u8; 4] as T>::f`) would
/// split the frame. Every folded-stack writer (views, diff) names frames through this.
pub fn stack_safe(name: &str) -> String {
    name.replace(';', ",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::FunctionInfo;

    fn info(index: u32, path: &str, display: &str, file: &str) -> FunctionInfo {
        FunctionInfo { index, path: path.into(), display: display.into(), file: file.into(), line: 3, root: false }
    }

    #[test]
    fn names_are_unique_and_short_where_possible() {
        let table = FunctionTable {
            functions: vec![
                info(0, "app::server::handle", "server::handle", "/w/src/server.rs"),
                info(1, "app::a::parse", "parse", "/w/src/a.rs"),
                info(2, "app::b::parse", "parse", "/w/src/b.rs"),
                info(3, "app::sys::now", "sys::now", "/w/src/unix.rs"),
                info(4, "app::sys::now", "sys::now", "/w/src/windows.rs"),
                info(5, "<[u8; 4] as app::Tr>::f", "<[u8; 4] as Tr>::f", "/w/src/t.rs"),
            ],
            ..FunctionTable::default()
        };
        let names = Names::new(&table);
        let all: Vec<String> = (0..7).map(|i| names.get(i)).collect();
        assert_eq!(
            all,
            [
                "server::handle",
                "app::a::parse",
                "app::b::parse",
                "app::sys::now (unix.rs:3)",
                "app::sys::now (windows.rs:3)",
                "<[u8; 4] as Tr>::f",
                "#6"
            ]
        );
        assert_eq!(Names::for_stacks(&table).get(5), "<[u8, 4] as Tr>::f");
    }
}
