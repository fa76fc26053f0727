//! Stages 2 and 3: the source index and the static call graph, with syn alone (no rustc, no rust-analyzer).
//!
//! - [`modules`]: crate targets from cargo metadata and the files of their module trees, parsed in parallel;
//! - [`syntax`]: per-file extraction of items, `use`s, call sites and probe offsets;
//! - [`index`]: namespaces, `use` resolution to a fixed point, impls, rustc-style names;
//! - [`resolve`]: which workspace functions a call site may reach;
//! - [`graph`]: the level-by-level traversal from the roots;
//! - [`planner`]: roots, filter, skips and dense indices ([`crate::plan::make_plan`]);
//! - [`render`]: `cargo calltime graph` as text, JSON or dot.

pub mod graph;
pub mod index;
pub mod modules;
pub mod planner;
pub mod render;
pub mod resolve;
pub mod syntax;

pub use index::Index;

use crate::workspace::Workspace;

/// Which implicit calls the graph models. Printed under the plan and in docs/graph-json.md.
pub const IMPLICIT_CALLS: &str = "implicit calls: `x.await` on a call is that call's edge (the awaited async fn); \
a function named as a value (`.map(parse)`) is an edge; calls in closures belong to the enclosing function, and \
also to a workspace function that calls (or forwards) the closure passed to it (directly, behind `&`/`Some(..)`, or \
bound to a local first); an async fn's future passed to a workspace function that polls or awaits its parameter \
(`block_on(f(x))`) is an edge of that function; on values of a workspace type the syntax shows: `x[i]` \
(Index/IndexMut), operators (`+`, `-=`, unary `-`/`!`, `==`, `<`: std::ops, PartialEq, PartialOrd impls), `{}`/`{:?}` \
arguments of format!/write!/println! and `.to_string()` (Display/Debug impls), `for _ in x` \
(IntoIterator/Iterator::next), a `let` binding's Drop, a method the type lacks (Deref/DerefMut); `.into()` \
(workspace From impls); a `thread_local!`/`lazy_static!` initializer's calls belong to each function of the same \
file that names the static; not modelled: `?` (From::from), deref coercions, callbacks stored in fields, Drop of \
temporaries and fields";

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
