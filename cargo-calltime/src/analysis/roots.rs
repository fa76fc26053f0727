//! Finding the functions `--root` names, with the nearest names when none matches.

use std::collections::HashSet;
use std::path::Path;

use super::index::{FnId, Index, Owner};
use crate::error::UserError;

/// `Type::method`, `module::func`: the last two segments of the defining path, without the crate name.
pub fn display_name(match_path: &str) -> String {
    let segs = split_path(match_path);
    let tail = &segs[1.min(segs.len())..];
    let start = tail.len().saturating_sub(2);
    let shown = &tail[start..];
    if shown.is_empty() {
        match_path.to_owned()
    } else {
        shown.join("::")
    }
}

/// Splits on `::` outside angle brackets (`krate::Vec<a::B>::m` has three segments).
fn split_path(path: &str) -> Vec<&str> {
    let bytes = path.as_bytes();
    let mut depth = 0i32;
    let mut out = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'<' => depth += 1,
            b'>' => depth -= 1,
            b':' if depth == 0 && bytes.get(i + 1) == Some(&b':') => {
                out.push(&path[start..i]);
                start = i + 2;
                i += 1;
            }
            _ => {}
        }
        i += 1;
    }
    out.push(&path[start..]);
    out
}

/// The functions `arg` names: by `::`-suffix of the defining path (or the rustc-style path exactly). Several
/// definitions of one path (`#[cfg]` variants) are all roots; different paths are ambiguous, unless `arg` read as a
/// Rust path from a workspace crate (re-exports followed) names one of them.
pub(super) fn find_root(index: &Index, arg: &str, ws_root: &Path) -> Result<Vec<FnId>, UserError> {
    let wanted = arg.trim().trim_start_matches("::");
    // `regex::Regex::new` is, as Rust reads it, the `Regex` the `regex` crate exports (defined in
    // `regex::regex::string`): that wins over defining paths that merely end the same way
    // (`regex_automata::dfa::regex::Regex::new`).
    let as_written = through_reexports(index, wanted);
    let mut written_paths: Vec<&str> = as_written.iter().map(|&f| index.fns[f].match_path.as_str()).collect();
    written_paths.sort_unstable();
    written_paths.dedup();
    if written_paths.len() == 1 {
        return Ok(as_written);
    }
    let suffix = format!("::{wanted}");
    let matches: Vec<FnId> = (0..index.fns.len())
        .filter(|&f| {
            let def = &index.fns[f];
            def.match_path == wanted || def.match_path.ends_with(&suffix) || def.path == wanted
        })
        .collect();
    let matches = if matches.is_empty() { as_written } else { matches };
    if matches.is_empty() {
        let error = UserError::new(format!("no function matches --root `{arg}`"));
        let near = nearest_names(index, wanted);
        return Err(if near.is_empty() {
            error.hint(
                "roots are paths like `krate::module::function` or `krate::module::Type::method`; \
                 `cargo calltime graph --root main` works for a binary",
            )
        } else {
            error.hint(format!("did you mean one of: {}", near.join(", ")))
        });
    }
    let mut distinct: Vec<&str> = matches.iter().map(|&f| index.fns[f].match_path.as_str()).collect();
    distinct.sort_unstable();
    distinct.dedup();
    if distinct.len() > 1 {
        return Err(ambiguous(index, arg, &matches, ws_root));
    }
    Ok(matches)
}

