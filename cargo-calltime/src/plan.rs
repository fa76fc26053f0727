//! Stage 4 (leaf module of plain types): the instrumentation plan, which functions within `--depth` levels of the
//! root get a probe, with their dense indices and the byte offsets where the rewrite inserts each probe; and the
//! typed options that ask for one ([`PlanOptions`]). The planning itself is [`crate::analysis::make_plan`].

use std::collections::BTreeSet;
use std::fmt;
use std::path::PathBuf;

use regex::Regex;
use serde::Serialize;

use crate::error::UserError;
use crate::trace::{FunctionInfo, FunctionTable};

/// What to plan, validated: built once from the command line by the caller.
#[derive(Debug, Clone)]
pub struct PlanOptions {
    /// The `--root` arguments as given (at least one).
    pub roots: Vec<String>,
    /// Levels of the call graph to instrument, the root being level 1 (at least 1).
    pub depth: u32,
    /// `--filter`: only functions whose defining path matches get a probe (the root always does).
    pub filter: Option<Regex>,
    pub exclusions: Exclusions,
    /// `--probe-trivial`: probe functions that cost less than their probe too.
    pub probe_trivial: bool,
    /// `--all-functions`: probe every function of the selected packages, reached or not.
    pub all_functions: bool,
}

/// Functions that are reached but get no probe.
#[derive(Debug, Clone, Default)]
pub struct Exclusions {
    /// `--exclude`: matched against the defining path and the rustc-style one.
    pub pattern: Option<Regex>,
    /// `--exclude-fast`: the functions earlier runs found too fast to probe; `None` when not asked for.
    pub fast: Option<FastFunctions>,
}

/// Functions remembered as too fast to probe (`<target>/calltime/fast-functions.txt`), each by its exact identity:
/// rustc-style path, file and line, so that one fast `<Value as From<X>>::from` leaves out that impl only, not
/// every `From` impl of `Value` (whose paths read the same). Entries of older files name a path alone.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FastFunctions {
    /// (path, file, line).
    pub exact: BTreeSet<(String, String, u32)>,
    /// Paths alone (files written before identities were remembered): every function with that path.
    pub by_path: BTreeSet<String>,
}

impl FastFunctions {
    /// One remembered line: `<path> @ <file>:<line>`, or a bare path.
    pub fn insert_line(&mut self, line: &str) {
        let identity = line.rsplit_once(" @ ").and_then(|(path, place)| {
            let (file, line) = place.rsplit_once(':')?;
            Some((path.to_owned(), file.to_owned(), line.parse().ok()?))
        });
        match identity {
            Some(identity) => self.exact.insert(identity),
            None => self.by_path.insert(line.to_owned()),
        };
    }

    /// The remembered line of a function: `<path> @ <file>:<line>`.
    pub fn line_of(path: &str, file: &str, line: u32) -> String {
        format!("{path} @ {file}:{line}")
    }

