//! The lines of the trace format, one reader and one writer per kind, side by side: a field added to a line is added
//! here, in both functions, and nowhere else (besides its field in the model). The reader (`read`) decides what a
//! line means for the file (record boundaries, trees); the builder (`build`) decides which lines to write.
//! Every writer appends exactly one line, ending in `\n`, as the runtime writes it.

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};

use super::{Invocation, Node, Stats, ThreadKind, ThreadRef, Trace};

pub(super) const MAGIC: &str = "calltime-trace";

/// Settings the runtime writes, in its order: a value of these that is not a number is an error, and the builder
/// writes them first, in this order, as the runtime does.
pub(super) const KNOWN_SETTINGS: [&str; 6] =
    ["node_cap", "fold_after", "time_sample", "min_ns", "sample", "max_invocations"];

// ---- header ----

/// `calltime-trace <version>`: the version, not yet checked against the versions this reader knows.
pub(super) fn read_magic(line: &str) -> Option<u32> {
    let mut words = line.split_whitespace();
    (words.next() == Some(MAGIC)).then_some(())?;
    words.next()?.parse().ok()
}

pub(super) fn write_magic(out: &mut String, version: u32) {
    let _ = writeln!(out, "{MAGIC} {version}");
}

/// `process <pid> <epoch_unix_ns> <exe>`
pub(super) fn read_process(rest: &str, trace: &mut Trace) -> Result<()> {
    let mut f = Fields::new(rest, 2);
    trace.pid = f.num()? as u32;
    trace.epoch_unix_ns = f.num()?;
    trace.exe = f.rest().to_owned();
    Ok(())
}

pub(super) fn write_process(out: &mut String, trace: &Trace) {
    let _ = writeln!(out, "process {} {} {}", trace.pid, trace.epoch_unix_ns, one_line(&trace.exe));
}

/// `plan <plan_id> <function table path>` (the path may be empty).
pub(super) fn read_plan(rest: &str, trace: &mut Trace) -> Result<()> {
    let mut f = Fields::new(rest, 1);
    trace.plan_id = Some(f.word()?.to_owned());
    let table = f.rest();
    trace.table_hint = (!table.is_empty()).then(|| PathBuf::from(table));
    Ok(())
}

pub(super) fn write_plan(out: &mut String, trace: &Trace) {
    let table = trace.table_hint.as_ref().map(|p| p.display().to_string()).unwrap_or_default();
    let _ = writeln!(out, "plan {} {}", trace.plan_id.as_deref().unwrap_or_default(), one_line(&table));
}

/// `settings <key>=<value> ...` (version 2).
pub(super) fn read_settings(rest: &str, trace: &mut Trace) -> Result<()> {
    for pair in rest.split_whitespace() {
        let Some((key, value)) = pair.split_once('=') else {
            bail!("setting `{pair}` is not `key=value`");
        };
        // Later runtimes may write settings that are not numbers: unknown ones are skipped.
        match value.parse() {
            Ok(value) => {
                trace.settings.insert(key.to_owned(), value);
            }
            Err(_) if KNOWN_SETTINGS.contains(&key) => bail!("setting {key}=`{value}` is not a number"),
            Err(_) => {}
        }
    }
    Ok(())
}

pub(super) fn write_settings(out: &mut String, trace: &Trace) {
    out.push_str("settings");
    let known = KNOWN_SETTINGS.iter().filter_map(|&key| trace.settings.get_key_value(key));
    let others = trace.settings.iter().filter(|(key, _)| !KNOWN_SETTINGS.contains(&key.as_str()));
    for (key, value) in known.chain(others) {
        let _ = write!(out, " {key}={value}");
    }
    out.push('\n');
}

// ---- invocation records ----

/// `inv <seq> <thread|task> <id> <start_ns> <duration_ns> <node_count> <truncated_calls> <filtered_nodes> <name>`:
/// the invocation (its root still empty) and the node count it announces.
pub(super) fn read_inv(rest: &str) -> Result<(Invocation, u64)> {
    let mut f = Fields::new(rest, 8);
    let seq = f.num()?;
    let kind = match f.word()? {
        "thread" => ThreadKind::Thread,
        "task" => ThreadKind::Task,
        other => bail!("unknown thread kind `{other}`"),
    };
    let id = f.num()?;
    let start_ns = f.num()?;
    let duration_ns = f.num()?;
    let node_count = f.num()?;
    let truncated_calls = f.num()?;
    let filtered_nodes = f.num()?;
    let name = f.rest().to_owned();
    let inv = Invocation {
        seq,
        thread: ThreadRef { kind, id, name },
        start_ns,
        duration_ns,
        truncated_calls,
        filtered_nodes,
        folded: false,
        root: Node::call(0, start_ns, duration_ns, false, Vec::new()),
    };
    Ok((inv, node_count))
}

pub(super) fn write_inv(out: &mut String, inv: &Invocation, node_count: usize) {
    let kind = match inv.thread.kind {
        ThreadKind::Thread => "thread",
        ThreadKind::Task => "task",
    };
    let _ = writeln!(
        out,
        "inv {} {kind} {} {} {} {node_count} {} {} {}",
        inv.seq,
        inv.thread.id,
        inv.start_ns,
        inv.duration_ns,
        inv.truncated_calls,
        inv.filtered_nodes,
        one_line(&inv.thread.name)
    );
}

