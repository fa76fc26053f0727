//! Command-line interface: every flag of every subcommand, in one place.
//!
//! Cargo runs a subcommand as `cargo-calltime calltime ARGS...`; [`parse_from_env`] drops that extra word so the
//! binary works both ways. Cargo's global flags (`-v`, `-q`, `--color`, `--manifest-path`, `--offline`, `--locked`,
//! `--frozen`) are clap global arguments: accepted before or after a subcommand's name, as cargo accepts them.
//! These are the raw flags; `commands` turns them into each stage's typed options, validating each flag once.

use std::path::PathBuf;

use clap::builder::PossibleValue;
use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};

#[derive(Debug, Parser)]
#[command(
    name = "cargo calltime",
    bin_name = "cargo calltime",
    version,
    about = "Per-invocation call-time trees for one function of your workspace, with no hand annotations",
    subcommand_negates_reqs = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Analyse, rewrite a shadow copy, build it, run it and show the trees (the default command).
    #[command(flatten)]
    pub run: RunArgs,
    // (After the run flags: clap lists help headings in the order their first flag is declared, and the tool's own
    // flags come before cargo's.)
    #[command(flatten)]
    pub global: GlobalArgs,
}

/// Help headings: the tool's own flags first, then cargo's, grouped as `cargo build --help` groups them.
mod heading {
    pub const PROBES: &str = "Probes";
    pub const RECORDING: &str = "Recording";
    pub const STORE: &str = "Run Store";
    pub const OUTPUT: &str = "Output";
    pub const TARGET: &str = "Target Selection";
    pub const PACKAGE: &str = "Package Selection";
    pub const FEATURES: &str = "Feature Selection";
    pub const COMPILATION: &str = "Compilation Options";
    pub const MANIFEST: &str = "Manifest Options";
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print the static call graph and the instrumentation plan without building anything.
    Graph(GraphArgs),
    /// Build the instrumented target and print its path as the last line of stdout.
    Build(BuildArgs),
    /// Render a saved trace (the last run's by default) without building anything.
    Report(ReportArgs),
    /// Compare two traces (or two directories of traces) by call path, for CI pull-request comments.
    Diff(DiffArgs),
    /// List the runs kept in the run store (every `cargo calltime` run and `report --import`), chart them.
    History(HistoryArgs),
    /// Switch recording of a running instrumented program on or off, or change its sampling, without a restart.
    Ctl(CtlArgs),
}

/// Cargo's global flags, with cargo's meanings: given before or after the subcommand's name.
#[derive(Debug, Clone, Default, Args)]
pub struct GlobalArgs {
    /// Path to Cargo.toml.
    #[arg(long, value_name = "PATH", global = true, help_heading = heading::MANIFEST)]
    pub manifest_path: Option<PathBuf>,
    /// Run without accessing the network.
    #[arg(long, global = true, help_heading = heading::MANIFEST)]
    pub offline: bool,
    /// Assert that Cargo.lock will remain unchanged.
    #[arg(long, global = true, help_heading = heading::MANIFEST)]
    pub locked: bool,
    /// Equivalent to --locked and --offline.
    #[arg(long, global = true, help_heading = heading::MANIFEST)]
    pub frozen: bool,
    /// Use verbose output (-vv very verbose); shows cargo's build output.
    // (No heading: with `-h` at the top, as cargo lists them; `None` stops the heading of the flags before.)
    #[arg(short = 'v', long = "verbose", action = clap::ArgAction::Count, global = true, help_heading = None::<&str>)]
    pub verbose: u8,
    /// Do not print progress messages.
    #[arg(short = 'q', long = "quiet", global = true, help_heading = None::<&str>)]
    pub quiet: bool,
    /// Coloring of every output (reports, progress, logs): auto, always, never.
    #[arg(long, value_name = "WHEN", global = true, help_heading = None::<&str>)]
    pub color: Option<ColorChoice>,
}

