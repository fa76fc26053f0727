//! The counting global allocator the copy declares in the crate root of the executable it builds (issue 13): a
//! static compiled into the executable's own crate, so the allocator's fast path (a thread-local test) is inlined
//! there, where the thread-local is one `%fs`-relative load; declared inside the runtime's rlib it would cost a
//! TLS call's register saves on every allocation of the program (docs/performance.md, "Allocations").
//!
//! A workspace with its own `#[global_allocator]` gets that static wrapped instead (`rewrite::allocator_insertions`)
//! and nothing declared: a program has one global allocator, two are a compile error.

use std::path::{Path, PathBuf};

use proc_macro2::{Delimiter, TokenStream, TokenTree};

use crate::cargo::{Target, TargetKind};
use crate::workspace::Workspace;

/// The declaration, one line of text: inserted after the crate root's last token, never with a newline.
const DECLARATION: &str = " #[global_allocator] static __CALLTIME_ALLOC: \
    ::calltime_rt::__private::CountingAlloc<::std::alloc::System> = \
    ::calltime_rt::__private::CountingAlloc(::std::alloc::System);";

/// The crate root that gets the counting allocator: the executable `cargo calltime` builds and runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllocRoot {
    /// The crate root file (absolute, in the user's workspace) and its package's manifest.
    pub file: PathBuf,
    pub manifest_path: PathBuf,
    /// The library's unit tests: the root is also the library's, so the declaration is `#[cfg(test)]`.
    pub unit_tests: bool,
}

impl AllocRoot {
    /// The crate root of `target` as cargo metadata names it; `None` for a proc-macro crate's unit tests (the
    /// runtime is never linked into a proc-macro) and a target the metadata does not have.
    pub fn of_target(ws: &Workspace, target: &Target) -> Option<AllocRoot> {
        let package = ws.metadata.packages.iter().find(|p| {
            p.name.as_str() == target.package && p.manifest_path.parent().is_some_and(|d| d == target.package_dir)
        })?;
        let wanted = match target.kind {
            TargetKind::Bin => "bin",
            TargetKind::Example => "example",
            TargetKind::Test => "test",
            TargetKind::Bench => "bench",
            TargetKind::Lib => "lib",
        };
        let found = package.targets.iter().find(|t| {
            let kinds: Vec<String> = t.kind.iter().map(|k| k.to_string()).collect();
            match target.kind {
                TargetKind::Lib => kinds.iter().any(|k| matches!(k.as_str(), "lib" | "rlib" | "dylib")),
                _ => t.name == target.name && kinds.iter().any(|k| k == wanted),
            }
        })?;
        Some(AllocRoot {
            file: found.src_path.clone().into_std_path_buf(),
            manifest_path: package.manifest_path.clone().into_std_path_buf(),
            unit_tests: target.kind == TargetKind::Lib,
        })
    }
}

/// The insertion that declares the counting allocator in the crate root `text` (the whole file as on disk): after
/// its last token, on that token's line (whatever follows it is whitespace and comments, so a trailing line comment
/// stays after the declaration). `None` when the crate cannot take it: a `#![no_std]` crate, or text that does not
/// lex. An allocator of the program's that the analysis did not see (a dependency's, a cfg it could not tell) makes
/// the build fail on two allocators: it is then retried without this one (`commands/instrument.rs`).
pub fn declaration(text: &str, unit_tests: bool) -> Option<(usize, String)> {
    let (end, no_std) = scan(text)?;
    if no_std {
        return None;
    }
    let cfg = if unit_tests { " #[cfg(test)]" } else { "" };
    Some((end?, format!("{cfg}{DECLARATION}")))
}

/// Where an item can be appended to the file `text` without a newline: just after its last token (a line comment
/// may follow on that line). `None` when it has no token, or does not lex.
pub fn end_of_code(text: &str) -> Option<usize> {
    scan(text)?.0
}

/// The end of the last token (when there is one) and whether the crate is `#![no_std]`; `None` when the text does
/// not lex.
fn scan(text: &str) -> Option<(Option<usize>, bool)> {
    let (base, content) = crate::analysis::modules::rust_text(text);
    let tokens: TokenStream = content.parse().ok()?;
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    let end = tokens.last().map(|last| base + last.span().byte_range().end);
    let no_std = is_no_std(&tokens);
    proc_macro2::extra::invalidate_current_thread_spans();
    Some((end, no_std))
}

/// A `#![no_std]` among the crate's leading inner attributes.
fn is_no_std(tokens: &[TokenTree]) -> bool {
    let mut at = tokens;
    while let [TokenTree::Punct(hash), TokenTree::Punct(bang), TokenTree::Group(group), rest @ ..] = at {
        if hash.as_char() != '#' || bang.as_char() != '!' || group.delimiter() != Delimiter::Bracket {
            break;
        }
        let first = group.stream().into_iter().next();
        if matches!(&first, Some(TokenTree::Ident(name)) if name == "no_std") {
            return true;
        }
        at = rest;
    }
    false
}

/// The file the declaration goes into, relative to the workspace root `root` (the copy's layout).
pub fn relative_file(root: &Path, alloc_root: &AllocRoot) -> Option<(PathBuf, PathBuf)> {
    let file = super::relative_inside(root, &alloc_root.file).ok()?;
    let manifest = super::relative_inside(root, &alloc_root.manifest_path).ok()?;
    Some((file, manifest))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn declared(text: &str, unit_tests: bool) -> Option<String> {
        let (at, insertion) = declaration(text, unit_tests)?;
        Some(crate::rewrite::insert(text, vec![(at, insertion)]).unwrap())
    }

    #[test]
    fn goes_after_the_last_token_on_its_line() {
        let text = "fn main() {\n    work();\n} // the end";
        let out = declared(text, false).unwrap();
        assert_eq!(out, format!("fn main() {{\n    work();\n}}{DECLARATION} // the end"));
        assert_eq!(out.lines().count(), text.lines().count());
    }

    #[test]
    fn the_end_of_code_is_before_a_trailing_comment() {
        assert_eq!(end_of_code("fn main() {} // no newline"), Some(12));
        assert_eq!(end_of_code("fn main() {}\n/* block */\n"), Some(12));
        assert_eq!(end_of_code("// only a comment"), None);
    }

    #[test]
    fn a_library_root_declares_it_for_its_unit_tests_only() {
        let out = declared("pub fn f() {}\n", true).unwrap();
        assert_eq!(out, format!("pub fn f() {{}} #[cfg(test)]{DECLARATION}\n"));
    }

    #[test]
    fn a_bom_and_a_shebang_are_counted() {
        let text = "\u{feff}#!/usr/bin/env run-cargo-script\nfn main() {}\n";
        let out = declared(text, false).unwrap();
        assert_eq!(out, format!("\u{feff}#!/usr/bin/env run-cargo-script\nfn main() {{}}{DECLARATION}\n"));
    }

    #[test]
    fn no_std_crates_and_text_that_does_not_lex_get_none() {
        assert_eq!(declared("#![allow(unused)]\n#![no_std]\nfn main() {}\n", false), None);
        assert_eq!(declared("fn main() { \"unterminated }\n", false), None);
        // Only comments: no token to follow.
        assert_eq!(declared("// nothing\n", false), None);
    }
}