    pub fn len(&self) -> usize {
        self.exact.len() + self.by_path.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the function with these paths, defined at `file:line`, is remembered.
    pub fn contains(&self, match_path: &str, path: &str, (file, line): (&str, u32)) -> bool {
        self.exact.contains(&(path.to_owned(), file.to_owned(), line))
            || self.by_path.contains(path)
            || self.by_path.contains(match_path)
    }
}

impl PlanOptions {
    /// Options for `roots` with `depth` levels and nothing else set; says what is wrong with either.
    pub fn new(roots: Vec<String>, depth: u32) -> Result<PlanOptions, UserError> {
        if roots.is_empty() {
            return Err(
                UserError::new("no --root given").hint("name the function to time, e.g. --root myapp::server::handle")
            );
        }
        if depth == 0 {
            return Err(UserError::new("--depth 0 instruments nothing")
                .hint("--depth 1 probes only the root, --depth 5 five levels of calls"));
        }
        Ok(PlanOptions {
            roots,
            depth,
            filter: None,
            exclusions: Exclusions::default(),
            probe_trivial: false,
            all_functions: false,
        })
    }
}

/// Compiles the value of a path regex flag (`--filter`, `--exclude`), or says what is wrong with it.
pub fn path_regex(flag: &str, pattern: &str) -> Result<Regex, UserError> {
    Regex::new(pattern).map_err(|err| {
        // The regex crate's message without its multi-line caret diagram: `unclosed group`.
        let text = err.to_string();
        let last = text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or(&text);
        let detail = last.trim().trim_start_matches("error: ");
        UserError::new(format!("invalid {flag} regex `{pattern}`: {detail}"))
            .hint("the syntax is the regex crate's (https://docs.rs/regex)")
    })
}

impl Exclusions {
    /// Why a function with these paths, defined at `place` (file, line), is excluded, if it is.
    pub fn reason(&self, match_path: &str, path: &str, place: (&str, u32)) -> Option<SkipReason> {
        if self.pattern.as_ref().is_some_and(|re| re.is_match(match_path) || re.is_match(path)) {
            return Some(SkipReason::Excluded);
        }
        let fast = self.fast.as_ref()?;
        fast.contains(match_path, path, place).then_some(SkipReason::ExcludedFast)
    }
}

/// Everything the later stages need to know about what will be instrumented.
#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    /// The `--root` arguments as given.
    pub root_args: Vec<String>,
    pub depth: u32,
    /// `--filter` and `--exclude` as given.
    pub filter: Option<String>,
    pub exclude: Option<String>,
    /// Every function reached within `depth` levels, in a deterministic order (level, then path).
    pub functions: Vec<PlannedFunction>,
    /// Static call edges between reached functions, as positions in `functions`.
    pub edges: Vec<Edge>,
    /// Call sites that could not be resolved, or were resolved by over-approximation.
    pub unresolved: Vec<CallSiteNote>,
    /// Files that could not be read or parsed, and anything else the user should know (the caller prints them):
    /// the analysis's own first (those of [`crate::analysis::Analysis::warnings`]), then the planning's (a
    /// `--filter` that leaves only the roots probed). A warning may carry `\n  hint: ..` lines.
    pub warnings: Vec<String>,
    /// How much source the analysis read, for the caller's status line.
    pub analysed: AnalysedCounts,
    /// `#[global_allocator]` statics of the workspace (compiled in, not test-only): the copy wraps them to count
    /// allocations; with none, the copy declares the counting allocator in the executable's crate root.
    pub global_allocators: Vec<GlobalAllocator>,
}

/// Figures of one analysis: what the index holds.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct AnalysedCounts {
    pub files: usize,
    pub lines: usize,
    pub functions: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct PlannedFunction {
    /// rustc-style defining path: `krate::module::Type::method`, `<krate::T as krate::Trait>::m`.
    pub path: String,
    /// Short form for views: `Type::method`, `module::func`.
    pub display: String,
    /// Absolute path of the source file in the user's workspace.
    pub file: PathBuf,
    /// 1-based line of the `fn` item.
    pub line: u32,
    /// 1 for the root, 2 for what it calls, ...
    pub level: u32,
    /// Manifest of the package whose target holds the function (the rewrite adds calltime-rt to it).
    pub manifest_path: PathBuf,
    pub is_root: bool,
    /// Present when the function gets a probe.
    pub probe: Option<ProbeSite>,
    /// Why a reached function gets no probe (filter, const fn, macro-generated, ...).
    pub skip_reason: Option<SkipReason>,
}