/// Cargo's package and feature selection, with cargo's meanings.
#[derive(Debug, Clone, Default, Args)]
pub struct CargoArgs {
    /// Package(s) to analyse and instrument (default: the whole workspace).
    #[arg(short = 'p', long = "package", value_name = "SPEC", help_heading = heading::PACKAGE)]
    pub package: Vec<String>,
    /// Space or comma separated list of features to activate.
    #[arg(short = 'F', long, value_name = "FEATURES", help_heading = heading::FEATURES)]
    pub features: Vec<String>,
    /// Activate all available features.
    #[arg(long, help_heading = heading::FEATURES)]
    pub all_features: bool,
    /// Do not activate the `default` feature.
    #[arg(long, help_heading = heading::FEATURES)]
    pub no_default_features: bool,
    /// Directory for all generated artifacts.
    #[arg(long, value_name = "DIRECTORY", env = "CARGO_TARGET_DIR", help_heading = heading::COMPILATION)]
    pub target_dir: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

/// Which functions get a probe.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = heading::PROBES)]
pub struct PlanArgs {
    /// The function whose invocations are recorded, matched by `::`-suffix (`handle`, `server::handle`,
    /// `myapp::server::handle`). Repeatable.
    #[arg(long, value_name = "PATH", required = true)]
    pub root: Vec<String>,
    /// How many levels of the static call graph to instrument; the root is level 1.
    #[arg(long, default_value_t = 5, value_name = "N", allow_negative_numbers = true, value_parser = depth_value)]
    pub depth: u32,
    /// Regex on the defining path (`krate::module::Type::method`) of the functions that get a probe; the root
    /// always does, and the traversal goes on through functions it rejects.
    #[arg(long, value_name = "REGEX")]
    pub filter: Option<String>,
    /// Regex on the paths of functions that get no probe even though they are reached and match --filter: a
    /// function is left out when the regex matches its defining path (`krate::module::Type::method`) or its
    /// rustc-style one (`<krate::Type as krate::Trait>::method`). The root always gets a probe and the traversal
    /// goes on through excluded functions. For fast functions called very often, whose probes cost about as much
    /// as they measure: the note after a run names them and gives a value.
    #[arg(long, value_name = "REGEX")]
    pub exclude: Option<String>,
    /// Also leave out every function that earlier runs of this workspace found too fast to probe (the ones each
    /// run's note names; they are remembered in `<target>/calltime/fast-functions.txt`, which may be edited or
    /// deleted).
    #[arg(long)]
    pub exclude_fast: bool,
    /// Probe every function of the selected packages, reached from the roots or not (level 0 when not), trivial
    /// ones included, and list the static edges of all of them: for checking the static graph against a run
    /// (docs/graph-json.md).
    #[arg(long)]
    pub all_functions: bool,
    /// Probe trivial functions too: by default a function whose body has no loop, at most a few statements and
    /// calls only trivial functions or constant-time std accessors (`len`, `get`, `unwrap`, ...) gets no probe,
    /// since it costs less than the probe itself; nor does a forwarder, one call to functions that are probed or
    /// trivial (`fn peek(&mut self) { self.read.peek() }`), whose probe would measure what theirs do, nor a
    /// function returning a closure or `impl Trait` built without a loop (a parser combinator), whose probe would
    /// time the building, not the work done when the value is used.
    #[arg(long)]
    pub probe_trivial: bool,
}

/// Which target to build and run, and how.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = heading::TARGET)]
pub struct TargetArgs {
    /// Name of the bin target to run.
    #[arg(long, value_name = "NAME")]
    pub bin: Option<String>,
    /// Name of the example target to run.
    #[arg(long, value_name = "NAME")]
    pub example: Option<String>,
    /// Name of the integration test target to run.
    #[arg(long, value_name = "NAME")]
    pub test: Option<String>,
    /// Name of the bench target to run.
    #[arg(long, value_name = "NAME")]
    pub bench: Option<String>,
    /// Run the library's unit tests (`-- TESTNAME` picks tests by name, as with `cargo test --lib`).
    #[arg(long)]
    pub lib: bool,
    /// Build artifacts in release mode, with optimizations.
    #[arg(short = 'r', long, help_heading = heading::COMPILATION)]
    pub release: bool,
    /// Build artifacts with the specified profile.
    #[arg(long, value_name = "PROFILE-NAME", help_heading = heading::COMPILATION)]
    pub profile: Option<String>,
}

/// How recorded trees are rendered.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = heading::OUTPUT)]
pub struct ViewArgs {
    /// Output format.
    #[arg(long, value_enum, default_value_t = ViewFormat::Text)]
    pub format: ViewFormat,
    /// Write the rendered report to FILE (`-` for stdout). Without it, `report` prints every format on stdout, and
    /// `cargo calltime` prints the report on stderr (the program's stdout stays untouched), an SVG going to
    /// `<target>/calltime/last.svg`.
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Open the SVG or HTML report in the browser (xdg-open, open); without `-o` it is written to a temporary file
    /// first.
    #[arg(long)]
    pub open: bool,
    /// Show the N slowest invocations in full.
    #[arg(long, default_value_t = 3, value_name = "N")]
    pub top: usize,
    /// Nodes slower than this stand out (e.g. `1ms`, `250us`).
    #[arg(long, value_name = "DURATION")]
    pub highlight: Option<String>,
    /// Fold nodes faster than this into "(N more, total)".
    #[arg(long, value_name = "DURATION")]
    pub min_time: Option<String>,
    /// Render only invocation K (1-based, in completion order).
    #[arg(long, value_name = "K")]
    pub invocation: Option<usize>,
    /// With `--format svg --invocation K`: a time-ordered flame chart instead of a flamegraph.
    #[arg(long)]
    pub flamechart: bool,
    /// With `--format svg` or `folded`: weigh call paths by self time, by bytes allocated or by allocations.
    #[arg(long, value_enum, value_name = "WEIGHT", default_value = "time")]
    pub weight: crate::views::Weight,
    /// Show times as recorded, the probes' own cost included, instead of compensated for it.
    #[arg(long)]
    pub raw_times: bool,
    /// Only invocations slower than this (e.g. `5ms`), in every format; `--invocation K` counts among them. When
    /// running, the program keeps only those (the others are counted, not written).
    #[arg(long, value_name = "DURATION")]
    pub slower_than: Option<String>,
    /// With `--format table` (or json's `functions`): order the functions by self time, total time or calls.
    #[arg(long, value_enum, value_name = "KEY")]
    pub sort: Option<SortKey>,
}

pub use crate::views::{SortKey, ViewFormat};

/// The table's sort keys on the command line.
impl ValueEnum for SortKey {
    fn value_variants<'a>() -> &'a [Self] {
        &[SortKey::SelfTime, SortKey::Total, SortKey::Calls]
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(match self {
            SortKey::SelfTime => PossibleValue::new("self").help("Time in the function itself (the default)"),
            SortKey::Total => PossibleValue::new("total").help("Time from entry to exit"),
            SortKey::Calls => PossibleValue::new("calls").help("Number of calls"),
        })
    }
}

/// The view formats on the command line, with their help (the type is the views' own).
impl ValueEnum for ViewFormat {
    fn value_variants<'a>() -> &'a [Self] {
        &[
            ViewFormat::Text,
            ViewFormat::Svg,
            ViewFormat::Folded,
            ViewFormat::Chrome,
            ViewFormat::Json,
            ViewFormat::Table,
            ViewFormat::Html,
            ViewFormat::Aggregate,
        ]
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(match self {
            ViewFormat::Text => PossibleValue::new("text")
                .help("Indented trees, slowest invocations first, then the aggregate and a summary"),
            ViewFormat::Svg => PossibleValue::new("svg").help("Flamegraph SVG (inferno)"),
            ViewFormat::Folded => PossibleValue::new("folded")
                .help("Folded stacks `a;b;c <self ns>` for inferno, flamegraph.pl and speedscope"),
            ViewFormat::Chrome => {
                PossibleValue::new("chrome").help("Chrome trace event JSON for Perfetto and chrome://tracing")
            }
            ViewFormat::Json => PossibleValue::new("json").help("Versioned JSON (docs/json.md)"),
            ViewFormat::Table => PossibleValue::new("table")
                .help("One row per function: calls, total, self, mean, min, max (sorted by --sort)"),
            ViewFormat::Html => PossibleValue::new("html").help(
                "One self-contained page to share: summary, slowest invocations, flamegraph, sortable table, \
                 charts across stored runs",
            ),
            ViewFormat::Aggregate => PossibleValue::new("aggregate").help(
                "The whole run by call path: every invocation (kept or not) from the runtime's aggregate, with exact \
                 calls and p50/p99",
            ),
        })
    }
}

#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    // (Declaration order is help order: the tool's flags, then cargo's.)
    #[command(flatten)]
    pub plan: PlanArgs,
    #[command(flatten)]
    pub record: RecordArgs,
    #[command(flatten)]
    pub store: StoreArgs,
    /// Keep a copy of the raw trace in FILE.
    #[arg(long, value_name = "FILE", help_heading = heading::RECORDING)]
    pub save: Option<PathBuf>,
    #[command(flatten)]
    pub view: ViewArgs,
    #[command(flatten)]
    pub target: TargetArgs,
    #[command(flatten)]
    pub cargo: CargoArgs,
    /// Arguments for the program, after `--`.
    #[arg(last = true, value_name = "ARGS", help_heading = None::<&str>)]
    pub program_args: Vec<String>,
}

