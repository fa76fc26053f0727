//! cargo-calltime: per-invocation call-time trees for one function of a Rust workspace.
//!
//! Data flows one way, one module per stage (see docs/ARCHITECTURE.md):
//! cargo metadata ([`workspace`]) -> source index and call graph ([`analysis`]) -> plan ([`plan`]) ->
//! rewrite of a shadow copy ([`shadow`], [`rewrite`]) -> build and run ([`run`]) -> trace ([`trace`]) ->
//! views ([`views`]) and diffs ([`diff`]).

pub mod analysis;
pub mod cargo;
pub mod cli;
pub mod commands;
pub mod control;
pub mod diff;
pub mod error;
pub mod plan;
pub mod rewrite;
pub mod run;
pub mod runtime_sources;
pub mod shadow;
pub mod store;
pub mod trace;
pub mod ui;
pub mod units;
pub mod views;
pub mod workspace;

/// Runs the tool; returns the process exit code. Errors are printed as one `error:` line plus hints, never as a
/// panic or a backtrace.
pub fn main() -> i32 {
    // The shadow build runs this binary as its workspace rustc wrapper (see `cargo::rustc_wrapper_from_env`).
    if let Some(code) = cargo::rustc_wrapper_from_env() {
        return code;
    }
    let cli = cli::parse_from_env();
    ui::init(cli.global.verbose, cli.global.color);
    match commands::dispatch(cli) {
        Ok(code) => code,
        Err(err) => {
            ui::error(&err);
            1
        }
    }
}
