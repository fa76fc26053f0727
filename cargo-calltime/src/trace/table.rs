//! The function table: the side file (JSON, written by the tool beside the trace) that names the runtime's dense
//! function indices.

use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

/// The side table that names the runtime's dense indices; written by the tool as JSON next to the trace.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct FunctionTable {
    pub version: u32,
    pub plan_id: String,
    pub roots: Vec<String>,
    pub depth: u32,
    pub filter: Option<String>,
    /// Indexed by `FunctionInfo::index` (dense, 0..N).
    pub functions: Vec<FunctionInfo>,
    /// Display names of the reached functions left out because they only build a closure or an `impl Trait`
    /// value whose work runs later (`SkipReason::BuildsForLater`): the views say so, since their work shows in
    /// their callers' self time.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub builders: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FunctionInfo {
    pub index: u32,
    pub path: String,
    pub display: String,
    pub file: String,
    pub line: u32,
    pub root: bool,
}

impl FunctionTable {
    pub fn load(path: &Path) -> Result<FunctionTable> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("cannot read function table {}", path.display()))?;
        serde_json::from_str(&text).with_context(|| format!("function table {} is not valid JSON", path.display()))
    }

    pub fn save(&self, path: &Path) -> Result<()> {
        let text = serde_json::to_string_pretty(self)?;
        std::fs::write(path, text).with_context(|| format!("cannot write function table {}", path.display()))
    }

    /// The function with index `index`, if the table has it.
    pub fn get(&self, index: u32) -> Option<&FunctionInfo> {
        self.functions.get(index as usize).filter(|f| f.index == index)
    }

    /// Full path of `index`, or `#index` when the table does not name it.
    pub fn path(&self, index: u32) -> String {
        self.get(index).map_or_else(|| format!("#{index}"), |f| f.path.clone())
    }

    /// Short name of `index`, or `#index` when the table does not name it.
    pub fn display(&self, index: u32) -> String {
        self.get(index).map_or_else(|| format!("#{index}"), |f| f.display.clone())
    }
}