/// Why a function gets no probe. [`SkipReason::code`] is stable (the JSON's `skip_code`); the text is for people.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkipReason {
    /// The defining path does not match `--filter`.
    FilteredOut,
    /// The path matches `--exclude`.
    Excluded,
    /// Earlier runs found it too fast to probe (`--exclude-fast`).
    ExcludedFast,
    /// No loop, few statements and only cheap calls: it costs less than its probe.
    Trivial,
    /// One call passing on to functions that are probed or trivial: their probes measure what its would.
    Forwarder,
    /// Returns a closure or an `impl Trait` value (a parser, an iterator) built without a loop of its own, or only
    /// stores its arguments in the struct it returns (`Parser::map -> Map<..>`, a constructor): its probe would time
    /// the building, not the work that runs when the value is used.
    BuildsForLater,
    ConstFn,
    Naked,
    ExternBlock,
    TestFunction,
    TestOnly,
    /// Written inside the tokens of an item macro invocation: the macro's name.
    GeneratedByMacro(String),
    /// Returns a future without an `async` tail block.
    FutureWithoutAsyncTail,
    NoBody,
    /// Its package is not selected: the package's name.
    PackageNotSelected(String),
    /// Its file belongs to several crates and the first copy took the probe: that copy's path.
    SameSource(String),
    /// Compiled out for the active features and the host target: the `#[cfg(..)]` that is false, as written.
    CfgDisabled(String),
}

impl SkipReason {
    /// A stable snake_case code for machines.
    pub fn code(&self) -> &'static str {
        match self {
            SkipReason::FilteredOut => "filtered_out",
            SkipReason::Excluded => "excluded",
            SkipReason::ExcludedFast => "excluded_fast",
            SkipReason::Trivial => "trivial",
            SkipReason::Forwarder => "forwarder",
            SkipReason::BuildsForLater => "builds_for_later",
            SkipReason::ConstFn => "const_fn",
            SkipReason::Naked => "naked",
            SkipReason::ExternBlock => "extern_block",
            SkipReason::TestFunction => "test_function",
            SkipReason::TestOnly => "test_only",
            SkipReason::GeneratedByMacro(_) => "generated_by_macro",
            SkipReason::FutureWithoutAsyncTail => "future_without_async_tail",
            SkipReason::NoBody => "no_body",
            SkipReason::PackageNotSelected(_) => "package_not_selected",
            SkipReason::SameSource(_) => "same_source",
            SkipReason::CfgDisabled(_) => "cfg_disabled",
        }
    }
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SkipReason::FilteredOut => f.write_str("filtered out by --filter"),
            SkipReason::Excluded => f.write_str("excluded by --exclude"),
            SkipReason::ExcludedFast => f.write_str("excluded by --exclude-fast"),
            SkipReason::Trivial => {
                f.write_str("trivial: no loops and no costly calls (pass --probe-trivial to probe it)")
            }
            SkipReason::Forwarder => f.write_str(
                "forwarder: one call to probed or trivial functions; its own few instructions count in its caller's \
                 self time (pass --probe-trivial to probe it)",
            ),
            SkipReason::BuildsForLater => f.write_str(
                "only builds a closure, an `impl Trait` value or a struct of its arguments: a probe would time its \
                 building, not the work done when it is used, which its callers' times hold (pass --probe-trivial to \
                 probe it)",
            ),
            SkipReason::ConstFn => f.write_str("const fn"),
            SkipReason::Naked => f.write_str("#[naked] function"),
            SkipReason::ExternBlock => f.write_str("declared in an extern block"),
            SkipReason::TestFunction => f.write_str("#[test] function"),
            SkipReason::TestOnly => f.write_str("compiled only for tests (#[cfg(test)])"),
            SkipReason::GeneratedByMacro(name) => write!(f, "generated by macro `{name}!`"),
            SkipReason::FutureWithoutAsyncTail => {
                f.write_str("returns a future without an `async` tail block: a probe would time only its creation")
            }
            SkipReason::NoBody => f.write_str("has no body"),
            SkipReason::PackageNotSelected(package) => write!(f, "in package `{package}`, which -p did not select"),
            SkipReason::SameSource(first) => {
                write!(f, "same source as `{first}` (the file belongs to several crates)")
            }
            SkipReason::CfgDisabled(cfg) => {
                write!(f, "compiled out: #[cfg({cfg})] is false for the active features and the host target")
            }
        }
    }
}

