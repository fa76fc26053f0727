//! Stage 4: the instrumentation plan: which functions within `--depth` levels of the root get a probe, with their
//! dense indices and the byte offsets where the rewrite inserts each probe.

use std::path::PathBuf;

use anyhow::Result;
use serde::Serialize;

use crate::cli::PlanArgs;
use crate::trace::{FunctionInfo, FunctionTable};
use crate::workspace::Workspace;

/// Everything the later stages need to know about what will be instrumented.
#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    /// The `--root` arguments as given.
    pub root_args: Vec<String>,
    pub depth: u32,
    pub filter: Option<String>,
    pub exclude: Option<String>,
    /// Every function reached within `depth` levels, in a deterministic order (level, then path).
    pub functions: Vec<PlannedFunction>,
    /// Static call edges between reached functions, as positions in `functions`.
    pub edges: Vec<Edge>,
    /// Call sites that could not be resolved, or were resolved by over-approximation.
    pub unresolved: Vec<CallSiteNote>,
    /// Files that could not be read or parsed, and anything else the user should know.
    pub warnings: Vec<String>,
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
    pub skip_reason: Option<String>,
}

/// Where and how the rewrite inserts a probe. Offsets are byte offsets into the file as it is on disk
/// (a BOM or shebang line that syn strips is counted).
#[derive(Debug, Clone, Serialize)]
pub struct ProbeSite {
    /// Dense index 0..N over the instrumented functions, assigned deterministically.
    pub index: u32,
    pub kind: ProbeKind,
    /// Sync/Async: just after the body's `{` and any inner `#![...]` attributes.
    /// AsyncBlock: the offset of the `async` keyword of the tail `async move { .. }` block.
    pub open: usize,
    /// Async: the offset of the body's closing `}`. AsyncBlock: just after the tail block's closing `}`.
    /// Sync: unused (equal to `open`).
    pub close: usize,
    /// The declared return type as written (`impl Trait` erased to `_`), for async bodies; `None` for `()`.
    pub return_type: Option<String>,
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
        }
    }
}

/// Analyses the workspace and builds the plan: index, call graph, traversal, filter, indices.
pub fn make_plan(ws: &Workspace, args: &PlanArgs) -> Result<Plan> {
    if !args.exclude_fast {
        return crate::analysis::planner::make_plan(ws, args);
    }
    let file = crate::views::overhead::remembered_path(&ws.calltime_dir());
    let fast = crate::views::overhead::remembered(&file);
    let mut args = args.clone();
    if fast.is_empty() {
        crate::ui::warn(&format!(
            "--exclude-fast: no earlier run of this workspace found functions too fast to probe ({} is empty or \
             missing); probing as usual",
            file.display()
        ));
    } else {
        crate::ui::status(
            "Excluding",
            &format!("{} functions earlier runs found too fast to probe ({})", fast.len(), file.display()),
        );
        let fast_pattern = crate::views::overhead::exact_paths_regex(&fast);
        args.exclude = Some(match &args.exclude {
            Some(own) => format!("(?:{own})|{fast_pattern}"),
            None => fast_pattern,
        });
    }
    crate::analysis::planner::make_plan(ws, &args)
}
