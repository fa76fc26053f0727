//! Command-line interface: every flag of every subcommand, in one place.
//!
//! Cargo runs a subcommand as `cargo-calltime calltime ARGS...`; [`parse_from_env`] drops that extra word so the
//! binary works both ways.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

#[derive(Debug, Parser)]
#[command(
    name = "cargo calltime",
    bin_name = "cargo calltime",
    version,
    about = "Per-invocation call-time trees for one function of your workspace, with no hand annotations",
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Analyse, rewrite a shadow copy, build it, run it and show the trees (the default command).
    #[command(flatten)]
    pub run: RunArgs,
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
}

/// Cargo's own flags, with cargo's meanings.
#[derive(Debug, Clone, Default, Args)]
pub struct CargoArgs {
    /// Path to Cargo.toml.
    #[arg(long, value_name = "PATH")]
    pub manifest_path: Option<PathBuf>,
    /// Package(s) to analyse and instrument (default: the whole workspace).
    #[arg(short = 'p', long = "package", value_name = "SPEC")]
    pub package: Vec<String>,
    /// Space or comma separated list of features to activate.
    #[arg(short = 'F', long, value_name = "FEATURES")]
    pub features: Vec<String>,
    /// Activate all available features.
    #[arg(long)]
    pub all_features: bool,
    /// Do not activate the `default` feature.
    #[arg(long)]
    pub no_default_features: bool,
    /// Directory for all generated artifacts.
    #[arg(long, value_name = "DIRECTORY", env = "CARGO_TARGET_DIR")]
    pub target_dir: Option<PathBuf>,
    /// Run without accessing the network.
    #[arg(long)]
    pub offline: bool,
    /// Assert that Cargo.lock will remain unchanged.
    #[arg(long)]
    pub locked: bool,
    /// Equivalent to --locked and --offline.
    #[arg(long)]
    pub frozen: bool,
    /// Use verbose output (-vv very verbose); shows cargo's build output.
    #[arg(short = 'v', long = "verbose", action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Do not print progress messages.
    #[arg(short = 'q', long = "quiet")]
    pub quiet: bool,
    /// Coloring: auto, always, never.
    #[arg(long, value_name = "WHEN")]
    pub color: Option<ColorChoice>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

/// Which functions get a probe.
#[derive(Debug, Clone, Default, Args)]
pub struct PlanArgs {
    /// The function whose invocations are recorded, matched by `::`-suffix (`handle`, `server::handle`,
    /// `myapp::server::handle`). Repeatable.
    #[arg(long, value_name = "PATH", required = true)]
    pub root: Vec<String>,
    /// How many levels of the static call graph to instrument; the root is level 1.
    #[arg(long, default_value_t = 5, value_name = "N")]
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
    /// since it costs less than the probe itself.
    #[arg(long)]
    pub probe_trivial: bool,
}

/// Which target to build and run, and how.
#[derive(Debug, Clone, Default, Args)]
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
    /// Build artifacts in release mode, with optimizations.
    #[arg(short = 'r', long)]
    pub release: bool,
    /// Build artifacts with the specified profile.
    #[arg(long, value_name = "PROFILE-NAME")]
    pub profile: Option<String>,
}

/// How recorded trees are rendered.
#[derive(Debug, Clone, Args)]
pub struct ViewArgs {
    /// Output format.
    #[arg(long, value_enum, default_value_t = ViewFormat::Text)]
    pub format: ViewFormat,
    /// Write the rendered report to FILE (`-` for stdout). Without it, `cargo calltime` prints the report on
    /// stderr (the program's stdout stays untouched) and `report` on stdout.
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
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
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ViewFormat {
    /// Indented trees, slowest invocations first, then the aggregate and a summary.
    Text,
    /// Flamegraph SVG (inferno).
    Svg,
    /// Folded stacks `a;b;c <self ns>` for inferno, flamegraph.pl and speedscope.
    Folded,
    /// Chrome trace event JSON for Perfetto and chrome://tracing.
    Chrome,
    /// Versioned JSON (docs/json.md).
    Json,
}

#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub cargo: CargoArgs,
    #[command(flatten)]
    pub target: TargetArgs,
    #[command(flatten)]
    pub plan: PlanArgs,
    #[command(flatten)]
    pub view: ViewArgs,
    #[command(flatten)]
    pub record: RecordArgs,
    /// Keep a copy of the raw trace in FILE.
    #[arg(long, value_name = "FILE")]
    pub save: Option<PathBuf>,
    /// Arguments for the program, after `--`.
    #[arg(last = true, value_name = "ARGS")]
    pub program_args: Vec<String>,
}

/// What the runtime keeps while the program runs (passed to it as CALLTIME_* environment variables; unset flags
/// leave the runtime's defaults, see docs/trace-format.md).
#[derive(Debug, Clone, Default, Args)]
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
    /// Keep at most N invocations; later ones are counted as dropped [default: 100000].
    #[arg(long, value_name = "N")]
    pub max_invocations: Option<u64>,
}