impl Serialize for SkipReason {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// Where and how the rewrite inserts a probe. Offsets are byte offsets into the file as it is on disk
/// (a BOM or shebang line that syn strips is counted).
#[derive(Debug, Clone, Serialize)]
pub struct ProbeSite {
    /// Dense index 0..N over the instrumented functions, assigned deterministically.
    pub index: u32,
    pub kind: ProbeKind,
    /// 1-based line of `open` in the file.
    pub line: u32,
    /// Sync/Async: just after the body's `{` and any inner `#![...]` attributes.
    /// AsyncBlock: the offset of the `async` keyword of the tail `async move { .. }` block.
    pub open: usize,
    /// Async: the offset of the body's closing `}`. AsyncBlock: just after the tail block's closing `}`.
    /// Sync: the offset of the body's closing `}` when the body is wrapped (`errs` counted, `body_in_closure`),
    /// else unused (equal to `open`).
    pub close: usize,
    /// The declared return type as written (`impl Trait` erased to `_`), for async bodies and for wrapped sync
    /// bodies; `None` for `()`.
    pub return_type: Option<String>,
    /// Whether the rewrite counts the function's `Err` returns (not part of the plan's JSON).
    #[serde(skip)]
    pub errs: ErrCounting,
    /// A sync body the rewrite may wrap in `run(index, move || { .. })` when the function is not a root, so that
    /// a quiet call runs the body with no guard (calltime-rt `probe::run`; a body whose `Err`s are counted is
    /// wrapped as well, inside it): it is not `#[track_caller]` and does not return `!`, and every parameter is a reference, a raw pointer or a primitive
    /// (moving them into the closure changes no drop order). `close` is then the body's closing `}` (not part of
    /// the plan's JSON).
    #[serde(skip)]
    pub body_in_closure: bool,
    /// A body that declares no item (but `use`, `const`, `type`, and nested functions that qualify themselves) nor a
    /// statement macro that may declare one (the file's own `macro_rules!` that declare nothing may stand), and
    /// returns no `impl Trait`, so the rewrite may write it twice: in place for quiet calls, and for the others in
    /// a closure (calltime-rt's `quiet_in!`, `quiet_err_in!`: a `body_in_closure` body, or one whose `Err`s are
    /// counted) or in place under a guard (`quiet_guard_in!`). `close` is then the body's closing `}` (not part of
    /// the plan's JSON).
    #[serde(skip)]
    pub body_twice: bool,
    /// Arguments of spawn calls in the body that the rewrite wraps so the work they do elsewhere is adopted
    /// (`analysis::spawns`; not part of the plan's JSON).
    #[serde(skip)]
    pub spawns: Vec<SpawnWrap>,
}

/// An argument of a spawn call to wrap (byte offsets in the file as on disk).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpawnWrap {
    pub open: usize,
    pub close: usize,
    pub wrap: Wrap,
}

/// How a spawned argument is wrapped (calltime-rt/src/adopt.rs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wrap {
    /// A closure written at the spawn, whose body starts at `body`: `{ let t = ticket(); |args| t.run(|| body) }`,
    /// so the spawning function still infers its parameters' types.
    ClosureLiteral { body: usize },
    /// A closure with no parameter passed by name: `adopt(f)`.
    ClosureValue,
    /// A future: `adopt_future(fut)`.
    Future,
    /// A rayon parallel iterator's chain, up to the call that consumes it: `({ let __calltime_par =
    /// &par_context(); chain })`, so its closures can borrow the parallel call's context.
    ParallelChain,
    /// A closure written in such a chain: `|args| __calltime_par.run(|| body)`; with a declared return type, inside
    /// its block's braces.
    ParallelItem { body: usize, typed: bool },
    /// A function passed by name in such a chain, called by rayon with `arity` arguments: `|a0, ..| __calltime_par
    /// .run(|| f(a0, ..))`, so its calls on the workers run in the parallel call's parts.
    ParallelNamed { arity: usize },
}