/// What the runtime keeps while the program runs (passed to it as CALLTIME_* environment variables; unset flags
/// leave the runtime's defaults, see docs/trace-format.md).
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = heading::RECORDING)]
pub struct RecordArgs {
    /// Most nodes stored per invocation: calls before it folds, call paths after; calls past it are counted and the
    /// tree is marked truncated [default: 100000].
    #[arg(long, value_name = "N")]
    pub node_cap: Option<u64>,
    /// Calls an invocation records one node each before it folds into call paths (exact counts; times of busy
    /// paths sampled, see --time-sample); 0 never folds (one node per call up to --node-cap) [default: 4096].
    #[arg(long, value_name = "N")]
    pub fold_after: Option<u64>,
    /// In a folded invocation, time 1 in N calls of a call path once it has had 16 (at random gaps); 1 times every
    /// call [default: 64].
    #[arg(long, value_name = "N")]
    pub time_sample: Option<u64>,
    /// Leave out calls shorter than this (with their subtrees), e.g. `1us`; they are counted as filtered.
    #[arg(long, value_name = "DURATION")]
    pub min_node_time: Option<String>,
    /// Record 1 in N root invocations [default: 1].
    #[arg(long, value_name = "N")]
    pub sample: Option<u64>,
    /// Keep at most N invocations; later ones are counted as dropped [default: 100000; no limit with
    /// --slower-than, --keep-slowest or --keep-sample].
    #[arg(long, value_name = "N")]
    pub max_invocations: Option<u64>,
    /// Keep only the K slowest invocations of the whole run (chosen as the program runs, written at its exit).
    #[arg(long, value_name = "K", conflicts_with_all = ["keep_sample", "max_invocations"])]
    pub keep_slowest: Option<u64>,
    /// Keep a uniform random sample of N invocations over the whole run (written at the program's exit), instead
    /// of the first ones.
    #[arg(long, value_name = "N", conflicts_with = "max_invocations")]
    pub keep_sample: Option<u64>,
    /// Record every call: probes never retire and every invocation is recorded (CALLTIME_EXACT=1). Without it, a
    /// function seen to be too fast to be worth its probe stops being timed (its later calls are only counted), and
    /// a root whose recorded invocations would cost more than 5% of its time records a random sample of them.
    #[arg(long)]
    pub exact: bool,
    /// The frame-depth limit: calls nested deeper than N levels below the root are counted, not stored (deep
    /// recursion) [default: 4096].
    #[arg(long, value_name = "N")]
    pub max_depth: Option<u64>,
    /// Start with recording switched off; `cargo calltime ctl on` switches it on while the program runs.
    #[arg(long)]
    pub start_off: bool,
    /// Continue the trace in a new file (`<trace>.s1`, `.s2`, ...) once it would pass SIZE, e.g. `16MB`; `0` never
    /// rotates [default: 16MB].
    #[arg(long, value_name = "SIZE")]
    pub rotate_size: Option<String>,
    /// Write at most SIZE of trees per hour, e.g. `50MB` (spread over the hour; trees over it are dropped and
    /// counted; the whole-run aggregate is always written); `0` for no cap [default: 50MB].
    #[arg(long, value_name = "SIZE")]
    pub max_size_per_hour: Option<String>,
}