impl RecordArgs {
    /// The runtime's environment variables for the flags that were given.
    pub fn env(&self) -> anyhow::Result<Vec<(&'static str, String)>> {
        let mut env = Vec::new();
        if let Some(n) = self.node_cap {
            env.push(("CALLTIME_NODE_CAP", n.to_string()));
        }
        if let Some(n) = self.fold_after {
            env.push(("CALLTIME_FOLD_AFTER", n.to_string()));
        }
        if let Some(n) = self.time_sample {
            if n == 0 {
                anyhow::bail!("--time-sample must be at least 1 (time 1 in N calls)\n  hint: use --time-sample 1 to time every call");
            }
            env.push(("CALLTIME_TIME_SAMPLE", n.to_string()));
        }
        if let Some(d) = &self.min_node_time {
            env.push(("CALLTIME_MIN_NS", crate::units::parse_duration(d)?.to_string()));
        }
        if let Some(n) = self.sample {
            if n == 0 {
                anyhow::bail!("--sample must be at least 1 (record 1 in N invocations)\n  hint: use --sample 1 to record every invocation");
            }
            env.push(("CALLTIME_SAMPLE", n.to_string()));
        }
        if let Some(n) = self.max_invocations {
            env.push(("CALLTIME_MAX_INVOCATIONS", n.to_string()));
        }
        Ok(env)
    }
}

#[derive(Debug, Clone, Args)]
pub struct BuildArgs {
    #[command(flatten)]
    pub cargo: CargoArgs,
    #[command(flatten)]
    pub target: TargetArgs,
    #[command(flatten)]
    pub plan: PlanArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum GraphFormat {
    Text,
    Json,
    Dot,
}

#[derive(Debug, Clone, Args)]
pub struct GraphArgs {
    #[command(flatten)]
    pub cargo: CargoArgs,
    #[command(flatten)]
    pub plan: PlanArgs,
    /// Output format.
    #[arg(long, value_enum, default_value_t = GraphFormat::Text)]
    pub format: GraphFormat,
    /// Write the plan to FILE instead of stdout.
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

#[derive(Debug, Clone, Args)]
pub struct ReportArgs {
    /// Trace file to render (default: the last run's, under the target dir).
    #[arg(value_name = "TRACE")]
    pub trace: Option<PathBuf>,
    /// Function table to name the trace's indices with (default: the one the trace names).
    #[arg(long, value_name = "FILE")]
    pub functions: Option<PathBuf>,
    #[command(flatten)]
    pub cargo: CargoArgs,
    #[command(flatten)]
    pub view: ViewArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DiffFormat {
    Text,
    Json,
    /// GitHub-flavoured Markdown for a pull-request comment.
    Markdown,
    /// Differential flamegraph SVG.
    Svg,
}

#[derive(Debug, Clone, Args)]
pub struct DiffArgs {
    /// Base side: a trace file or a directory of trace files from repeated runs.
    #[arg(value_name = "BASE")]
    pub base: PathBuf,
    /// Head side: a trace file or a directory of trace files from repeated runs.
    #[arg(value_name = "HEAD")]
    pub head: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value_t = DiffFormat::Text)]
    pub format: DiffFormat,
    /// Write the diff to FILE instead of stdout.
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
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
    /// Coloring: auto, always, never.
    #[arg(long, value_name = "WHEN")]
    pub color: Option<ColorChoice>,
}

/// Parses `std::env::args`, accepting both `cargo calltime ...` and `cargo-calltime calltime ...`.
pub fn parse_from_env() -> Cli {
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args.get(1).is_some_and(|a| a == "calltime") {
        args.remove(1);
    }
    Cli::parse_from(hoist_global_flags(args))
}

/// Cargo takes its global flags before a subcommand too (`cargo -q build`), and so does `cargo calltime -q report`:
/// the flags cargo treats as global, given before a subcommand's name, are moved after it (where clap expects them).
/// Anything else before the name (a run flag such as `--root`) stops the search: that is the default command.
fn hoist_global_flags(mut args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    const SUBCOMMANDS: [&str; 4] = ["graph", "build", "report", "diff"];
    const FLAGS: [&str; 7] = ["-q", "--quiet", "--verbose", "--offline", "--locked", "--frozen", "--color"];
    const WITH_VALUE: [&str; 2] = ["--color", "--manifest-path"];
    let mut at = 1;
    while let Some(arg) = args.get(at).and_then(|a| a.to_str()) {
        if SUBCOMMANDS.contains(&arg) {
            if at > 1 {
                let name = args.remove(at);
                args.insert(1, name);
            }
            break;
        }
        let flag = arg.split('=').next().unwrap_or(arg);
        let verbose =
            arg.len() > 1 && arg.starts_with('-') && !arg.starts_with("--") && arg[1..].chars().all(|c| c == 'v');
        if !(FLAGS.contains(&flag) || flag == "--manifest-path" || verbose) {
            break;
        }
        at += if WITH_VALUE.contains(&arg) { 2 } else { 1 };
    }
    args
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    #[test]
    fn global_flags_before_a_subcommand_move_after_it() {
        let hoist = |args: &[&str]| -> Vec<String> {
            let args = args.iter().map(std::ffi::OsString::from).collect();
            hoist_global_flags(args).into_iter().map(|a| a.into_string().unwrap()).collect()
        };
        assert_eq!(hoist(&["c", "-q", "report"]), ["c", "report", "-q"]);
        assert_eq!(
            hoist(&["c", "--color", "never", "-vv", "--manifest-path=x/Cargo.toml", "graph", "--root", "f"]),
            ["c", "graph", "--color", "never", "-vv", "--manifest-path=x/Cargo.toml", "--root", "f"]
        );
        // A run flag first: the default command, nothing moves (even a program argument named like a subcommand).
        assert_eq!(hoist(&["c", "--root", "f", "--", "report"]), ["c", "--root", "f", "--", "report"]);
        assert_eq!(hoist(&["c", "-q", "--root", "f"]), ["c", "-q", "--root", "f"]);
        assert!(
            matches!(Cli::parse_from(hoist(&["c", "-q", "report"])).command, Some(Command::Report(ref r)) if r.cargo.quiet)
        );
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
