//! Stage 5: inserting probes into a source file as byte-offset insertions.
//!
//! A file is never re-printed: each probe is text inserted at the offsets the plan recorded, applied from the end
//! of the file backwards so earlier offsets stay valid, and no inserted text contains a newline, so every line
//! number, `line!()`, `#[track_caller]` location and compiler diagnostic stays where the user wrote it.

use anyhow::{bail, Result};

use crate::plan::{AllocatorSite, ErrCounting, ProbeKind, ProbeSite};

/// What a root probe tells the runtime about the plan (Contract 1's `PlanInfo`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanInfo {
    pub id: String,
    /// Absolute path of the function table JSON.
    pub table: String,
    pub functions: u32,
    /// The copy is built in the dev profile: sync bodies keep the guard form instead of `run(index, move || ..)`,
    /// whose closure, `run::<R, F>` and `run_probed::<R, F>` rustc would compile for every probed function of an
    /// unoptimised build, where nothing inlines them (the form exists for inlining under optimisation).
    pub dev_profile: bool,
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
/// `!` (not a type that may be written on stable). The pinned value is `loop {}`, not `::core::unreachable!()`: an
/// edition-2015 crate has no `::core` path.
fn return_pin(return_type: Option<&str>) -> String {
    match return_type.map(str::trim) {
        None | Some("") | Some("()") | Some("_") | Some("!") => String::new(),
        Some(ty) => format!(
            "if false {{ #[allow(unreachable_code)] let __calltime_r: {ty} = loop {{}}; \
             #[allow(unreachable_code)] return __calltime_r; }} "
        ),
    }
}

/// The crate table of state bytes the non-root sync probes read (`calltime_rt::__private::States`), declared in
/// every crate root of an instrumented package (`states_declaration`).
pub const STATES: &str = "__CALLTIME_STATE";

/// Bytes of source of a wrapped body that may not be written twice (`ProbeSite::body_twice`) under which it is
/// probed with `run_quiet_in` (the body in place for quiet calls
/// only: one compare and branch, the rest one out-of-line call) rather than `run_in` (quiet and counted calls in
/// place, recorded ones out of line). A bigger body is not inlined into its callers in either form, and holding a
/// copy of it keeps `run_quiet_in`'s wrapper out of its callers too, which costs a recorded function's every call
/// one call more (pulldown-cmark's `Parser::next`, about 1,900 bytes: docs/truth-bench.md, "Sixth round"); with
/// `run_in` the wrapper is small and inlined, and a quiet call pays one call of the closure, a small share of such
/// a body.
pub const IN_PLACE_BODY: usize = 1000;

/// Bytes of source of a body (that declares no item) under which the rewrite writes it twice (`quiet_in!`): a
/// quiet copy in place, the other in the cold call's closure. Bigger bodies are not, only to bound what the
/// compiler does twice. Measured (docs/performance.md, "Eighth round"): written twice at every size, tokei's
/// `parse_context` (8,400 bytes, one caller) is inlined into its caller again as in the plain build (6% fewer
/// instructions), while pulldown-cmark's `Parser::next` (1,800 bytes, recorded for the whole run) pays one call
/// more per call (2% more).
pub const WRITTEN_TWICE_BODY: usize = 16_000;

/// The declaration of a crate's table of state bytes, one per function of the plan (indexed by the dense global
/// index): appended after the crate root's last token, without a newline.
pub fn states_declaration(plan: &PlanInfo) -> String {
    format!(
        " #[doc(hidden)] #[allow(dead_code)] pub(crate) static {STATES}: ::calltime_rt::__private::States<{}> = \
         ::calltime_rt::__private::States::new();",
        plan.functions
    )
}