/// `cargo calltime ctl [PID] on|off|status|sample N|slower-than DURATION|off`.
#[derive(Debug, Clone, Args)]
pub struct CtlArgs {
    /// `[PID] COMMAND [ARG]`: the process (optional when only one instrumented process runs), then `on`, `off`,
    /// `status`, `sample N` (record 1 in N roots) or `slower-than DURATION|off` (keep only trees slower than
    /// DURATION; the aggregate still counts every one). Takes effect within 100 ms.
    #[arg(value_name = "[PID] COMMAND", required = true, num_args = 1..=3)]
    pub words: Vec<String>,
    #[command(flatten)]
    pub cargo: CargoArgs,
}

/// How a run is kept in the run store (`<target>/calltime/runs.sqlite`, listed by `cargo calltime history`).
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = heading::STORE)]
pub struct StoreArgs {
    /// Label the stored run (a branch, an experiment): `history --label L` lists those runs, `diff @label:L ...`
    /// compares them.
    #[arg(long, value_name = "LABEL")]
    pub label: Option<String>,
    /// Keep the trace files of the newest N stored runs; older runs keep only their summaries [default: 20].
    #[arg(long, value_name = "N")]
    pub keep: Option<usize>,
}

#[derive(Debug, Clone, Args)]
pub struct HistoryArgs {
    /// Only runs with this label (`--label` of the run).
    #[arg(long, value_name = "LABEL")]
    pub label: Option<String>,
    /// Only runs recorded on or after DATE (UTC: 2026-03-01 or 2026-03-01T14:30).
    #[arg(long, value_name = "DATE")]
    pub since: Option<String>,
    /// Only runs recorded on or before DATE (a date alone takes in that whole day).
    #[arg(long, value_name = "DATE")]
    pub until: Option<String>,
    /// Only runs that recorded this root function (matched by `::`-suffix, as `--root` is).
    #[arg(long, value_name = "PATH")]
    pub root: Option<String>,
    /// Plot mean, p50 and p99 time and calls per invocation, one point per run, as an SVG chart.
    #[arg(long, value_name = "FILE")]
    pub chart: Option<PathBuf>,
    /// Remove the stored run ID (dirty data) and its trace; repeatable.
    #[arg(long, value_name = "ID")]
    pub delete: Vec<i64>,
    #[command(flatten)]
    pub cargo: CargoArgs,
}

