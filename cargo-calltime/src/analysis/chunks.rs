//! A file's top-level tokens cut into items, so that syn parses and the extraction walks one item at a time and
//! a large file never has its whole syntax tree alive at once (issue 12.11: a 7 MB generated file took 966 MB).
//!
//! The cut is syntactic and cheap: an item ends at a top-level `;`, or at a top-level `{ .. }` group (with the `;`
//! that may follow it: `use a::{b, c};`, `const X: S = S { .. };`). Items it cuts wrongly (a `{ N }` const
//! argument in an impl header, say) fail to parse, and the caller then parses the whole file as before.

use proc_macro2::{Delimiter, TokenStream, TokenTree};

/// The file's tokens as items, inner attributes (`#![..]`) left out.
pub(super) fn item_chunks(tokens: TokenStream) -> Vec<TokenStream> {
    let mut chunks = Vec::new();
    let mut current: Vec<TokenTree> = Vec::new();
    let mut iter = tokens.into_iter().peekable();
    while let Some(tt) = iter.next() {
        if current.is_empty() && is_punct(&tt, '#') && iter.peek().is_some_and(|next| is_punct(next, '!')) {
            // `#![..]`: the `!` and the bracket group.
            iter.next();
            iter.next();
            continue;
        }
        let ends = is_punct(&tt, ';') || matches!(&tt, TokenTree::Group(g) if g.delimiter() == Delimiter::Brace);
        let brace = !is_punct(&tt, ';');
        current.push(tt);
        if ends {
            if brace && iter.peek().is_some_and(|next| is_punct(next, ';')) {
                current.extend(iter.next());
            }
            chunks.push(current.drain(..).collect());
        }
    }
    if !current.is_empty() {
        chunks.push(current.into_iter().collect());
    }
    chunks
}

fn is_punct(tt: &TokenTree, c: char) -> bool {
    matches!(tt, TokenTree::Punct(p) if p.as_char() == c)
}

/// Whether the tokens name `thread_local` or `lazy_static` anywhere (nested groups included): such an item may
/// declare statics whose initializers the whole file needs before its functions are extracted.
pub(super) fn mentions_lazy_statics(tokens: &TokenStream) -> bool {
    mentions_any(tokens, &["thread_local", "lazy_static"])
}

/// Whether any of `names` occurs as an identifier in `tokens`, groups included.
pub(super) fn mentions_any(tokens: &TokenStream, names: &[&str]) -> bool {
    tokens.clone().into_iter().any(|tt| match tt {
        TokenTree::Ident(i) => names.iter().any(|n| i == n),
        TokenTree::Group(g) => mentions_any(&g.stream(), names),
        _ => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cut(text: &str) -> Vec<String> {
        item_chunks(text.parse().unwrap()).iter().map(|c| c.to_string()).collect()
    }

    #[test]
    fn items_end_at_semicolons_and_brace_groups() {
        let chunks = cut("#![allow(x)]\nuse a::{b, c};\n#[derive(Debug)]\nstruct S { x: u8 }\nconst X: S = S { x: 1 };\nfn f() -> u8 { 1 }\nstruct T(u8);\nm! { }");
        assert_eq!(chunks.len(), 6, "{chunks:?}");
        assert!(chunks[0].starts_with("use a"), "{chunks:?}");
        assert!(chunks[1].starts_with("# [derive (Debug)] struct S"), "{chunks:?}");
        assert!(chunks[2].ends_with(';'), "{chunks:?}");
    }
}
