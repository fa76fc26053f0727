//! `cargo calltime history`: the stored runs as a table, one line per run and root, dirty runs marked.

use std::collections::HashMap;

use crate::store::{self, dates, StoredRun};
use crate::units::format_ns;

/// The listing of `runs` (oldest first). Dirty runs are decided per root among the runs listed, as on the chart.
pub fn render(runs: &[StoredRun]) -> String {
    if runs.is_empty() {
        return "no stored run matches\n".to_owned();
    }
    let mut dirty: HashMap<(i64, String), String> = HashMap::new();
    for root in store::roots_of(runs) {
        for point in store::series(runs, &root) {
            if let Some(why) = point.dirty {
                dirty.insert((point.run_id, root.clone()), why);
            }
        }
    }
    let header = [
        "run",
        "recorded (UTC)",
        "label",
        "commit",
        "branch",
        "trace",
        "root",
        "inv",
        "mean",
        "p50",
        "p99",
        "calls/inv",
        "",
    ];
    let mut rows: Vec<Vec<String>> = vec![header.iter().map(|h| h.to_string()).collect()];
    let mut notes = Vec::new();
    for run in runs {
        let r = &run.record;
        let first = [
            format!("#{}", run.id),
            dates::format_ms(r.recorded_ms),
            r.label.clone().unwrap_or_else(|| "-".into()),
            r.git.commit.as_deref().map_or("-".into(), |c| c.chars().take(9).collect()),
            r.git.branch.clone().unwrap_or_else(|| "-".into()),
            if r.trace_path.is_some() { "kept" } else { "-" }.to_owned(),
        ];
        if r.root_stats.is_empty() {
            let mut row = first.to_vec();
            row.extend(["(no complete invocation)".to_owned(), "0".into()]);
            row.extend(vec![String::new(); 5]);
            rows.push(row);
        }
        for (i, stat) in r.root_stats.iter().enumerate() {
            let mut row = if i == 0 { first.to_vec() } else { vec![String::new(); first.len()] };
            let optional = |ns: Option<u64>| ns.map_or_else(|| "-".to_owned(), format_ns);
            let mark = match dirty.get(&(run.id, stat.root.clone())) {
                Some(why) => {
                    notes.push(format!("#{} is dirty: {why}", run.id));
                    "dirty".to_owned()
                }
                None => String::new(),
            };
            row.extend([
                stat.root.clone(),
                stat.invocations.to_string(),
                format_ns(stat.mean_ns),
                optional(stat.p50_ns),
                optional(stat.p99_ns),
                format!("{:.2}", stat.calls_per_invocation),
                mark,
            ]);
            rows.push(row);
        }
    }
    let mut out = table(&rows);
    for note in notes {
        out.push_str(&note);
        out.push('\n');
    }
    out
}

/// Columns padded to their widest cell; numbers (from `inv` on) right-aligned.
fn table(rows: &[Vec<String>]) -> String {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| rows.iter().filter_map(|r| r.get(c)).map(|s| s.chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            let pad = widths[c].saturating_sub(cell.chars().count());
            let numeric = (7..=11).contains(&c);
            if c > 0 {
                line.push_str("  ");
            }
            if numeric {
                line.push_str(&" ".repeat(pad));
                line.push_str(cell);
            } else {
                line.push_str(cell);
                line.push_str(&" ".repeat(pad));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}