/// The error for a `--root` that matches functions of several paths: each listed in the shortest form `--root`
/// takes that selects only it (`<T as Trait>::method` when `T::method` would also select another impl's method),
/// with its place. The hint suggests one only when a rule picks it: the single free function or inherent method
/// among them, outside tests, in a selected package (trait methods are usually reached through a caller; the
/// alphabetically first match told the user nothing).
fn ambiguous(index: &Index, arg: &str, matches: &[FnId], ws_root: &Path) -> UserError {
    let mut listed: Vec<(String, String)> = matches
        .iter()
        .map(|&f| {
            let def = &index.fns[f];
            let file = index.files[def.file].strip_prefix(ws_root).unwrap_or(&index.files[def.file]);
            (selecting_form(index, f), format!("{}:{}", file.display(), def.item.line))
        })
        .collect();
    listed.sort();
    listed.dedup();
    let mut forms: Vec<&str> = listed.iter().map(|(form, _)| form.as_str()).collect();
    forms.dedup();
    let shown: Vec<String> = listed.iter().map(|(form, place)| format!("{form} ({place})")).collect();
    let error = UserError::new(format!("--root `{arg}` matches {} functions: {}", forms.len(), shown.join(", ")));
    let mut preferred: Vec<String> = matches
        .iter()
        .filter(|&&f| {
            let def = &index.fns[f];
            let inherent = match def.owner {
                Owner::Free => true,
                Owner::Impl(i) => index.impls[i].trait_path.is_none(),
                Owner::Trait(_) => false,
            };
            inherent && !def.item.test_only && index.crates[def.krate].spec.selected
        })
        .map(|&f| selecting_form(index, f))
        .collect();
    preferred.sort();
    preferred.dedup();
    if let [best] = preferred.as_slice() {
        return error.hint(format!(
            "pass a longer path, e.g. --root {best} (the only free function or inherent method among them)"
        ));
    }
    let quoting = if listed.iter().any(|(form, _)| form.contains(' ')) {
        ", quoted for the shell where it holds spaces"
    } else {
        ""
    };
    error.hint(format!("pass one of these paths to --root{quoting}"))
}

/// The defining path when it selects `f` alone (or `f`'s `#[cfg]` variants), else the rustc-style path
/// (`<krate::T as krate::Trait>::m`), which `--root` matches exactly.
fn selecting_form(index: &Index, f: FnId) -> String {
    let def = &index.fns[f];
    let shared = index.fns.iter().any(|other| other.match_path == def.match_path && other.path != def.path);
    if shared {
        def.path.clone()
    } else {
        def.match_path.clone()
    }
}

/// `krate::a::f` where `f` is re-exported (`pub use`) rather than defined there.
fn through_reexports(index: &Index, wanted: &str) -> Vec<FnId> {
    let segs: Vec<String> = split_path(wanted).into_iter().map(str::to_owned).collect();
    if segs.len() < 2 {
        return Vec::new();
    }
    let mut found = Vec::new();
    for (k, c) in index.crates.iter().enumerate() {
        if c.spec.name == segs[0] {
            for f in index.resolve_from_root(k, &segs[1..]) {
                if !found.contains(&f) {
                    found.push(f);
                }
            }
        }
    }
    found
}

/// Up to 10 defining paths whose last segment is close to the wanted one (substring or small edit distance).
fn nearest_names(index: &Index, wanted: &str) -> Vec<String> {
    let wanted_last = split_path(wanted).last().copied().unwrap_or(wanted).to_lowercase();
    let limit = (wanted_last.len() / 3).max(2);
    let mut scored: Vec<(usize, usize, &str)> = Vec::new();
    let mut seen: HashSet<&str> = HashSet::new();
    for def in &index.fns {
        if def.item.test_only || !seen.insert(def.match_path.as_str()) {
            continue;
        }
        let name = split_path(&def.match_path).last().copied().unwrap_or("").to_lowercase();
        let score = if name == wanted_last {
            0
        } else if name.contains(&wanted_last) || (name.len() >= 3 && wanted_last.contains(&name)) {
            1
        } else {
            let d = edit_distance(&name, &wanted_last);
            if d > limit {
                continue;
            }
            1 + d
        };
        scored.push((score, def.match_path.len(), def.match_path.as_str()));
    }
    // Closest names first, then the shortest (least nested) paths.
    scored.sort();
    scored.into_iter().take(10).map(|(_, _, p)| format!("`{p}`")).collect()
}

fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for i in 1..=a.len() {
        let mut cur = vec![i; b.len() + 1];
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            cur[j] = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_drop_the_crate_and_keep_two_segments() {
        assert_eq!(display_name("app::server::handle"), "server::handle");
        assert_eq!(display_name("app::main"), "main");
        assert_eq!(display_name("app::a::b::Type::method"), "Type::method");
        assert_eq!(display_name("app::m::Vec<a::B>::len"), "Vec<a::B>::len");
    }

    #[test]
    fn edit_distance_counts_single_edits() {
        assert_eq!(edit_distance("handle", "handel"), 2);
        assert_eq!(edit_distance("parse", "parse"), 0);
        assert_eq!(edit_distance("", "abc"), 3);
    }
}