#[derive(Debug, Clone, Args)]
pub struct BuildArgs {
    #[command(flatten)]
    pub plan: PlanArgs,
    /// The built program will be run to record every call: the status line says to set CALLTIME_EXACT=1 (probes
    /// never retire).
    #[arg(long, help_heading = heading::RECORDING)]
    pub exact: bool,
    #[command(flatten)]
    pub target: TargetArgs,
    #[command(flatten)]
    pub cargo: CargoArgs,
}

pub use crate::analysis::render::GraphFormat;

/// The graph formats on the command line (the type is the analysis's own).
impl ValueEnum for GraphFormat {
    fn value_variants<'a>() -> &'a [Self] {
        &[GraphFormat::Text, GraphFormat::Json, GraphFormat::Dot]
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(match self {
            GraphFormat::Text => PossibleValue::new("text"),
            GraphFormat::Json => PossibleValue::new("json"),
            GraphFormat::Dot => PossibleValue::new("dot"),
        })
    }
}

#[derive(Debug, Clone, Args)]
pub struct GraphArgs {
    #[command(flatten)]
    pub plan: PlanArgs,
    /// Output format.
    #[arg(long, value_enum, default_value_t = GraphFormat::Text, help_heading = heading::OUTPUT)]
    pub format: GraphFormat,
    /// Write the plan to FILE (`-` for stdout) instead of stdout.
    #[arg(short = 'o', long, value_name = "FILE", help_heading = heading::OUTPUT)]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub cargo: CargoArgs,
}

#[derive(Debug, Clone, Args)]
pub struct ReportArgs {
    /// Trace file to render (default: the last run's, under the target dir).
    #[arg(value_name = "TRACE")]
    pub trace: Option<PathBuf>,
    /// Add the trace FILE, recorded elsewhere (by a `cargo calltime build` binary in CI, ...), to the run store,
    /// then render it.
    #[arg(long, value_name = "FILE", conflicts_with = "trace")]
    pub import: Option<PathBuf>,
    #[command(flatten)]
    pub store: StoreArgs,
    /// Function table to name the trace's indices with (default: the one the trace names).
    #[arg(long, value_name = "FILE", help_heading = None::<&str>)]
    pub functions: Option<PathBuf>,
    /// Redraw the whole-run aggregate every second, reading the trace as the program writes it (the newest run's
    /// by default), until Ctrl-C.
    #[arg(long, help_heading = heading::OUTPUT)]
    pub follow: bool,
    /// With --follow: stop after N redraws (for scripts and tests).
    #[arg(long, value_name = "N", hide = true, requires = "follow", help_heading = heading::OUTPUT)]
    pub follow_frames: Option<u64>,
    #[command(flatten)]
    pub view: ViewArgs,
    #[command(flatten)]
    pub cargo: CargoArgs,
}

