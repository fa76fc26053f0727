//! Stage 5: inserting probes into a source file as byte-offset insertions.
//!
//! A file is never re-printed: each probe is text inserted at the offsets the plan recorded, applied from the end
//! of the file backwards so earlier offsets stay valid, and no inserted text contains a newline, so every line
//! number, `line!()`, `#[track_caller]` location and compiler diagnostic stays where the user wrote it.

use anyhow::{bail, Result};

use crate::plan::{ProbeKind, ProbeSite};

/// What a root probe tells the runtime about the plan (Contract 1's `PlanInfo`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanInfo {
    pub id: String,
    /// Absolute path of the function table JSON.
    pub table: String,
    pub functions: u32,
}

/// One probe to insert: where, and whether it marks a root.
#[derive(Debug, Clone)]
pub struct Probe<'a> {
    pub site: &'a ProbeSite,
    pub is_root: bool,
}

/// The `&PlanInfo { .. }` expression of a root probe; strings are `{:?}`-escaped so any path is a valid literal.
fn plan_info_expr(plan: &PlanInfo) -> String {
    format!(
        "&::calltime_rt::__private::PlanInfo {{ id: {:?}, table: {:?}, functions: {} }}",
        plan.id, plan.table, plan.functions
    )
}

/// The statement pinning an async body's output type to the declared return type, so coercions (`Box<dyn T>`)
/// and `?` conversions type-check inside the wrapping `async move` block as they did in the `async fn` body.
/// Left out for `()`, for a fully erased `impl Trait` (`_` would pin nothing useful and fall back to `()`) and for
/// `!` (not a type that may be written on stable).
fn return_pin(return_type: Option<&str>) -> String {
    match return_type.map(str::trim) {
        None | Some("") | Some("()") | Some("_") | Some("!") => String::new(),
        Some(ty) => format!(
            "if false {{ #[allow(unreachable_code)] let __calltime_r: {ty} = ::core::unreachable!(); \
             #[allow(unreachable_code)] return __calltime_r; }} "
        ),
    }
}

/// The text insertions `(offset, text)` for one probe, in no particular order.
pub fn insertions(probe: &Probe<'_>, plan: &PlanInfo) -> Vec<(usize, String)> {
    let site = probe.site;
    let index = site.index;
    match site.kind {
        ProbeKind::Sync => {
            let call = if probe.is_root {
                format!("enter_root({index}, {})", plan_info_expr(plan))
            } else {
                format!("enter({index})")
            };
            vec![(site.open, format!("let __calltime_guard = ::calltime_rt::__private::{call};"))]
        }
        ProbeKind::Async => {
            let wrapper = wrapper_call(index, probe.is_root, plan);
            let pin = return_pin(site.return_type.as_deref());
            vec![(site.open, format!(" {wrapper}async move {{ {pin}")), (site.close, " }).await ".to_owned())]
        }
        ProbeKind::AsyncBlock => {
            let wrapper = wrapper_call(index, probe.is_root, plan);
            vec![(site.open, wrapper), (site.close, ")".to_owned())]
        }
    }
}

/// `::calltime_rt::__private::instrument(7, ` (the future follows).
fn wrapper_call(index: u32, is_root: bool, plan: &PlanInfo) -> String {
    if is_root {
        format!("::calltime_rt::__private::instrument_root({index}, {}, ", plan_info_expr(plan))
    } else {
        format!("::calltime_rt::__private::instrument({index}, ")
    }
}

