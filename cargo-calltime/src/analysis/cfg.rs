//! `#[cfg(..)]` predicates: read from attributes at extraction (a file is parsed once for every crate that
//! includes it), evaluated per crate at indexing against the crate's enabled features and the host target.
//! Three-valued: what the analysis cannot know (`debug_assertions`, `test`, a `--cfg` from RUSTFLAGS) is "maybe",
//! and only an item whose predicate is certainly false is compiled out.

use std::collections::BTreeSet;

use syn::punctuated::Punctuated;
use syn::{Attribute, Meta};

/// A cfg predicate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cfg {
    /// `unix`, `feature = "x"`: the key and its value.
    Key(String, Option<String>),
    Not(Box<Cfg>),
    All(Vec<Cfg>),
    Any(Vec<Cfg>),
}

/// An item's predicate: every `#[cfg(..)]` on it, and `#[cfg_attr(p, cfg(q))]` as `any(not(p), q)`; `None`
/// when it has none. `#[cfg(test)]` is left to the test-only logic (it reads "maybe" here).
pub fn of_attrs(attrs: &[Attribute]) -> Option<Cfg> {
    let mut all = Vec::new();
    for attr in attrs {
        if attr.path().is_ident("cfg") {
            if let Ok(meta) = attr.parse_args::<Meta>() {
                all.push(predicate(&meta));
            }
        } else if attr.path().is_ident("cfg_attr") {
            let Ok(list) = attr.parse_args_with(Punctuated::<Meta, syn::Token![,]>::parse_terminated) else {
                continue;
            };
            let mut parts = list.iter();
            let Some(condition) = parts.next() else { continue };
            for applied in parts {
                if let Meta::List(inner) = applied {
                    if inner.path.is_ident("cfg") {
                        if let Ok(meta) = inner.parse_args::<Meta>() {
                            let unless = Cfg::Not(Box::new(predicate(condition)));
                            all.push(Cfg::Any(vec![unless, predicate(&meta)]));
                        }
                    }
                }
            }
        }
    }
    match all.len() {
        0 => None,
        1 => all.pop(),
        _ => Some(Cfg::All(all)),
    }
}

fn predicate(meta: &Meta) -> Cfg {
    match meta {
        Meta::Path(p) => Cfg::Key(path_text(p), None),
        Meta::NameValue(nv) => {
            let value = match &nv.value {
                syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) => Some(s.value()),
                _ => None,
            };
            Cfg::Key(path_text(&nv.path), value)
        }
        Meta::List(list) => {
            let nested: Vec<Cfg> = list
                .parse_args_with(Punctuated::<Meta, syn::Token![,]>::parse_terminated)
                .map(|metas| metas.iter().map(predicate).collect())
                .unwrap_or_default();
            match path_text(&list.path).as_str() {
                "all" => Cfg::All(nested),
                "any" => Cfg::Any(nested),
                "not" if nested.len() == 1 => Cfg::Not(Box::new(nested.into_iter().next().expect("one"))),
                // Unknown operators (`version(..)`, a typo): unknown.
                other => Cfg::Key(other.to_owned(), Some("(..)".to_owned())),
            }
        }
    }
}

fn path_text(path: &syn::Path) -> String {
    path.segments.iter().map(|s| s.ident.to_string()).collect::<Vec<_>>().join("::")
}

impl std::fmt::Display for Cfg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let list = |f: &mut std::fmt::Formatter<'_>, name: &str, items: &[Cfg]| {
            write!(f, "{name}(")?;
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write!(f, "{item}")?;
            }
            f.write_str(")")
        };
        match self {
            Cfg::Key(key, None) => f.write_str(key),
            Cfg::Key(key, Some(value)) => write!(f, "{key} = {value:?}"),
            Cfg::Not(inner) => write!(f, "not({inner})"),
            Cfg::All(items) => list(f, "all", items),
            Cfg::Any(items) => list(f, "any", items),
        }
    }
}

/// What one crate is compiled with: its enabled features (`None`: not known, every feature is "maybe") and the
/// host target's cfg (cargo calltime builds for the host).
#[derive(Debug, Clone, Default)]
pub struct CfgEnv {
    pub features: Option<BTreeSet<String>>,
}