pub use crate::diff::DiffFormat;

/// The diff formats on the command line, with their help (the type is the diff's own).
impl ValueEnum for DiffFormat {
    fn value_variants<'a>() -> &'a [Self] {
        &[DiffFormat::Text, DiffFormat::Json, DiffFormat::Markdown, DiffFormat::Svg]
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(match self {
            DiffFormat::Text => PossibleValue::new("text"),
            DiffFormat::Json => PossibleValue::new("json"),
            DiffFormat::Markdown => {
                PossibleValue::new("markdown").help("GitHub-flavoured Markdown for a pull-request comment")
            }
            DiffFormat::Svg => PossibleValue::new("svg").help("Differential flamegraph SVG"),
        })
    }
}

#[derive(Debug, Clone, Args)]
pub struct DiffArgs {
    /// Base side: a trace file, a directory of trace files from repeated runs, or stored runs: `@label:L` (every
    /// run labelled L) or `@run:N` (run N of `cargo calltime history`).
    #[arg(value_name = "BASE")]
    pub base: PathBuf,
    /// Head side: as BASE.
    #[arg(value_name = "HEAD")]
    pub head: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value_t = DiffFormat::Text, help_heading = heading::OUTPUT)]
    pub format: DiffFormat,
    /// Write the diff to FILE (`-` for stdout) instead of stdout.
    #[arg(short = 'o', long, value_name = "FILE", help_heading = heading::OUTPUT)]
    pub output: Option<PathBuf>,
    /// With `--format svg`: open the SVG in the browser (xdg-open, open); without `-o` it is written to a
    /// temporary file first.
    #[arg(long, help_heading = heading::OUTPUT)]
    pub open: bool,
    /// Smallest time change (percent) worth reporting.
    #[arg(long, default_value_t = 10.0, value_name = "PCT")]
    pub threshold: f64,
    /// Exit with status 2 when a significant regression exceeds PCT.
    #[arg(long, value_name = "PCT")]
    pub fail_above: Option<f64>,
    /// Name of the base side in reports.
    #[arg(long, default_value = "base", value_name = "LABEL")]
    pub base_label: String,
    /// Name of the head side in reports.
    #[arg(long, default_value = "head", value_name = "LABEL")]
    pub head_label: String,
    /// Compare times as recorded, the probes' own cost included, instead of compensated for it.
    #[arg(long)]
    pub raw_times: bool,
}

/// Parses `std::env::args`, accepting both `cargo calltime ...` and `cargo-calltime calltime ...`; exits with
/// clap's message on a usage error.
/// `--depth`: a count of levels. Negative values reach this parser (clap's own error would advise passing them
/// after `--`, which sends them to the program).
fn depth_value(text: &str) -> Result<u32, String> {
    text.trim().parse().map_err(|_| "the depth is a number of call levels, 1 or more (the root is level 1)".to_owned())
}

pub fn parse_from_env() -> Cli {
    try_parse_from(std::env::args_os().collect()).unwrap_or_else(|err| err.exit())
}

/// Parses a command line (program name first). A flag of the default command given with a subcommand is refused
/// (`--root f report`), as `args_conflicts_with_subcommands` would, except for the global flags, which that setting
/// would refuse too.
pub fn try_parse_from(args: Vec<std::ffi::OsString>) -> Result<Cli, clap::Error> {
    let mut command = Cli::command();
    let matches = command.try_get_matches_from_mut(without_cargo_word(args))?;
    if let Some(subcommand) = matches.subcommand_name() {
        // (Flattened structs add groups to the ids: only arguments count.)
        let given = command.get_arguments().find(|a| {
            !a.is_global_set()
                && matches.ids().any(|id| id == a.get_id())
                && matches.value_source(a.get_id().as_str()) == Some(clap::parser::ValueSource::CommandLine)
        });
        if let Some(flag) = given.map(ToString::to_string) {
            return Err(command.error(
                clap::error::ErrorKind::ArgumentConflict,
                format!("`{flag}` belongs to the default command and cannot be used with `{subcommand}`"),
            ));
        }
    }
    Cli::from_arg_matches(&matches)
}