/// The text insertions `(offset, text)` for one probe, in no particular order.
pub fn insertions(probe: &Probe<'_>, plan: &PlanInfo) -> Vec<(usize, String)> {
    let site = probe.site;
    let index = site.index;
    let counts_errs = site.errs == ErrCounting::Counted;
    match site.kind {
        ProbeKind::Sync => {
            let call = if probe.is_root {
                format!("enter_root({index}, {})", plan_info_expr(plan))
            } else {
                format!("enter_in(&crate::{STATES}, {index})")
            };
            let size = site.close.saturating_sub(site.open);
            if probe.is_root && !plan.dev_profile && counts_errs {
                // A body that runs in a closure anyway (its `Err` counting's): a nested call that the root's probe
                // would settle without recording runs it at once (`root_closure_wrap`). Not for other roots whose
                // parameters would allow it: the truth bench's `search_file`, moved into the closure, cost its
                // per-file invocations 37 M instructions more (docs/performance.md, "Thirteenth round").
                let (open, close) = root_closure_wrap(index, plan, site.return_type.as_deref());
                return vec![(site.open, open), (site.close, close)];
            }
            if site.body_twice && !probe.is_root && !plan.dev_profile {
                let pin = return_pin(site.return_type.as_deref());
                if (site.body_in_closure || counts_errs) && size < WRITTEN_TWICE_BODY {
                    // The body written twice by the runtime's macro (its `Err` counting too, in the cold copy only).
                    // A body whose `Err`s are counted runs in a closure anyway, whatever its parameters.
                    let form = if counts_errs { "quiet_err_in" } else { "quiet_in" };
                    let open = format!("::calltime_rt::__private::{form}!(&crate::{STATES}, {index}, {{ {pin}");
                    return vec![(site.open, open), (site.close, " })".to_owned())];
                }
                if !site.body_in_closure && !counts_errs && size < IN_PLACE_BODY {
                    // Parameters that may drop something stay the function's own: the body once, in place, under a
                    // guard that a quiet call takes inert.
                    let open = format!("::calltime_rt::__private::quiet_guard_in!(&crate::{STATES}, {index}, {{");
                    return vec![(site.open, open), (site.close, " })".to_owned())];
                }
            }
            if site.body_in_closure && !probe.is_root && !plan.dev_profile {
                let small = size < IN_PLACE_BODY;
                let pin = return_pin(site.return_type.as_deref());
                let run = if small { "run_quiet_in" } else { "run_in" };
                let run = format!("::calltime_rt::__private::{run}(&crate::{STATES}, {index}, move || {{");
                if counts_errs {
                    let (open, close) = sync_err_wrap(index, site.return_type.as_deref());
                    return vec![(site.open, format!("{run}{open}")), (site.close, format!("{close}}})"))];
                }
                return vec![(site.open, format!("{run} {pin}")), (site.close, " })".to_owned())];
            }
            let guard = format!("let __calltime_guard = ::calltime_rt::__private::{call};");
            if counts_errs {
                let (open, close) = if plan.dev_profile {
                    sync_err_wrap(index, site.return_type.as_deref())
                } else {
                    guarded_err_wrap(index, site.return_type.as_deref())
                };
                return vec![(site.open, format!("{guard}{open}")), (site.close, close)];
            }
            vec![(site.open, guard)]
        }
        ProbeKind::Async if counts_errs => {
            let wrapper = wrapper_call(index, probe.is_root, plan);
            let (open, close) = async_err_wrap(index, site.return_type.as_deref());
            vec![(site.open, format!(" {wrapper}async move {{ {open}")), (site.close, format!("{close}}}).await "))]
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

/// The statement that hands a function's result to the runtime, which counts it when it is an `Err` (a type that
/// only ends in `Result` but is not std's takes the no-op trait method instead of the inherent one).
fn outcome_note(index: u32) -> String {
    format!(
        "{{ #[allow(unused_imports)] use ::calltime_rt::__private::NotAResult as _; \
         ::calltime_rt::__private::Outcome(&__calltime_result).note({index}); }} "
    )
}

/// The text around a sync body whose `Err` returns are counted, as tracing's `#[instrument(err)]` does: the body
/// runs in a closure (so `return` and `?` leave it with the function's result), called once at once; its type
/// is pinned to the declared return type so coercions and `?` conversions infer as they did, and `FnOnce` lets
/// it hand back borrows of its captures.
fn sync_err_wrap(index: u32, return_type: Option<&str>) -> (String, String) {
    let pin = return_pin(return_type);
    let note = outcome_note(index);
    (
        format!(" match ::calltime_rt::__private::call_once(move || {{ {pin}"),
        format!(" }}) {{ __calltime_result => {{ {note}__calltime_result }} }} "),
    )
}

/// `sync_err_wrap` after a guard, in an optimised build: only a call whose guard records passes its result to the
/// note; the others return the body's result as it comes. With one path, the result is read before it is returned,
/// so it is built in a temporary and copied to the return slot piece by piece (an enum's fields at odd offsets,
/// then read back 16 bytes at a time: a stalled store-to-load forward), on every call of a root's recursion or of a
/// counted function (serde_json's `Value::deserialize` and `Deserializer::deserialize_any`: docs/performance.md,
/// "Tenth round"). The closure, called from two places, may stay out of line: one call, against those copies.
fn guarded_err_wrap(index: u32, return_type: Option<&str>) -> (String, String) {
    let pin = return_pin(return_type);
    let note = outcome_note(index);
    (
        format!(" let __calltime_body = move || {{ {pin}"),
        format!(
            " }}; if __calltime_guard.records() {{ match ::calltime_rt::__private::call_once(__calltime_body) {{ \
             __calltime_result => {{ {note}__calltime_result }} }} }} else {{ \
             ::calltime_rt::__private::call_once(__calltime_body) }} "
        ),
    )
}

/// The text around a root's sync body whose `Err`s are counted, in an optimised build: the body in one closure,
/// run at once when the call is nested in an invocation that would settle it without recording (`SKIP`, or the root
/// quiet: `root_is_nested_quiet`, a thread-local load and a branch or two), else by one out-of-line call that holds
/// the guard (`States::run_root_noted_at`, which passes the result of a recorded call to the `Err` note).
/// A recursive root (serde_json's `Value::deserialize`, 440,000 nested calls in 20,000 invocations) then pays no
/// guard, no saved registers and no result copies in its nested calls, and stays small enough to be inlined into
/// its callers (docs/performance.md, "Thirteenth round"). The closure has two call sites, as in
/// `guarded_err_wrap`.
fn root_closure_wrap(index: u32, plan: &PlanInfo, return_type: Option<&str>) -> (String, String) {
    let pin = return_pin(return_type);
    let plan = plan_info_expr(plan);
    let cold = format!(
        "(&crate::{STATES}).run_root_noted_at::<{index}, _, _, _>({plan}, __calltime_body, |__calltime_result| \
         {{ #[allow(unused_imports)] use ::calltime_rt::__private::NotAResult as _; \
         ::calltime_rt::__private::Outcome(__calltime_result).note({index}); }})"
    );
    (
        format!("let __calltime_body = move || {{ {pin}"),
        format!(
            " }}; if ::calltime_rt::__private::root_is_nested_quiet(&crate::{STATES}, {index}) {{ \
             ::calltime_rt::__private::call_once(__calltime_body) }} else {{ {cold} }} "
        ),
    )
}

/// The text inside an async fn's wrapper whose `Err` returns are counted: the body runs in an inner async block,
/// whose output passes the runtime's note while the function's frame is still the current one.
fn async_err_wrap(index: u32, return_type: Option<&str>) -> (String, String) {
    let pin = return_pin(return_type);
    let note = outcome_note(index);
    (format!("{pin}let __calltime_result = async move {{ {pin}"), format!(" }}.await; {note}__calltime_result "))
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
    Ok(apply_keeping_columns(source, probes, plan)?.0)
}

/// [`apply`], with the indices of the probes that move a user token's column. Each insertion is placed where no
/// user token follows it on its line: as planned when only whitespace or a `//` comment follows; an insertion that
/// may move backwards over whitespace (an async body's closing text, an async block's wrapper) goes to the end of
/// the previous line when only whitespace precedes it on its own and that line holds no comment, string or char
/// (so its end is plain code). Otherwise (a whole body on one line) the tokens after it on its line shift right.
pub fn apply_keeping_columns(source: &str, probes: &[Probe<'_>], plan: &PlanInfo) -> Result<(String, Vec<u32>)> {
    let (edits, shifted) = probe_insertions(source, probes, plan)?;
    Ok((insert(source, edits)?, shifted))
}

/// The insertions [`apply_keeping_columns`] makes, with the indices of the probes that move a column, for a caller
/// that adds insertions of its own before applying them all with [`insert`].
pub fn probe_insertions(source: &str, probes: &[Probe<'_>], plan: &PlanInfo) -> Result<(Vec<Insertion>, Vec<u32>)> {
    let mut edits: Vec<(usize, String)> = Vec::new();
    let mut shifted = Vec::new();
    let (closings, openings) = spawn_insertions(probes);
    // At one offset: what closes a wrap comes before a probe's text (the body's closing text may follow the last
    // wrapped argument directly), which comes before what opens a wrap.
    edits.extend(closings);
    for probe in probes {
        let mut moves_a_column = false;
        for (i, (offset, text)) in insertions(probe, plan).into_iter().enumerate() {
            if offset > source.len() || !source.is_char_boundary(offset) {
                bail!(
                    "probe offset {offset} is outside the file or inside a character (the file changed since analysis)"
                );
            }
            let may_move_back = match probe.site.kind {
                ProbeKind::Sync => i == 1,
                ProbeKind::Async => i == 1,
                ProbeKind::AsyncBlock => i == 0,
            };
            // A closing text's previous line is inside the body, which starts in code: lexed from there.
            let code_from = (may_move_back && probe.site.kind != ProbeKind::AsyncBlock).then_some(probe.site.open);
            let offset = match column_safe_offset(source, offset, may_move_back, code_from) {
                Some(safe) => safe,
                None => {
                    moves_a_column = true;
                    offset
                }
            };
            edits.push((offset, text));
        }
        // A spawn's argument is wrapped where it stands: what follows on its line shifts right.
        if moves_a_column || !probe.site.spawns.is_empty() {
            shifted.push(probe.site.index);
        }
    }
    edits.extend(openings);
    shifted.sort_unstable();
    Ok((edits, shifted))
}

/// The insertions that wrap spawned arguments and parallel chains: those that close a wrap, then those that open
/// one, each ordered so that nested wraps nest at a shared offset (a chain that is a closure's whole body: the
/// closure's opening text first, the chain's closing text first).
fn spawn_insertions(probes: &[Probe<'_>]) -> (Vec<Insertion>, Vec<Insertion>) {
    // (offset, nesting order, text): an opening of an outer wrap (opened earlier) first, a closing of an inner
    // wrap (opened later) first; the sort is stable, so a wrap's own texts keep their order.
    let mut closings: Vec<(usize, std::cmp::Reverse<usize>, String)> = Vec::new();
    let mut openings: Vec<(usize, usize, String)> = Vec::new();
    for wrap in probes.iter().flat_map(|probe| &probe.site.spawns) {
        let opened = wrap.openings();
        for (i, (offset, text)) in wrap.insertions().into_iter().enumerate() {
            if i < opened {
                openings.push((offset, wrap.open, text));
            } else {
                closings.push((offset, std::cmp::Reverse(wrap.open), text));
            }
        }
    }
    closings.sort_by_key(|&(offset, order, _)| (offset, order));
    openings.sort_by_key(|&(offset, order, _)| (offset, order));
    (
        closings.into_iter().map(|(offset, _, text)| (offset, text)).collect(),
        openings.into_iter().map(|(offset, _, text)| (offset, text)).collect(),
    )
}

/// Text to insert at a byte offset of a file.
pub type Insertion = (usize, String);

/// The insertions that wrap a `#[global_allocator]` static in the runtime's counting allocator: its type becomes
/// `CountingAlloc<T>` and its initialiser `CountingAlloc(init)` (the wrapper derefs to the allocator, so code
/// calling methods on the static keeps compiling). They shift the rest of that one line to the right.
pub fn allocator_insertions(site: &AllocatorSite) -> [Insertion; 4] {
    const WRAPPER: &str = "::calltime_rt::__private::CountingAlloc";
    [
        (site.ty.0, format!("{WRAPPER}<")),
        (site.ty.1, ">".to_owned()),
        (site.expr.0, format!("{WRAPPER}(")),
        (site.expr.1, ")".to_owned()),
    ]
}

/// Inserts each `(offset, text)` into `source` (offsets in the original text, on character boundaries; at equal
/// offsets in the given order). Inserted text never holds a newline, so no line moves. Fails when an offset is
/// outside the file or inside a character (the file changed since it was read).
pub fn insert(source: &str, mut edits: Vec<Insertion>) -> Result<String> {
    if let Some((offset, _)) = edits.iter().find(|(o, _)| *o > source.len() || !source.is_char_boundary(*o)) {
        bail!("insertion offset {offset} is outside the file or inside a character (the file changed since analysis)");
    }
    edits.sort_by_key(|(offset, _)| *offset);
    let extra: usize = edits.iter().map(|(_, t)| t.len()).sum();
    let mut out = String::with_capacity(source.len() + extra);
    let mut from = 0;
    for (offset, text) in &edits {
        debug_assert!(!text.contains('\n'));
        out.push_str(&source[from..*offset]);
        out.push_str(text);
        from = *offset;
    }
    out.push_str(&source[from..]);
    debug_assert_eq!(out.lines().count(), source.lines().count());
    Ok(out)
}

/// Where an insertion planned at `offset` moves no user token's column: `offset` itself when nothing but
/// whitespace or a line comment follows on its line; with `may_move_back`, the end of the previous line when only
/// whitespace precedes `offset` on its line and the previous line ends in code: lexed from `code_from` (a body's
/// start) when given (its end can be inside a `//` comment, never a literal: that would reach `offset`'s line),
/// else plain (no `/`, `"`, `'`). None when the insertion must shift what follows it.
fn column_safe_offset(source: &str, offset: usize, may_move_back: bool, code_from: Option<usize>) -> Option<usize> {
    let line_end = source[offset..].find('\n').map_or(source.len(), |i| offset + i);
    let rest = source[offset..line_end].trim();
    if rest.is_empty() || rest.starts_with("//") {
        return Some(offset);
    }
    if !may_move_back {
        return None;
    }
    let line_start = source[..offset].rfind('\n')?;
    if !source[line_start + 1..offset].trim().is_empty() {
        return None;
    }
    let previous_start = source[..line_start].rfind('\n').map_or(0, |i| i + 1);
    let previous = &source[previous_start..line_start];
    let ends_in_code = match code_from {
        Some(from) if from <= line_start => ends_in_code(&source[from..line_start]),
        _ => !previous.contains(['/', '"', '\'']),
    };
    if !ends_in_code {
        return None;
    }
    // Before a `\r` of a CRLF line end.
    Some(if previous.ends_with('\r') { line_start - 1 } else { line_start })
}

/// Whether Rust code that starts in code (not in a literal or comment) ends in code: a small lexer of comments
/// (nested block comments), strings, raw strings (`r#".."#`, `br".."`), char literals and lifetimes. Anything it
/// is unsure of (an unterminated literal) counts as not code.
fn ends_in_code(code: &str) -> bool {
    let b = code.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => match b[i..].iter().position(|&c| c == b'\n') {
                Some(at) => i += at + 1,
                None => return false,
            },
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let mut depth = 1;
                i += 2;
                while depth > 0 {
                    match (b.get(i), b.get(i + 1)) {
                        (None, _) => return false,
                        (Some(b'/'), Some(b'*')) => (depth, i) = (depth + 1, i + 2),
                        (Some(b'*'), Some(b'/')) => (depth, i) = (depth - 1, i + 2),
                        _ => i += 1,
                    }
                }
            }
            b'"' => match skip_string(b, i + 1) {
                Some(end) => i = end,
                None => return false,
            },
            // `r"..."`, `r#"..."#`, `br".."`: no escapes, closed by `"` and as many `#`.
            b'r' if (i == 0 || !is_ident_byte(b[i - 1]) || b[i - 1] == b'b')
                && matches!(b.get(i + 1), Some(b'"' | b'#')) =>
            {
                let hashes = b[i + 1..].iter().take_while(|&&c| c == b'#').count();
                if b.get(i + 1 + hashes) != Some(&b'"') {
                    i += 1 + hashes; // `r#ident`
                    continue;
                }
                let closing: Vec<u8> = std::iter::once(b'"').chain(std::iter::repeat_n(b'#', hashes)).collect();
                match b[i + 2 + hashes..].windows(closing.len()).position(|w| w == closing.as_slice()) {
                    Some(at) => i = i + 2 + hashes + at + closing.len(),
                    None => return false,
                }
            }
            // A char literal (`'x'`, `'\n'`, `'\u{1F600}'`), else a lifetime or a label.
            b'\'' => {
                let len = code[i + 1..].chars().next().map_or(0, char::len_utf8);
                if b.get(i + 1) == Some(&b'\\') {
                    match b[i + 2..].iter().position(|&c| c == b'\'') {
                        Some(at) => i = i + 3 + at,
                        None => return false,
                    }
                } else if len > 0 && b.get(i + 1 + len) == Some(&b'\'') {
                    i += 2 + len;
                } else {
                    i += 1;
                }
            }
            _ => i += 1,
        }
    }
    true
}

/// The index just past the `"` that closes a string whose text starts at `from`.
fn skip_string(b: &[u8], mut from: usize) -> Option<usize> {
    while from < b.len() {
        match b[from] {
            b'\\' => from += 2,
            b'"' => return Some(from + 1),
            _ => from += 1,
        }
    }
    None
}

fn is_ident_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// The 1-based line holding byte `offset` of `source`.
pub fn line_of(source: &str, offset: usize) -> u32 {
    let end = offset.min(source.len());
    source.as_bytes()[..end].iter().filter(|&&b| b == b'\n').count() as u32 + 1
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{SpawnWrap, Wrap};

    fn plan() -> PlanInfo {
        PlanInfo {
            id: "00000000deadbeef".into(),
            table: "/t/x \"q\".functions.json".into(),
            functions: 3,
            dev_profile: false,
        }
    }

    fn site(kind: ProbeKind, index: u32, open: usize, close: usize, ret: Option<&str>) -> ProbeSite {
        ProbeSite {
            index,
            kind,
            line: 1,
            open,
            close,
            return_type: ret.map(str::to_owned),
            errs: ErrCounting::NotAResult,
            body_in_closure: false,
            body_twice: false,
            spawns: Vec::new(),
        }
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
             fn b() {let __calltime_guard = ::calltime_rt::__private::enter_in(&crate::__CALLTIME_STATE, 1); }\n"
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
             #[allow(unreachable_code)] let __calltime_r: Result<u8, E> = loop {}; \
             #[allow(unreachable_code)] return __calltime_r; } \n    Ok(1) }).await \n}\n"
        );
    }

    /// Every line of `src` keeps its code at the same columns in `out` (insertions only after it, or after its
    /// code before a line comment).
    fn keeps_columns(src: &str, out: &str) -> bool {
        src.lines().zip(out.lines()).all(|(a, b)| b.starts_with(a.split("//").next().unwrap_or("").trim_end()))
    }

    #[test]
    fn insertions_go_where_no_user_token_follows_on_the_line() {
        let src =
            "async fn f() -> u8 { // c\n    let x = column!();\n    x\n}\nfn g() -> impl Future<Output = u8> {\n    \
                   async move { 1 }\n}\nfn h() -> u8 { column!() }\n";
        let open = src.find('{').unwrap() + 1;
        let close = src.find("}\nfn g").unwrap();
        let block_open = src.find("async move").unwrap();
        let block_close = src.find("1 }").unwrap() + 3;
        let h_open = src.rfind('{').unwrap() + 1;
        let sites = [
            site(ProbeKind::Async, 0, open, close, Some("u8")),
            site(ProbeKind::AsyncBlock, 1, block_open, block_close, None),
            site(ProbeKind::Sync, 2, h_open, h_open, None),
        ];
        let probes: Vec<Probe> = sites.iter().map(|site| Probe { site, is_root: false }).collect();
        let (out, shifted) = apply_keeping_columns(src, &probes, &plan()).unwrap();
        assert_eq!(shifted, [2], "only h's one-line body shifts:\n{out}");
        let (src_kept, out_kept) = (src.split("fn h").next().unwrap(), out.split("fn h").next().unwrap());
        assert!(keeps_columns(src_kept, out_kept), "{out}");
        assert_eq!(out.lines().count(), src.lines().count());
        assert!(out.contains("    x }).await \n}\n"), "{out}");
        assert!(out.contains("u8> {::calltime_rt::__private::instrument(1, \n    async move { 1 })\n}"), "{out}");
    }

    #[test]
    fn a_previous_line_ending_in_code_is_extended_even_with_literals() {
        // axum handlers end in `format!("..\n", ..)`: their closing text kept shifting the last `}`.
        let lasts = [
            "    format!(\"item {}\\n // no comment\", x)",
            "    \"}\"",
            "    '}'",
            "    r#\"a \" // b\"#",
            "    x /* c */",
            "    f::<'a>('\\'')",
        ];
        for last in lasts {
            let src = format!("async fn f() -> u8 {{\n{last}\n}}\n");
            let open = src.find('{').unwrap() + 1;
            let close = src.rfind('}').unwrap();
            let s = site(ProbeKind::Async, 0, open, close, Some("u8"));
            let (out, shifted) = apply_keeping_columns(&src, &[Probe { site: &s, is_root: false }], &plan()).unwrap();
            assert!(shifted.is_empty(), "{out}");
            assert!(out.ends_with(&format!("{last} }}).await \n}}\n")), "{out}");
        }
    }

    #[test]
    fn a_previous_line_ending_in_a_comment_is_not_extended() {
        for last in ["    x // done", "    \"//\" // done", "    x /* open", "    '/' // c"] {
            let src = format!("async fn f() -> u8 {{\n{last}\n}}\n");
            let open = src.find('{').unwrap() + 1;
            let close = src.rfind('}').unwrap();
            let s = site(ProbeKind::Async, 0, open, close, Some("u8"));
            let (out, shifted) = apply_keeping_columns(&src, &[Probe { site: &s, is_root: false }], &plan()).unwrap();
            assert_eq!(shifted, [0], "{out}");
            assert!(out.ends_with(&format!("{last}\n }}).await }}\n")), "{out}");
        }
    }

    #[test]
    fn a_body_that_fits_a_closure_runs_in_the_runtimes_closure_unless_it_is_a_root() {
        let src = "fn f(b: u8) -> u8 {\n    b + 1\n}\n";
        let (open, close) = (src.find('{').unwrap() + 1, src.rfind('}').unwrap());
        let mut s = site(ProbeKind::Sync, 3, open, close, Some("u8"));
        s.body_in_closure = true;
        let (out, shifted) = apply_keeping_columns(src, &[Probe { site: &s, is_root: false }], &plan()).unwrap();
        assert!(shifted.is_empty(), "{out}");
        assert_eq!(
            out,
            "fn f(b: u8) -> u8 {::calltime_rt::__private::run_quiet_in(&crate::__CALLTIME_STATE, 3, move || { if false { #[allow(unreachable_code)] let \
             __calltime_r: u8 = loop {}; #[allow(unreachable_code)] return __calltime_r; } \n    b + 1 \
             })\n}\n"
        );
        // A root keeps its guard (the invocation starts and ends with it), its body in place.
        let out = apply(src, &[Probe { site: &s, is_root: true }], &plan()).unwrap();
        assert!(out.starts_with("fn f(b: u8) -> u8 {let __calltime_guard = ::calltime_rt::__private::enter_root(3, "));
        assert!(out.ends_with("    b + 1\n}\n"), "{out}");
        // A body whose `Err`s are counted: the counting wrap inside the runtime's closure.
        let src = "fn f(b: u8) -> Result<u8, E> {\n    Ok(b)\n}\n";
        let (open, close) = (src.find('{').unwrap() + 1, src.rfind('}').unwrap());
        let mut s = counting(site(ProbeKind::Sync, 4, open, close, Some("Result<u8, E>")));
        s.body_in_closure = true;
        let out = apply(src, &[Probe { site: &s, is_root: false }], &plan()).unwrap();
        let (counting_open, counting_close) = sync_err_wrap(4, Some("Result<u8, E>"));
        assert_eq!(
            out,
            format!(
                "fn f(b: u8) -> Result<u8, E> {{::calltime_rt::__private::run_quiet_in(&crate::__CALLTIME_STATE, 4, move || \
                 {{{counting_open}\n    \
                 Ok(b){counting_close}}})\n}}\n"
            )
        );
        // In the dev profile the same bodies keep the guard form (the counting wrap stays).
        let dev = PlanInfo { dev_profile: true, ..plan() };
        let out = apply(src, &[Probe { site: &s, is_root: false }], &dev).unwrap();
        assert_eq!(
            out,
            format!(
                "fn f(b: u8) -> Result<u8, E> {{let __calltime_guard = ::calltime_rt::__private::enter_in(&crate::__CALLTIME_STATE, 4);\
                 {counting_open}\n    Ok(b){counting_close}\n}}\n"
            )
        );
    }

    #[test]
    fn a_small_body_that_declares_no_item_is_written_twice_by_the_runtimes_macro() {
        let src = "fn f(b: u8) -> u8 {\n    b + 1\n}\n";
        let (open, close) = (src.find('{').unwrap() + 1, src.rfind('}').unwrap());
        let mut s = site(ProbeKind::Sync, 3, open, close, Some("u8"));
        s.body_in_closure = true;
        s.body_twice = true;
        let (out, shifted) = apply_keeping_columns(src, &[Probe { site: &s, is_root: false }], &plan()).unwrap();
        assert!(shifted.is_empty(), "{out}");
        assert_eq!(
            out,
            "fn f(b: u8) -> u8 {::calltime_rt::__private::quiet_in!(&crate::__CALLTIME_STATE, 3, { if false { \
             #[allow(unreachable_code)] let __calltime_r: u8 = loop {}; #[allow(unreachable_code)] \
             return __calltime_r; } \n    b + 1 })\n}\n"
        );
        // Counted `Err`s: the macro that counts them in its cold copy; the same pin, no counting text.
        let src = "fn f(b: u8) -> Result<u8, E> {\n    Ok(b)\n}\n";
        let (open, close) = (src.find('{').unwrap() + 1, src.rfind('}').unwrap());
        let mut s = counting(site(ProbeKind::Sync, 4, open, close, Some("Result<u8, E>")));
        s.body_in_closure = true;
        s.body_twice = true;
        let out = apply(src, &[Probe { site: &s, is_root: false }], &plan()).unwrap();
        let pin = return_pin(Some("Result<u8, E>"));
        assert_eq!(
            out,
            format!(
                "fn f(b: u8) -> Result<u8, E> {{::calltime_rt::__private::quiet_err_in!(&crate::__CALLTIME_STATE, 4, \
                 {{ {pin}\n    Ok(b) }})\n}}\n"
            )
        );
        // A root, the dev profile and a body past `WRITTEN_TWICE_BODY` keep their forms.
        let out = apply(src, &[Probe { site: &s, is_root: true }], &plan()).unwrap();
        assert!(!out.contains("quiet_err_in!") && out.contains(").run_root_noted_at::<4, _, _, _>("), "{out}");
        assert!(out.contains("::calltime_rt::__private::Outcome(__calltime_result).note(4); })"), "{out}");
        let dev = PlanInfo { dev_profile: true, ..plan() };
        let out = apply(src, &[Probe { site: &s, is_root: false }], &dev).unwrap();
        assert!(!out.contains("quiet_err_in!") && out.contains("enter_in(&crate::__CALLTIME_STATE, 4)"), "{out}");
        let src =
            format!("fn f(b: u8) -> u64 {{\n    let x = b as u64;{}\n    x\n}}\n", " ".repeat(WRITTEN_TWICE_BODY));
        let (open, close) = (src.find('{').unwrap() + 1, src.rfind('}').unwrap());
        let mut s = site(ProbeKind::Sync, 3, open, close, Some("u64"));
        s.body_in_closure = true;
        s.body_twice = true;
        let out = apply(&src, &[Probe { site: &s, is_root: false }], &plan()).unwrap();
        assert!(out.starts_with("fn f(b: u8) -> u64 {::calltime_rt::__private::run_in(&crate::__CALLTIME_STATE, 3, "));
    }

    #[test]
    fn a_body_taking_values_is_written_twice_with_its_parameters_kept_in_place() {
        // Parameters taken by value, `Err`s counted: the body already runs in a closure, so the macro's.
        let src = "fn f(v: String) -> Result<usize, E> {\n    Ok(v.len())\n}\n";
        let (open, close) = (src.find('{').unwrap() + 1, src.rfind('}').unwrap());
        let mut s = counting(site(ProbeKind::Sync, 4, open, close, Some("Result<usize, E>")));
        s.body_twice = true;
        let (out, shifted) = apply_keeping_columns(src, &[Probe { site: &s, is_root: false }], &plan()).unwrap();
        assert!(shifted.is_empty(), "{out}");
        let pin = return_pin(Some("Result<usize, E>"));
        assert_eq!(
            out,
            format!(
                "fn f(v: String) -> Result<usize, E> {{::calltime_rt::__private::quiet_err_in!(\
                 &crate::__CALLTIME_STATE, 4, {{ {pin}\n    Ok(v.len()) }})\n}}\n"
            )
        );
        // No `Err` counted: both copies in place, the guard in the second (no closure, no pin).
        let src = "fn f(v: String) -> usize {\n    v.len()\n}\n";
        let (open, close) = (src.find('{').unwrap() + 1, src.rfind('}').unwrap());
        let mut s = site(ProbeKind::Sync, 3, open, close, None);
        s.body_twice = true;
        let (out, shifted) = apply_keeping_columns(src, &[Probe { site: &s, is_root: false }], &plan()).unwrap();
        assert!(shifted.is_empty(), "{out}");
        assert_eq!(
            out,
            "fn f(v: String) -> usize {::calltime_rt::__private::quiet_guard_in!(&crate::__CALLTIME_STATE, 3, {\n    \
             v.len() })\n}\n"
        );
        // Past `IN_PLACE_BODY` (two copies in place), a root and the dev profile: the guard alone.
        let big = format!("fn f(v: String) -> usize {{\n    v.len(){}\n}}\n", " ".repeat(IN_PLACE_BODY));
        let (open, close) = (big.find('{').unwrap() + 1, big.rfind('}').unwrap());
        let mut b = site(ProbeKind::Sync, 3, open, close, None);
        b.body_twice = true;
        let out = apply(&big, &[Probe { site: &b, is_root: false }], &plan()).unwrap();
        assert!(out.starts_with("fn f(v: String) -> usize {let __calltime_guard = ::calltime_rt::__private::enter_in("));
        let out = apply(src, &[Probe { site: &s, is_root: true }], &plan()).unwrap();
        assert!(!out.contains("quiet_guard_in!") && out.contains("enter_root(3, "), "{out}");
        let dev = PlanInfo { dev_profile: true, ..plan() };
        let out = apply(src, &[Probe { site: &s, is_root: false }], &dev).unwrap();
        assert!(!out.contains("quiet_guard_in!") && out.contains("enter_in(&crate::__CALLTIME_STATE, 3)"), "{out}");
    }

    #[test]
    fn a_big_body_keeps_the_form_that_counts_in_place() {
        let body = format!("\n    let x = b as u64;{}\n    x\n", " ".repeat(IN_PLACE_BODY - 40));
        let src = format!("fn f(b: u8) -> u64 {{{body}}}\n");
        let (open, close) = (src.find('{').unwrap() + 1, src.rfind('}').unwrap());
        assert!(close - open < IN_PLACE_BODY);
        let mut s = site(ProbeKind::Sync, 3, open, close, Some("u64"));
        s.body_in_closure = true;
        let out = apply(&src, &[Probe { site: &s, is_root: false }], &plan()).unwrap();
        assert!(
            out.starts_with("fn f(b: u8) -> u64 {::calltime_rt::__private::run_quiet_in(&crate::__CALLTIME_STATE, 3, "),
            "{out}"
        );
        assert_eq!(out.lines().count(), src.lines().count());
        // From the bound on, the form whose wrapper stays small enough to be inlined.
        let src = format!("fn f(b: u8) -> u64 {{{}{body}}}\n", " ".repeat(40));
        let (open, close) = (src.find('{').unwrap() + 1, src.rfind('}').unwrap());
        assert!(close - open >= IN_PLACE_BODY);
        let mut s = site(ProbeKind::Sync, 3, open, close, Some("u64"));
        s.body_in_closure = true;
        let out = apply(&src, &[Probe { site: &s, is_root: false }], &plan()).unwrap();
        assert!(out.starts_with("fn f(b: u8) -> u64 {::calltime_rt::__private::run_in(&crate::__CALLTIME_STATE, 3, "));
        assert_eq!(out.lines().count(), src.lines().count());
    }

    #[test]
    fn the_state_table_declaration_is_one_line_sized_by_the_plan() {
        let text = states_declaration(&plan());
        assert!(!text.contains('\n'), "{text}");
        assert!(text.contains("static __CALLTIME_STATE: ::calltime_rt::__private::States<3> ="), "{text}");
    }

    fn counting(mut site: ProbeSite) -> ProbeSite {
        site.errs = ErrCounting::Counted;
        site
    }

    #[test]
    fn result_bodies_pass_their_result_to_the_runtime_before_returning() {
        let src = "fn f() -> Result<u8, E> {\n    g()?;\n    Ok(1)\n}\n";
        let open = src.find('{').unwrap() + 1;
        let close = src.rfind('}').unwrap();
        let s = counting(site(ProbeKind::Sync, 4, open, close, Some("Result<u8, E>")));
        let (out, shifted) = apply_keeping_columns(src, &[Probe { site: &s, is_root: false }], &plan()).unwrap();
        assert!(shifted.is_empty(), "{out}");
        assert_eq!(
            out,
            "fn f() -> Result<u8, E> {let __calltime_guard = ::calltime_rt::__private::enter_in(&crate::__CALLTIME_STATE, 4); \
             let __calltime_body = move || { if false { #[allow(unreachable_code)] let __calltime_r: \
             Result<u8, E> = loop {}; #[allow(unreachable_code)] return __calltime_r; } \n    g()?;\n    \
             Ok(1) }; if __calltime_guard.records() { match ::calltime_rt::__private::call_once(__calltime_body) { \
             __calltime_result => { { #[allow(unused_imports)] use ::calltime_rt::__private::NotAResult as \
             _; ::calltime_rt::__private::Outcome(&__calltime_result).note(4); } __calltime_result } } } else { \
             ::calltime_rt::__private::call_once(__calltime_body) } \n}\n"
        );
        // A root: the body in a closure, run at once when the call is nested in an invocation that records it not,
        // else by the runtime's out-of-line call holding the guard, whose note sees a recorded call's result.
        let out = apply(src, &[Probe { site: &s, is_root: true }], &plan()).unwrap();
        let plan_info = plan_info_expr(&plan());
        assert_eq!(
            out,
            format!(
                "fn f() -> Result<u8, E> {{let __calltime_body = move || {{ if false {{ #[allow(unreachable_code)] \
                 let __calltime_r: Result<u8, E> = loop {{}}; #[allow(unreachable_code)] return __calltime_r; }} \n    \
                 g()?;\n    Ok(1) }}; if ::calltime_rt::__private::root_is_nested_quiet(&crate::__CALLTIME_STATE, 4) \
                 {{ ::calltime_rt::__private::call_once(__calltime_body) }} else {{ \
                 (&crate::__CALLTIME_STATE).run_root_noted_at::<4, _, _, _>({plan_info}, __calltime_body, \
                 |__calltime_result| {{ #[allow(unused_imports)] use ::calltime_rt::__private::NotAResult as _; \
                 ::calltime_rt::__private::Outcome(__calltime_result).note(4); }}) }} \n}}\n"
            )
        );
        // The dev profile: one path, every result noted (the note leaves a call that records nothing alone); a
        // root too, after its guard.
        let dev = PlanInfo { dev_profile: true, ..plan() };
        let out = apply(src, &[Probe { site: &s, is_root: false }], &dev).unwrap();
        assert!(out.contains("; match ::calltime_rt::__private::call_once(move || { if false"), "{out}");
        let out = apply(src, &[Probe { site: &s, is_root: true }], &dev).unwrap();
        assert!(
            out.starts_with("fn f() -> Result<u8, E> {let __calltime_guard = ::calltime_rt::__private::enter_root(4, ")
        );
        assert!(out.contains("; match ::calltime_rt::__private::call_once(move || { if false"), "{out}");
        // Async: an inner async block, its output noted inside the wrapper.
        let src = "async fn f() -> Result<u8, E> {\n    Ok(1)\n}\n";
        let s = counting(site(ProbeKind::Async, 2, src.find('{').unwrap() + 1, src.rfind('}').unwrap(), Some("R")));
        let out = apply(src, &[Probe { site: &s, is_root: false }], &plan()).unwrap();
        assert!(out.contains("async move { if false"), "{out}");
        assert!(out.contains("let __calltime_result = async move { if false"), "{out}");
        assert!(
            out.ends_with(
                "Ok(1) }.await; { #[allow(unused_imports)] use ::calltime_rt::__private::NotAResult as _; \
             ::calltime_rt::__private::Outcome(&__calltime_result).note(2); } __calltime_result }).await \n}\n"
            ),
            "{out}"
        );
        assert_eq!(out.lines().count(), src.lines().count());
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
    fn spawned_closures_and_futures_are_wrapped_in_place() {
        let src = "fn f() {\n    rayon::join(|s| a(s), f);\n    tokio::spawn(run(1));\n}\n";
        let mut s = site(ProbeKind::Sync, 0, src.find('{').unwrap() + 1, 0, None);
        let range = |text: &str| (src.find(text).unwrap(), src.find(text).unwrap() + text.len());
        let body = src.find("a(s)").unwrap();
        let wraps = [("|s| a(s)", Wrap::ClosureLiteral { body }), ("f", Wrap::ClosureValue), ("run(1)", Wrap::Future)];
        for (text, wrap) in wraps {
            let (open, close) =
                if text == "f" { (src.find(" f)").unwrap() + 1, src.find(" f)").unwrap() + 2) } else { range(text) };
            s.spawns.push(SpawnWrap { open, close, wrap });
        }
        let (out, shifted) = apply_keeping_columns(src, &[Probe { site: &s, is_root: false }], &plan()).unwrap();
        assert_eq!(shifted, [0]);
        assert!(
            out.contains(
                "rayon::join({ let __calltime_ticket = ::calltime_rt::__private::ticket(); |s| \
                 __calltime_ticket.run(|| a(s)) }, ::calltime_rt::__private::adopt(f));\n    \
                 tokio::spawn(::calltime_rt::__private::adopt_future(run(1)));"
            ),
            "{out}"
        );
        assert_eq!(out.lines().count(), src.lines().count());
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
