//! Runs named on the command line: `@run:N` (one run by id) and `@label:L` (every run with that label), for
//! `cargo calltime diff` and `history`.

use std::path::PathBuf;

use anyhow::Result;

use super::{RunFilter, Store, StoredRun};
use crate::error::UserError;

/// A set of stored runs named by the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selector {
    Run(i64),
    Label(String),
}

impl Selector {
    /// `@run:N` or `@label:L`; `None` for anything else (a file path).
    pub fn parse(text: &str) -> Result<Option<Selector>> {
        let Some(rest) = text.strip_prefix('@') else { return Ok(None) };
        let invalid = || {
            UserError::new(format!("`{text}` names no stored run")).hint(
                "write `@run:ID` (ids from `cargo calltime history`) or `@label:LABEL` (a `--label` given to runs)",
            )
        };
        match rest.split_once(':') {
            Some(("run", id)) => id.parse::<i64>().map(|id| Some(Selector::Run(id))).map_err(|_| invalid().into()),
            Some(("label", label)) if !label.is_empty() => Ok(Some(Selector::Label(label.to_owned()))),
            _ => Err(invalid().into()),
        }
    }

    /// The selected runs, oldest first; an error with a hint when there are none.
    pub fn runs(&self, store: &Store) -> Result<Vec<StoredRun>> {
        let runs = match self {
            Selector::Run(id) => store.run(*id)?.into_iter().collect(),
            Selector::Label(label) => store.runs(&RunFilter { label: Some(label.clone()), ..RunFilter::default() })?,
        };
        if runs.is_empty() {
            let what = match self {
                Selector::Run(id) => format!("no stored run has id {id}"),
                Selector::Label(label) => format!("no stored run has the label `{label}`"),
            };
            return Err(UserError::new(format!("{what} (store {})", store.path().display()))
                .hint("`cargo calltime history` lists the stored runs with their ids and labels")
                .into());
        }
        Ok(runs)
    }

    /// The selected runs' trace files; an error naming the runs whose traces retention removed.
    pub fn trace_files(&self, store: &Store) -> Result<Vec<PathBuf>> {
        let runs = self.runs(store)?;
        let missing: Vec<String> = runs
            .iter()
            .filter(|r| r.record.trace_path.as_ref().is_none_or(|p| !p.exists()))
            .map(|r| format!("#{}", r.id))
            .collect();
        if !missing.is_empty() {
            return Err(UserError::new(format!(
                "the traces of run(s) {} are no longer kept, only their summaries",
                missing.join(", ")
            ))
            .hint("keep more traces with `--keep N` on later runs, or compare runs whose traces are kept (`cargo calltime history`)")
            .into());
        }
        Ok(runs.into_iter().filter_map(|r| r.record.trace_path).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_parse_and_refuse_with_a_hint() {
        assert_eq!(Selector::parse("@run:12").unwrap(), Some(Selector::Run(12)));
        assert_eq!(Selector::parse("@label:pr-42").unwrap(), Some(Selector::Label("pr-42".into())));
        assert_eq!(Selector::parse("base.trace").unwrap(), None);
        for bad in ["@run:x", "@label:", "@main", "@branch:main"] {
            let err = Selector::parse(bad).unwrap_err();
            assert!(crate::error::hints_of(&err)[0].contains("@run:ID"), "{bad}");
        }
    }
}