/// Drops the `calltime` cargo inserts when it runs the binary as a subcommand (`cargo-calltime calltime ARGS`).
fn without_cargo_word(mut args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    if args.get(1).is_some_and(|a| a == "calltime") {
        args.remove(1);
    }
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    fn try_parse(args: &[&str]) -> Result<Cli, clap::Error> {
        try_parse_from(args.iter().map(std::ffi::OsString::from).collect())
    }

    fn parse(args: &[&str]) -> Cli {
        try_parse(args).unwrap_or_else(|e| panic!("{args:?}: {e}"))
    }

    #[test]
    fn global_flags_go_before_or_after_a_subcommand() {
        for args in [
            &["c", "-q", "report"][..],
            &["c", "report", "-q"],
            &["c", "-qv", "report"],
            &["c", "-q", "-v", "report"],
            &["c", "calltime", "-qv", "report"],
            &["cargo-calltime", "calltime", "report", "-qv"],
        ] {
            let cli = parse(args);
            assert!(matches!(cli.command, Some(Command::Report(_))), "{args:?}");
            assert!(cli.global.quiet, "{args:?}");
        }
        let cli = parse(&["c", "-qv", "report"]);
        assert_eq!(cli.global.verbose, 1);
        let cli = parse(&["c", "--color", "never", "-vv", "--manifest-path=x/Cargo.toml", "graph", "--root", "f"]);
        assert!(matches!(cli.command, Some(Command::Graph(ref g)) if g.plan.root == ["f"]));
        assert_eq!(cli.global.verbose, 2);
        assert_eq!(cli.global.color, Some(ColorChoice::Never));
        assert_eq!(cli.global.manifest_path.as_deref(), Some(std::path::Path::new("x/Cargo.toml")));
        let cli = parse(&["c", "--offline", "diff", "a", "b", "--color", "always"]);
        assert!(matches!(cli.command, Some(Command::Diff(_))) && cli.global.offline);
        assert_eq!(cli.global.color, Some(ColorChoice::Always));
    }

    #[test]
    fn global_flags_work_with_the_default_command() {
        let cli = parse(&["c", "-q", "--root", "f"]);
        assert!(cli.command.is_none() && cli.global.quiet);
        let cli = parse(&["c", "--root", "f", "-qv"]);
        assert!(cli.command.is_none() && cli.global.quiet && cli.global.verbose == 1);
        // A program argument named like a subcommand stays a program argument.
        let cli = parse(&["c", "-q", "--root", "f", "--", "report"]);
        assert!(cli.command.is_none());
        assert_eq!(cli.run.program_args, ["report"]);
        // A run flag with a subcommand is still refused, before or after the subcommand's name.
        let err = try_parse(&["c", "--root", "f", "report"]).unwrap_err();
        assert!(err.to_string().contains("`--root <PATH>` belongs to the default command"), "{err}");
        assert!(try_parse(&["c", "-q", "--depth", "3", "graph", "--root", "f"]).is_err());
        assert!(try_parse(&["c", "report", "--root", "f"]).is_err());
    }

    #[test]
    fn cli_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn subcommand_and_default_command_both_parse() {
        let cli = Cli::try_parse_from(["cargo calltime", "--root", "handle", "--depth", "3", "--", "-x"]).unwrap();
        assert!(cli.command.is_none());
        assert_eq!(cli.run.plan.root, ["handle"]);
        assert_eq!(cli.run.program_args, ["-x"]);
        let cli = Cli::try_parse_from(["cargo calltime", "graph", "--root", "a", "--format", "json"]).unwrap();
        assert!(matches!(cli.command, Some(Command::Graph(_))));
        let cli = Cli::try_parse_from(["cargo calltime", "diff", "a", "b", "--format", "markdown"]).unwrap();
        assert!(matches!(cli.command, Some(Command::Diff(_))));
        let cli = Cli::try_parse_from(["cargo calltime", "report"]).unwrap();
        assert!(matches!(cli.command, Some(Command::Report(_))));
    }
}