/// `n <depth> <index> <start_ns> <duration_ns> <flags>`: one call.
pub(super) fn read_call(rest: &str) -> Result<(u32, Node)> {
    let mut f = Fields::new(rest, 5);
    let depth = f.num()? as u32;
    let func = f.num()? as u32;
    let start_ns = f.num()?;
    let duration_ns = f.num()?;
    let mut node = Node::call(func, start_ns, duration_ns, false, Vec::new());
    set_flags(&mut node, f.num()?);
    Ok((depth, node))
}

pub(super) fn write_call(out: &mut String, depth: u32, node: &Node) {
    let _ = writeln!(out, "n {depth} {} {} {} {}", node.func, node.start_ns, node.duration_ns, flags(node));
}

/// `a <depth> <index> <calls> <timed> <first_start_ns> <timed_ns> <min_ns> <max_ns> <flags>`: one call path of a
/// folded invocation.
pub(super) fn read_path(rest: &str) -> Result<(u32, Node)> {
    let mut f = Fields::new(rest, 9);
    let depth = f.num()? as u32;
    let func = f.num()? as u32;
    let calls = f.num()?;
    let timed_calls = f.num()?;
    let start_ns = f.num()?;
    let timed_ns = f.num()?;
    let min_ns = f.num()?;
    let max_ns = f.num()?;
    let flags = f.num()?;
    if calls == 0 {
        bail!("a call path with 0 calls");
    }
    if timed_calls > calls {
        bail!("{timed_calls} timed calls of {calls}");
    }
    let mut node = Node::path(func, start_ns, calls, timed_calls, timed_ns, (min_ns, max_ns), Vec::new());
    set_flags(&mut node, flags);
    Ok((depth, node))
}

pub(super) fn write_path(out: &mut String, depth: u32, node: &Node) {
    let _ = writeln!(
        out,
        "a {depth} {} {} {} {} {} {} {} {}",
        node.func,
        node.calls,
        node.timed_calls,
        node.start_ns,
        node.timed_ns,
        node.min_ns,
        node.max_ns,
        flags(node)
    );
}

/// Flag bits of `n` and `a` lines: bit 0 unwound, bit 1 cancelled; other bits are reserved and ignored.
const PANICKED: u64 = 1;
const CANCELLED: u64 = 2;

fn set_flags(node: &mut Node, flags: u64) {
    node.panicked = flags & PANICKED != 0;
    node.cancelled = flags & CANCELLED != 0;
}

fn flags(node: &Node) -> u64 {
    (if node.panicked { PANICKED } else { 0 }) | (if node.cancelled { CANCELLED } else { 0 })
}

/// `end <seq>`
pub(super) fn read_end(rest: &str) -> Result<u64> {
    Fields::new(rest, 1).num()
}

pub(super) fn write_end(out: &mut String, seq: u64) {
    let _ = writeln!(out, "end {seq}");
}

// ---- statistics ----

/// `stats <seen> <kept> <sampled_out> <dropped> <truncated>`; `incomplete` is the reader's own count, kept.
pub(super) fn read_stats(rest: &str, incomplete: u64) -> Result<Stats> {
    let mut f = Fields::new(rest, 5);
    Ok(Stats {
        seen: f.num()?,
        kept: f.num()?,
        sampled_out: f.num()?,
        dropped: f.num()?,
        truncated: f.num()?,
        incomplete,
    })
}

pub(super) fn write_stats(out: &mut String, stats: &Stats) {
    let Stats { seen, kept, sampled_out, dropped, truncated, incomplete: _ } = stats;
    let _ = writeln!(out, "stats {seen} {kept} {sampled_out} {dropped} {truncated}");
}

/// A rest-of-line field cannot hold a newline: the runtime writes spaces instead.
fn one_line(text: &str) -> std::borrow::Cow<'_, str> {
    if text.contains(['\n', '\r']) {
        text.replace(['\n', '\r'], " ").into()
    } else {
        text.into()
    }
}

/// Whitespace-separated fields, then the rest of the line (which may hold spaces).
struct Fields<'a> {
    words: Vec<&'a str>,
    rest: &'a str,
    at: usize,
}

impl<'a> Fields<'a> {
    fn new(line: &'a str, count: usize) -> Fields<'a> {
        let mut words = Vec::with_capacity(count);
        let mut rest = line;
        for _ in 0..count {
            let trimmed = rest.trim_start_matches(' ');
            let (word, after) = trimmed.split_once(' ').unwrap_or((trimmed, ""));
            if word.is_empty() {
                break;
            }
            words.push(word);
            rest = after;
        }
        Fields { words, rest, at: 0 }
    }

    fn word(&mut self) -> Result<&'a str> {
        let w = self.words.get(self.at).copied().context("too few fields")?;
        self.at += 1;
        Ok(w)
    }

    fn num(&mut self) -> Result<u64> {
        let w = self.word()?;
        w.parse().with_context(|| format!("`{w}` is not a number"))
    }

    fn rest(&self) -> &'a str {
        self.rest
    }
}