/// Applies every probe of one file. Fails (naming nothing: the caller adds the file) when an offset is outside the
/// file or not on a character boundary, which means the plan was made from a different version of the file.
pub fn apply(source: &str, probes: &[Probe<'_>], plan: &PlanInfo) -> Result<String> {
    let mut edits: Vec<(usize, String)> = probes.iter().flat_map(|p| insertions(p, plan)).collect();
    for (offset, _) in &edits {
        if *offset > source.len() || !source.is_char_boundary(*offset) {
            bail!("probe offset {offset} is outside the file or inside a character (the file changed since analysis)");
        }
    }
    // Stable sort by offset; at equal offsets keep the plan's order (an async close of one function never shares an
    // offset with another function's open, but keep the result deterministic anyway).
    edits.sort_by_key(|(offset, _)| *offset);
    let extra: usize = edits.iter().map(|(_, t)| t.len()).sum();
    let mut out = String::with_capacity(source.len() + extra);
    let mut from = 0;
    for (offset, text) in &edits {
        out.push_str(&source[from..*offset]);
        out.push_str(text);
        from = *offset;
    }
    out.push_str(&source[from..]);
    debug_assert_eq!(out.lines().count(), source.lines().count());
    Ok(out)
}

/// The 1-based line holding byte `offset` of `source`.
pub fn line_of(source: &str, offset: usize) -> u32 {
    let end = offset.min(source.len());
    source.as_bytes()[..end].iter().filter(|&&b| b == b'\n').count() as u32 + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> PlanInfo {
        PlanInfo { id: "00000000deadbeef".into(), table: "/t/x \"q\".functions.json".into(), functions: 3 }
    }

    fn site(kind: ProbeKind, index: u32, open: usize, close: usize, ret: Option<&str>) -> ProbeSite {
        ProbeSite { index, kind, line: 1, open, close, return_type: ret.map(str::to_owned) }
    }

    #[test]
    fn sync_probes_are_inserted_after_the_brace_without_moving_lines() {
        let src = "fn a() {\n    b();\n}\nfn b() { }\n";
        let a_open = src.find('{').unwrap() + 1;
        let b_open = src.rfind('{').unwrap() + 1;
        let sa = site(ProbeKind::Sync, 0, a_open, a_open, None);
        let sb = site(ProbeKind::Sync, 1, b_open, b_open, None);
        let out =
            apply(src, &[Probe { site: &sa, is_root: true }, Probe { site: &sb, is_root: false }], &plan()).unwrap();
        assert_eq!(
            out,
            "fn a() {let __calltime_guard = ::calltime_rt::__private::enter_root(0, &::calltime_rt::__private::PlanInfo \
             { id: \"00000000deadbeef\", table: \"/t/x \\\"q\\\".functions.json\", functions: 3 });\n    b();\n}\n\
             fn b() {let __calltime_guard = ::calltime_rt::__private::enter(1); }\n"
        );
        assert_eq!(out.lines().count(), src.lines().count());
    }

    #[test]
    fn async_bodies_are_wrapped_with_a_return_type_pin() {
        let src = "async fn f() -> Result<u8, E> {\n    Ok(1)\n}\n";
        let open = src.find('{').unwrap() + 1;
        let close = src.rfind('}').unwrap();
        let s = site(ProbeKind::Async, 2, open, close, Some("Result<u8, E>"));
        let out = apply(src, &[Probe { site: &s, is_root: false }], &plan()).unwrap();
        assert_eq!(
            out,
            "async fn f() -> Result<u8, E> { ::calltime_rt::__private::instrument(2, async move { if false { \
             #[allow(unreachable_code)] let __calltime_r: Result<u8, E> = ::core::unreachable!(); \
             #[allow(unreachable_code)] return __calltime_r; } \n    Ok(1)\n }).await }\n"
        );
    }

    #[test]
    fn async_unit_and_erased_returns_get_no_pin() {
        for ret in [None, Some("_"), Some("()")] {
            let src = "async fn f() { g().await }";
            let s = site(ProbeKind::Async, 0, 14, src.len() - 1, ret);
            let out = apply(src, &[Probe { site: &s, is_root: false }], &plan()).unwrap();
            assert_eq!(
                out,
                "async fn f() { ::calltime_rt::__private::instrument(0, async move {  g().await  }).await }"
            );
        }
    }

    #[test]
    fn async_blocks_are_wrapped_in_place() {
        let src = "fn f() -> impl Future<Output = u8> { async move { 1 } }";
        let open = src.find("async").unwrap();
        let close = src.rfind('}').unwrap() - 1;
        let s = site(ProbeKind::AsyncBlock, 1, open, close, None);
        let out = apply(src, &[Probe { site: &s, is_root: true }], &plan()).unwrap();
        assert!(out.starts_with(
            "fn f() -> impl Future<Output = u8> { ::calltime_rt::__private::instrument_root(1, &::calltime_rt::__private::PlanInfo {"
        ));
        assert!(out.ends_with("functions: 3 }, async move { 1 }) }"));
    }

    #[test]
    fn bad_offsets_are_errors_not_panics() {
        let s = site(ProbeKind::Sync, 0, 100, 100, None);
        assert!(apply("fn a() {}", &[Probe { site: &s, is_root: false }], &plan()).is_err());
        let s = site(ProbeKind::Sync, 0, 1, 1, None);
        assert!(apply("é", &[Probe { site: &s, is_root: false }], &plan()).is_err());
    }

    #[test]
    fn line_of_counts_newlines_before_the_offset() {
        assert_eq!(line_of("a\nb\nc", 0), 1);
        assert_eq!(line_of("a\nb\nc", 2), 2);
        assert_eq!(line_of("a\nb\nc", 99), 3);
    }
}