impl SpawnWrap {
    /// The text insertions `(offset, text)` that wrap the argument, in order for equal offsets.
    pub fn insertions(&self) -> Vec<(usize, String)> {
        const RT: &str = "::calltime_rt::__private";
        match self.wrap {
            Wrap::ClosureLiteral { body } => vec![
                (self.open, format!("{{ let __calltime_ticket = {RT}::ticket(); ")),
                (body, "__calltime_ticket.run(|| ".to_owned()),
                (self.close, ")".to_owned()),
                (self.close, " }".to_owned()),
            ],
            Wrap::ClosureValue => vec![(self.open, format!("{RT}::adopt(")), (self.close, ")".to_owned())],
            Wrap::Future => vec![(self.open, format!("{RT}::adopt_future(")), (self.close, ")".to_owned())],
            Wrap::ParallelChain => vec![
                (self.open, format!("({{ let __calltime_par = &{RT}::par_context(); ")),
                (self.close, " })".to_owned()),
            ],
            Wrap::ParallelItem { body, typed: false } => {
                vec![(body, "__calltime_par.run(|| ".to_owned()), (self.close, ")".to_owned())]
            }
            Wrap::ParallelItem { body, typed: true } => {
                vec![(body + 1, "__calltime_par.run(|| {".to_owned()), (self.close - 1, "})".to_owned())]
            }
            Wrap::ParallelNamed { arity } => {
                let params: Vec<String> = (0..arity).map(|i| format!("__calltime_a{i}")).collect();
                let params = params.join(", ");
                vec![
                    (self.open, format!("|{params}| __calltime_par.run(|| ")),
                    (self.close, format!("({params})")),
                    (self.close, ")".to_owned()),
                ]
            }
        }
    }

    /// How many of [`SpawnWrap::insertions`] open the wrap (the first ones); the others close it.
    pub fn openings(&self) -> usize {
        match self.wrap {
            Wrap::ClosureLiteral { .. } => 2,
            _ => 1,
        }
    }
}

/// Whether a probed function's `Err` returns are counted: it returns a type whose path ends in `Result`
/// (`io::Result<T>`, an alias `ParseResult`), decided on syntax alone.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ErrCounting {
    /// It does not return a `*Result` (or is an async block probe).
    #[default]
    NotAResult,
    /// Its body is wrapped so that its result passes a probe before it returns.
    Counted,
    /// `#[track_caller]`: wrapping the body in a closure would change the caller location it reports, so its
    /// `Err` returns are not counted.
    TrackCaller,
}

/// A `static` marked `#[global_allocator]`: where its type and its initialiser are, so the copy can wrap both in
/// the runtime's counting allocator (byte offsets into the file as on disk, like a `ProbeSite`'s).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct AllocatorSite {
    pub line: u32,
    pub ty: (usize, usize),
    pub expr: (usize, usize),
}

/// The program's own global allocator, found by the analysis (the copy wraps it instead of installing its own).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GlobalAllocator {
    /// Absolute path of the file that declares it, and of its package's manifest.
    pub file: PathBuf,
    pub manifest_path: PathBuf,
    pub site: AllocatorSite,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProbeKind {
    /// A guard declared first in the body.
    Sync,
    /// `async fn`: the body is wrapped in the runtime's future wrapper.
    Async,
    /// `fn f() -> impl Future { async move { .. } }`: the tail block is wrapped.
    AsyncBlock,
}

#[derive(Debug, Clone, Serialize)]
pub struct Edge {
    pub from: usize,
    pub to: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct CallSiteNote {
    /// The `path` of the function holding the call.
    pub function: String,
    pub file: PathBuf,
    pub line: u32,
    /// The call as written, e.g. `x.parse(..)`.
    pub call: String,
    /// `unresolved`, or `over-approximated: N candidates by name and arity`.
    pub note: String,
}

impl Plan {
    /// The functions that get a probe, in index order.
    pub fn instrumented(&self) -> impl Iterator<Item = (&PlannedFunction, &ProbeSite)> {
        let mut v: Vec<_> = self.functions.iter().filter_map(|f| f.probe.as_ref().map(|p| (f, p))).collect();
        v.sort_by_key(|(_, p)| p.index);
        v.into_iter()
    }