impl CfgEnv {
    /// `Some(true)`/`Some(false)` when known, `None` for "maybe".
    pub fn eval(&self, cfg: &Cfg) -> Option<bool> {
        match cfg {
            Cfg::Key(key, value) => self.key(key, value.as_deref()),
            Cfg::Not(inner) => self.eval(inner).map(|b| !b),
            Cfg::All(items) => self.combine(items, false),
            Cfg::Any(items) => self.combine(items, true),
        }
    }

    /// `all` (`decisive` false) or `any` (`decisive` true): one item known to be `decisive` decides; otherwise
    /// one unknown item makes the whole unknown.
    fn combine(&self, items: &[Cfg], decisive: bool) -> Option<bool> {
        let mut result = Some(!decisive);
        for item in items {
            match self.eval(item) {
                Some(value) if value == decisive => return Some(decisive),
                None => result = None,
                Some(_) => {}
            }
        }
        result
    }

    fn key(&self, key: &str, value: Option<&str>) -> Option<bool> {
        let is = |actual: &str| value.map(|v| v == actual);
        match (key, value) {
            ("feature", Some(name)) => self.features.as_ref().map(|set| set.contains(name)),
            ("unix", None) => Some(cfg!(unix)),
            ("windows", None) => Some(cfg!(windows)),
            ("target_os", _) => is(std::env::consts::OS),
            ("target_family", _) => is(std::env::consts::FAMILY),
            ("target_arch", _) => is(std::env::consts::ARCH),
            ("target_pointer_width", _) => is(&(usize::BITS).to_string()),
            ("target_endian", _) => is(if cfg!(target_endian = "little") { "little" } else { "big" }),
            ("target_env", _) => is(HOST_ENV),
            // Never set when cargo calltime builds a program: docs, doctests, Miri, proc-macro crates.
            ("doc" | "doctest" | "miri" | "proc_macro", None) => Some(false),
            // `test`, `debug_assertions` (the profile), `panic`, `target_has_atomic`, `--cfg` flags: unknown.
            _ => None,
        }
    }
}

const HOST_ENV: &str = if cfg!(target_env = "gnu") {
    "gnu"
} else if cfg!(target_env = "musl") {
    "musl"
} else if cfg!(target_env = "msvc") {
    "msvc"
} else {
    ""
};

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg_of(text: &str) -> Cfg {
        let item: syn::ItemFn = syn::parse_str(&format!("{text} fn f() {{}}")).expect("parses");
        of_attrs(&item.attrs).expect("a cfg")
    }

    #[test]
    fn predicates_evaluate_in_three_values() {
        let env = CfgEnv { features: Some(BTreeSet::from(["fast".to_owned()])) };
        let eval = |text: &str| env.eval(&cfg_of(text));
        assert_eq!(eval(r#"#[cfg(feature = "fast")]"#), Some(true));
        assert_eq!(eval(r#"#[cfg(feature = "grain")]"#), Some(false));
        assert_eq!(eval(r#"#[cfg(not(feature = "grain"))]"#), Some(true));
        assert_eq!(eval(r#"#[cfg(all(feature = "grain", debug_assertions))]"#), Some(false));
        assert_eq!(eval(r#"#[cfg(all(feature = "fast", debug_assertions))]"#), None);
        assert_eq!(eval(r#"#[cfg(any(windows, unix))]"#), Some(cfg!(any(windows, unix))));
        assert_eq!(eval("#[cfg(my_flag)]"), None);
        assert_eq!(eval("#[cfg(not(my_flag))]"), None);
        assert_eq!(eval(&format!("#[cfg(target_os = {:?})]", std::env::consts::OS)), Some(true));
        assert_eq!(eval(r#"#[cfg(target_os = "none-such")]"#), Some(false));
        assert_eq!(eval(r#"#[cfg(target_pointer_width = "8")]"#), Some(false));
        // Two attributes both apply; cfg_attr(p, cfg(q)) is any(not(p), q).
        assert_eq!(eval("#[cfg(unix)] #[cfg(windows)]"), Some(false));
        assert_eq!(eval(r#"#[cfg_attr(feature = "fast", cfg(feature = "grain"))]"#), Some(false));
        assert_eq!(eval(r#"#[cfg_attr(feature = "grain", cfg(feature = "none"))]"#), Some(true));
        // Features not known: maybe.
        assert_eq!(CfgEnv::default().eval(&cfg_of(r#"#[cfg(feature = "x")]"#)), None);
        assert_eq!(cfg_of(r#"#[cfg(all(unix, not(feature = "x")))]"#).to_string(), r#"all(unix, not(feature = "x"))"#);
    }
}
