//! The records of a long-running service (docs/trace-format.md, "Control files" and "Held trees"), kept apart from
//! the tree records: `control` (a setting `cargo calltime ctl` switched while the program ran) and `unheld` (trees
//! written while `--keep-slowest`/`--keep-sample` held them, later displaced by better ones).

use std::collections::BTreeSet;

use anyhow::{bail, Context, Result};
use serde::Serialize;

use super::Trace;

/// A setting switched while the program ran, from a `control <at_ns> <setting>=<value>` record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ControlChange {
    /// When the runtime applied it (ns since the trace epoch).
    pub at_ns: u64,
    /// The process it applied to.
    pub pid: u32,
    /// `recording` (1 on, 0 off), `sample` (record 1 in N roots) or `slower_than_ns` (0: none): the `settings`
    /// line's keys; a later runtime's other keys are kept as they are.
    pub setting: String,
    pub value: u64,
}

impl ControlChange {
    /// What it did, as `cargo calltime ctl` is told: `recording off`, `sample 1 in 10`, `slower-than 5.00ms`.
    pub fn describe(&self) -> String {
        match (self.setting.as_str(), self.value) {
            ("recording", 0) => "recording off".to_owned(),
            ("recording", _) => "recording on".to_owned(),
            ("sample", n) => format!("sample 1 in {n}"),
            ("slower_than_ns", 0) => "slower-than off".to_owned(),
            ("slower_than_ns", ns) => format!("slower-than {}", crate::units::format_ns(ns)),
            (other, value) => format!("{other}={value}"),
        }
    }
}

/// `control <at_ns> <setting>=<value>`, written by process `pid`.
pub(super) fn read_control(rest: &str, pid: u32) -> Result<ControlChange> {
    let (at, assignment) = rest.split_once(' ').context("a `control` line needs `<at_ns> <setting>=<value>`")?;
    let at_ns = at.parse().with_context(|| format!("`control` time `{at}` is not a number"))?;
    let Some((setting, value)) = assignment.split_once('=') else {
        bail!("`control` setting `{assignment}` is not `<setting>=<value>`")
    };
    let value = value.parse().with_context(|| format!("`control` value `{value}` is not a number"))?;
    Ok(ControlChange { at_ns, pid, setting: setting.to_owned(), value })
}

pub(super) fn write_control(out: &mut String, change: &ControlChange) {
    out.push_str(&format!("control {} {}={}\n", change.at_ns, change.setting, change.value));
}

/// `unheld <seq> ...`: the invocations of these sequence numbers (of this process) no longer count.
pub(super) fn read_unheld(rest: &str) -> Result<Vec<u64>> {
    rest.split(' ')
        .filter(|word| !word.is_empty())
        .map(|word| word.parse().with_context(|| format!("`unheld` sequence number `{word}` is not a number")))
        .collect()
}

/// Drops the invocations an `unheld` record of the same process named (written, then displaced by a better tree).
pub(super) fn drop_unheld(trace: &mut Trace) {
    if trace.unheld.is_empty() {
        return;
    }
    let unheld: BTreeSet<u64> = trace.unheld.iter().copied().collect();
    trace.invocations.retain(|inv| !unheld.contains(&inv.seq));
}

#[cfg(test)]
mod tests {
    use super::super::{parse, TraceBuilder};

    /// A kept set written twice while the program ran: the second time one tree displaced another, which the
    /// reader leaves out; the settings `ctl` switched read back with their times, and write back.
    #[test]
    fn held_trees_are_superseded_and_control_changes_read_back() {
        let head = "calltime-trace 3\nprocess 9 0 /app\nplan p /t.json\nsettings keep_slowest=2\n";
        let record = |seq: u64, start: u64, ns: u64| {
            format!("inv {seq} thread 1 {start} {ns} 1 0 0 main\nn 0 0 {start} {ns} 0\nend {seq}\n")
        };
        let text = format!(
            "{head}control 50 recording=0\ncontrol 90 recording=1\n{}{}control 300 slower_than_ns=5000000\n\
             unheld 0\n{}stats 9 2 0 0 0 0 0 0 0 0 7 0 0\n",
            record(0, 100, 10),
            record(3, 200, 40),
            record(7, 400, 30)
        );
        let trace = parse(&text).unwrap();
        assert!(trace.warnings.is_empty(), "{:?}", trace.warnings);
        let seqs: Vec<u64> = trace.invocations.iter().map(|inv| inv.seq).collect();
        assert_eq!(seqs, [3, 7], "seq 0 was displaced");
        let changes: Vec<(u64, String)> = trace.controls.iter().map(|c| (c.at_ns, c.describe())).collect();
        assert_eq!(
            changes,
            [(50, "recording off".into()), (90, "recording on".into()), (300, "slower-than 5.00ms".into())]
        );
        assert!(trace.controls.iter().all(|c| c.pid == 9));
        let written = TraceBuilder::write(&trace);
        let again = parse(&written).unwrap();
        assert_eq!((again.controls, again.invocations.len()), (trace.controls, 2));
        assert!(parse(&format!("{head}control 5 recording\n")).unwrap().warnings[0].contains("<setting>=<value>"));
        assert!(parse(&format!("{head}unheld x\n")).unwrap().warnings[0].contains("not a number"));
    }
}
