//! cargo-calltime: per-invocation call-time trees for one function of a Rust workspace.
//!
//! Data flows one way, one module per stage (see docs/ARCHITECTURE.md):
//! cargo metadata ([`workspace`]) -> source index and call graph ([`analysis`]) -> plan ([`plan`]) ->
//! rewrite of a shadow copy ([`shadow`], [`rewrite`]) -> build and run ([`run`]) -> trace ([`trace`]) ->
//! views ([`views`]) and diffs ([`diff`]).

pub mod analysis;
pub mod build;
pub mod cli;
pub mod diff;
pub mod error;
pub mod plan;
pub mod rewrite;
pub mod run;
pub mod runtime_sources;
pub mod shadow;
pub mod trace;
pub mod ui;
pub mod units;
pub mod views;
pub mod workspace;

use cli::Command;

/// Runs the tool; returns the process exit code. Errors are printed as one `error:` line plus hints, never as a
/// panic or a backtrace.
pub fn main() -> i32 {
    let cli = cli::parse_from_env();
    let (verbose, color) = match &cli.command {
        None => (cli.run.cargo.verbose, cli.run.cargo.color),
        Some(Command::Graph(a)) => (a.cargo.verbose, a.cargo.color),
        Some(Command::Build(a)) => (a.cargo.verbose, a.cargo.color),
        Some(Command::Report(a)) => (a.cargo.verbose, a.cargo.color),
        Some(Command::Diff(a)) => (0, a.color),
    };
    ui::init(verbose, color);
    let result = match cli.command {
        None => run::run_command(&cli.run),
        Some(Command::Graph(args)) => run::graph_command(&args),
        Some(Command::Build(args)) => run::build_command(&args),
        Some(Command::Report(args)) => views::report_command(&args),
        Some(Command::Diff(args)) => diff::diff_command(&args),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            ui::error(&err);
            1
        }
    }
}