    /// The side table that names the runtime's indices.
    pub fn function_table(&self, plan_id: &str) -> FunctionTable {
        FunctionTable {
            version: 1,
            plan_id: plan_id.to_owned(),
            roots: self.root_args.clone(),
            depth: self.depth,
            filter: self.filter.clone(),
            functions: self
                .instrumented()
                .map(|(f, p)| FunctionInfo {
                    index: p.index,
                    path: f.path.clone(),
                    display: f.display.clone(),
                    file: f.file.display().to_string(),
                    line: f.line,
                    root: f.is_root,
                })
                .collect(),
            builders: self
                .functions
                .iter()
                .filter(|f| f.skip_reason == Some(SkipReason::BuildsForLater))
                .map(|f| f.display.clone())
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skip_codes_are_distinct_snake_case() {
        let all = [
            SkipReason::FilteredOut,
            SkipReason::Excluded,
            SkipReason::ExcludedFast,
            SkipReason::Trivial,
            SkipReason::Forwarder,
            SkipReason::BuildsForLater,
            SkipReason::ConstFn,
            SkipReason::Naked,
            SkipReason::ExternBlock,
            SkipReason::TestFunction,
            SkipReason::TestOnly,
            SkipReason::GeneratedByMacro("m".into()),
            SkipReason::FutureWithoutAsyncTail,
            SkipReason::NoBody,
            SkipReason::PackageNotSelected("p".into()),
            SkipReason::SameSource("k::f".into()),
            SkipReason::CfgDisabled("unix".into()),
        ];
        let mut codes: Vec<&str> = all.iter().map(SkipReason::code).collect();
        assert!(codes.iter().all(|c| c.chars().all(|ch| ch.is_ascii_lowercase() || ch == '_')), "{codes:?}");
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes.len(), all.len());
    }

    #[test]
    fn exclusions_say_which_flag_left_a_function_out() {
        let mut fast = FastFunctions::default();
        fast.insert_line("k::fast");
        fast.insert_line("<k::Value as core::convert::From<u8>>::from @ /ws/k/src/value.rs:40");
        let exclusions = Exclusions { pattern: Some(path_regex("--exclude", "^k::slow$").unwrap()), fast: Some(fast) };
        let at = ("/ws/k/src/lib.rs", 1);
        assert_eq!(exclusions.reason("k::slow", "k::slow", at), Some(SkipReason::Excluded));
        assert_eq!(exclusions.reason("k::fast", "k::fast", at), Some(SkipReason::ExcludedFast));
        assert_eq!(exclusions.reason("k::other", "k::other", at), None);
        // Remembered by identity: that impl only, not the other `From` impls whose path reads the same.
        let from = "<k::Value as core::convert::From<u8>>::from";
        let value_rs = "/ws/k/src/value.rs";
        assert_eq!(exclusions.reason("k::Value::from", from, (value_rs, 40)), Some(SkipReason::ExcludedFast));
        assert_eq!(exclusions.reason("k::Value::from", from, (value_rs, 52)), None);
    }

    #[test]
    fn options_are_validated_once_with_hints() {
        let depth = PlanOptions::new(vec!["main".into()], 0).unwrap_err();
        assert_eq!(depth.message, "--depth 0 instruments nothing");
        assert_eq!(depth.hints.len(), 1);
        let regex = path_regex("--filter", "(").unwrap_err();
        assert_eq!(regex.message, "invalid --filter regex `(`: unclosed group");
        assert!(PlanOptions::new(Vec::new(), 3).is_err());
    }
}
