//! Stages 2 and 3: the source index and the static call graph, with syn alone (no rustc, no rust-analyzer).
//!
//! - [`modules`]: crate targets from cargo metadata and the files of their module trees, parsed in parallel;
//! - [`syntax`]: what per-file extraction produces; `items` extracts items, `use`s and probe offsets, `bodies`
//!   the call sites of function bodies, `receivers` the types of receivers; [`std_model`] is what the analysis
//!   knows about std (implicit calls, std types and methods, cheap calls);
//! - [`index`]: namespaces, `use` resolution to a fixed point, impls, rustc-style names;
//! - [`resolve`]: which workspace functions a call site may reach;
//! - [`graph`]: the level-by-level traversal from the roots;
//! - [`planner`]: roots (`roots`), filter, exclusions, trivial functions (`trivial`), skips and dense indices
//!   ([`make_plan`], or [`analyse`] then [`Analysis::plan`]);
//! - [`render`]: a plan as text, JSON or dot.
//!
//! Nothing here reads the command line or prints: options come in as [`crate::plan::PlanOptions`], warnings go
//! out in the [`crate::plan::Plan`].

mod bodies;
pub mod cfg;
mod chunks;
mod deferred;
pub mod graph;
pub mod index;
mod items;
pub mod modules;
pub mod planner;
mod receivers;
pub mod render;
pub mod resolve;
mod roots;
pub mod spawns;
pub mod std_model;
pub mod syntax;
mod trivial;

pub use index::Index;
pub use items::extract_file;
pub use planner::{analyse, make_plan, Analysis};
pub use std_model::IMPLICIT_CALLS;

use crate::workspace::Workspace;

/// Stack for parser threads: syn recurses once per nesting level of an expression, and generated or test code
/// nests deeply (a debug build needs far more than the default 2 MiB).
const PARSER_STACK: usize = 256 << 20;

/// Runs `work` on a rayon pool whose threads have room for deep syntax trees.
pub fn with_parser_pool<T: Send>(work: impl FnOnce() -> T + Send) -> T {
    match rayon::ThreadPoolBuilder::new().stack_size(PARSER_STACK).build() {
        Ok(pool) => pool.install(work),
        Err(_) => work(),
    }
}

/// Indexes the crate targets of the workspace: libs and bins, and with `with_aux` examples, tests and benches
/// (they matter only when a root is in one of them).
pub fn index_workspace(ws: &Workspace, with_aux: bool) -> Index {
    let started = std::time::Instant::now();
    let specs = modules::crate_specs(ws, with_aux);
    let sources = with_parser_pool(|| modules::parse_sources(&specs));
    let parsed = started.elapsed();
    let index = Index::build(specs, &sources);
    tracing::info!(
        "indexed {} files ({} lines, {} functions): parse {:?}, index {:?}",
        sources.files.len(),
        sources.lines,
        index.fns.len(),
        parsed,
        started.elapsed() - parsed
    );
    // The summaries were cloned into the index; free them off the main thread (see planner::make_plan).
    let _ = std::thread::Builder::new().name("calltime-free-sources".into()).spawn(move || drop(sources));
    index
}
