//! The writer: a thread that takes completed invocations off the queue, formats them (ticks to nanoseconds, preorder
//! from parent links) and appends them to the trace file; the panic hook and the exit handler drain the queue too.

use std::cell::Cell;
use std::fmt::Write as _;
use std::fs::File;
use std::io::Write as _;
use std::mem;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::mpsc::Receiver;
use std::sync::Mutex;
use std::time::Duration;

use crate::clock::Scale;
use crate::invocation::{dequeued, give_back, lock, Runtime, DROPPED, KEPT, RUNTIME, TRUNCATED};
use crate::recorder::{
    OwnerKind, PathNode, Recorder, FLAG_CANCELLED, NO_SLOT, OPEN, PARENT_BITS, PARENT_MASK, UNTIMED,
};
use crate::retire::{self, Retirement, Watch};
use crate::Stats;

/// The trace format version this runtime writes (`calltime-trace 3`).
const TRACE_VERSION: u32 = 3;
/// Records gathered before the writer writes them out, even in the middle of a drain.
const FLUSH_BYTES: usize = 1 << 18;
/// How often the writer thread looks at the queue by itself.
const WRITER_PERIOD: Duration = Duration::from_millis(20);
/// Set by tests (`__private::hold_writer`) to keep the writer thread from draining.
static HOLD_WRITER: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// Set while this thread holds the sink, so a panic inside it never waits for itself.
    static DRAINING: Cell<bool> = const { Cell::new(false) };
}

/// Holds (true) or releases the writer thread (see `__private::hold_writer`).
pub(crate) fn hold_writer(hold: bool) {
    HOLD_WRITER.store(hold, std::sync::atomic::Ordering::SeqCst);
}

/// Gives the sink the queue's receiving end and starts the writer thread; its handle, to wake it, unless the thread
/// could not be spawned (the panic hook, the exit handler and `flush` still write).
pub(crate) fn start_writer(receiver: Receiver<Box<Recorder>>) -> Option<std::thread::Thread> {
    lock(&SINK).receiver = Some(receiver);
    std::thread::Builder::new()
        .name("calltime-writer".into())
        .spawn(|| loop {
            std::thread::park_timeout(WRITER_PERIOD);
            if !HOLD_WRITER.load(Relaxed) {
                drain(false);
            }
        })
        .ok()
        .map(|handle| handle.thread().clone())
}

/// The trace file and the receiving end of the queue; whoever holds the lock writes.
struct Sink {
    receiver: Option<Receiver<Box<Recorder>>>,
    file: Option<File>,
    opened: bool,
    seq: u64,
    last_stats: Option<Stats>,
    first_child: Vec<u32>,
    next_sibling: Vec<u32>,
    walk: Vec<(u32, u32, u64)>,
    children: Vec<u32>,
    body: String,
    /// Complete records not yet written (see `flush_pending`).
    pending: String,
    pending_records: u64,
    pending_truncated: u64,
    /// A folded invocation's call paths with the times of its pre-fold calls added.
    paths: Vec<PathNode>,
    /// The writer's observations of per-call invocations, for retiring functions.
    watch: Watch,
    retirements: Vec<Retirement>,
}

static SINK: Mutex<Sink> = Mutex::new(Sink {
    receiver: None,
    file: None,
    opened: false,
    seq: 0,
    last_stats: None,
    first_child: Vec::new(),
    next_sibling: Vec::new(),
    walk: Vec::new(),
    children: Vec::new(),
    body: String::new(),
    pending: String::new(),
    pending_records: 0,
    pending_truncated: 0,
    paths: Vec::new(),
    watch: Watch::new(),
    retirements: Vec::new(),
});

/// Appends `value` in decimal, two digits per division (the writer spends much of its time here).
fn push_decimal(out: &mut String, mut value: u64) {
    const PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819202122232425262728293031323334353637383940414243444546474849\
                                5051525354555657585960616263646566676869707172737475767778798081828384858687888990919293949596979899";
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    while value >= 100 {
        let pair = (value % 100) as usize * 2;
        value /= 100;
        at -= 2;
        digits[at..at + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
    }
    if value >= 10 {
        let pair = value as usize * 2;
        at -= 2;
        digits[at..at + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
    } else {
        at -= 1;
        digits[at] = b'0' + value as u8;
    }
    // SAFETY: ASCII digits are valid UTF-8.
    unsafe { out.as_mut_vec() }.extend_from_slice(&digits[at..]);
}

/// Writes every queued invocation (and a `stats` line if asked). Safe from any thread; never waits for itself.
pub(crate) fn drain(stats_line: bool) {
    let Some(rt) = RUNTIME.get() else { return };
    if DRAINING.try_with(Cell::get).unwrap_or(true) {
        return;
    }
    let _ = DRAINING.try_with(|d| d.set(true));
    {
        let mut sink = lock(&SINK);
        sink.write_queued(rt);
        if stats_line {
            sink.write_stats(rt);
        }
    }
    let _ = DRAINING.try_with(|d| d.set(false));
}

impl Sink {
    fn file(&mut self, rt: &Runtime) -> Option<&mut File> {
        if !self.opened {
            self.opened = true;
            match File::create(&rt.config.out) {
                Ok(mut file) => {
                    let exe = std::env::current_exe().map(|p| p.display().to_string()).unwrap_or_default();
                    let c = &rt.config;
                    let r = retire::settings();
                    let header = format!(
                        "calltime-trace {TRACE_VERSION}\nprocess {} {} {}\nplan {} {}\nsettings node_cap={} \
                         fold_after={} time_sample={} min_ns={} sample={} max_invocations={} retire={} \
                         retire_factor={} retire_min_calls={}\n{}",
                        std::process::id(),
                        rt.clock.epoch_unix_ns(),
                        exe.replace(['\n', '\r'], " "),
                        rt.plan.id,
                        rt.plan.table.replace(['\n', '\r'], " "),
                        c.node_cap,
                        c.fold_after,
                        c.time_sample,
                        c.min_ns,
                        c.sample,
                        c.max_invocations,
                        u8::from(r.enabled),
                        r.factor,
                        r.min_calls,
                        calibration_line(),
                    );
                    if file.write_all(header.as_bytes()).is_ok() {
                        self.file = Some(file);
                    }
                }
                Err(e) => eprintln!(
                    "calltime: cannot create trace file {}: {e}; nothing will be recorded",
                    rt.config.out.display()
                ),
            }
        }
        self.file.as_mut()
    }

    fn write_queued(&mut self, rt: &Runtime) {
        let mut scale = None;
        while let Some(rec) = self.receiver.as_ref().and_then(|r| r.try_recv().ok()) {
            dequeued();
            self.push_retirements();
            let scale = *scale.get_or_insert_with(|| Scale::current(rt.clock));
            self.write_invocation(rt, &rec, scale);
            give_back(rec);
            if self.pending.len() >= FLUSH_BYTES {
                self.flush_pending(rt);
            }
        }
        self.push_retirements();
        self.flush_pending(rt);
    }

    /// Appends the `retire` records not yet written (between invocations: a retirement always precedes the records
    /// that count its function's retired calls).
    fn push_retirements(&mut self) {
        if !retire::has_pending() {
            return;
        }
        let mut taken = mem::take(&mut self.retirements);
        taken.clear();
        retire::take_pending(&mut taken);
        for r in &taken {
            self.body.clear();
            self.push_line("retire", &[u64::from(r.index), r.at_ns, r.calls, r.mean_ns]);
            self.pending.push_str(&self.body);
        }
        self.retirements = taken;
    }

    /// Writes the records gathered since the last flush with one `write` call: one call per invocation made the
    /// writer fall behind programs with tens of thousands of short invocations (a syscall costs more than
    /// formatting a small tree).
    fn flush_pending(&mut self, rt: &Runtime) {
        if self.pending_records == 0 && self.pending.is_empty() {
            return;
        }
        let pending = mem::take(&mut self.pending);
        let written_ok = match self.file(rt) {
            Some(file) => file.write_all(pending.as_bytes()).is_ok(),
            None => false,
        };
        self.pending = pending;
        self.pending.clear();
        if written_ok {
            KEPT.fetch_add(self.pending_records, Relaxed);
            TRUNCATED.fetch_add(self.pending_truncated, Relaxed);
        } else {
            DROPPED.fetch_add(self.pending_records, Relaxed);
        }
        self.pending_records = 0;
        self.pending_truncated = 0;
    }

    /// Appends a `stats` line unless the last one says the same (a program that catches many panics would
    /// otherwise add one per panic).
    fn write_stats(&mut self, rt: &Runtime) {
        let now = crate::stats();
        if self.last_stats == Some(now) {
            return;
        }
        let line = format!("stats {} {} {} {} {}\n", now.seen, now.kept, now.sampled_out, now.dropped, now.truncated);
        if let Some(file) = self.file(rt) {
            if file.write_all(line.as_bytes()).is_ok() {
                self.last_stats = Some(now);
            }
        }
    }

    /// Rebuilds preorder from parent links, converts ticks, applies the minimum duration, writes one record.
    fn write_invocation(&mut self, rt: &Runtime, rec: &Recorder, scale: Scale) {
        let nodes = rec.nodes();
        let count = nodes.len();
        if count == 0 {
            return;
        }
        if rec.folded {
            self.write_folded(rt, rec, scale);
            return;
        }
        self.link_children(count, |slot| (nodes[slot].link & PARENT_MASK) as usize);
        let root = nodes[0];
        let root_start = scale.ns(root.start);
        let root_end = if root.end == OPEN { root_start } else { scale.ns(root.end).max(root_start) };
        self.body.clear();
        self.walk.clear();
        self.walk.push((0, 0, root_end));
        let (mut written, mut filtered) = (0u64, 0u64);
        while let Some((slot, depth, parent_end)) = self.walk.pop() {
            let node = nodes[slot as usize];
            let mut flags = node.link >> PARENT_BITS;
            let start = scale.ns(node.start);
            let end = if node.end == OPEN {
                flags |= FLAG_CANCELLED;
                parent_end
            } else {
                scale.ns(node.end)
            }
            .max(start);
            let duration = end - start;
            if slot != 0 && duration < rt.config.min_ns {
                filtered += self.subtree_size(slot);
                continue;
            }
            written += 1;
            self.push_line("n", &[u64::from(depth), u64::from(node.index), start, duration, u64::from(flags)]);
            self.walk_children(slot, depth, end);
        }
        self.finish_record(rec, root_start, root_end - root_start, written, filtered);
        self.watch.observe_nodes(nodes);
    }

    /// Writes a folded invocation: one `a` line per call path, in preorder, children in order of first entry.
    fn write_folded(&mut self, rt: &Runtime, rec: &Recorder, scale: Scale) {
        let count = rec.paths().len();
        if count == 0 {
            return;
        }
        // The calls entered before the fold add their times and flags to their paths now; those that never ended
        // (cancelled futures, calls open at the root's end) are marked cancelled.
        let mut paths = mem::take(&mut self.paths);
        paths.clear();
        paths.extend_from_slice(rec.paths());
        for (slot, node) in rec.nodes().iter().enumerate() {
            let Some(p) = rec.slot_path().get(slot).and_then(|&path| paths.get_mut(path as usize)) else { continue };
            if node.end == OPEN {
                if slot > 0 {
                    p.flags |= FLAG_CANCELLED;
                }
            } else {
                p.add_exact(node.end.saturating_sub(node.start));
                p.flags |= node.link >> PARENT_BITS;
            }
        }
        self.link_children(count, |id| paths[id].parent as usize);
        let root = rec.nodes()[0];
        let root_start = scale.ns(root.start);
        let root_end = if root.end == OPEN { root_start } else { scale.ns(root.end).max(root_start) };
        self.body.clear();
        self.walk.clear();
        self.walk.push((0, 0, 0));
        let (mut written, mut filtered) = (0u64, 0u64);
        while let Some((id, depth, _)) = self.walk.pop() {
            let p = paths[id as usize];
            let timed_ns = scale.span(p.ticks);
            let exact_ns = scale.span(p.exact_ticks);
            let estimated = unbiased_total(p.calls, p.timed, timed_ns, p.exact_calls, exact_ns);
            if id != 0 && estimated < rt.config.min_ns {
                filtered += self.subtree_size(id);
                continue;
            }
            written += 1;
            let (min, max) = if p.timed == 0 { (0, 0) } else { (scale.span(p.min), scale.span(p.max)) };
            let first_start = if p.first_start == UNTIMED { root_start } else { scale.ns(p.first_start) };
            let flags = u64::from(p.flags);
            let (calls, timed, exact_calls) = (p.calls, p.timed, p.exact_calls);
            let fields = [
                depth.into(),
                p.index.into(),
                calls,
                timed,
                first_start,
                timed_ns,
                min,
                max,
                flags,
                exact_calls,
                exact_ns,
            ];
            self.push_line("a", &fields);
            self.walk_children(id, depth, 0);
        }
        self.paths = paths;
        self.finish_record(rec, root_start, root_end - root_start, written, filtered);
    }

    /// Builds `first_child`/`next_sibling` for `count` nodes from each one's parent (children in index order);
    /// anything without a valid earlier parent hangs under the root.
    fn link_children(&mut self, count: usize, parent_of: impl Fn(usize) -> usize) {
        self.first_child.clear();
        self.first_child.resize(count, NO_SLOT);
        self.next_sibling.clear();
        self.next_sibling.resize(count, NO_SLOT);
        for id in (1..count).rev() {
            let parent = parent_of(id);
            let parent = if parent < id { parent } else { 0 };
            self.next_sibling[id] = self.first_child[parent];
            self.first_child[parent] = id as u32;
        }
    }

    /// Queues the children of `id` for the preorder walk, first child on top.
    fn walk_children(&mut self, id: u32, depth: u32, end: u64) {
        self.children.clear();
        let mut child = self.first_child[id as usize];
        while child != NO_SLOT {
            self.children.push(child);
            child = self.next_sibling[child as usize];
        }
        for &child in self.children.iter().rev() {
            self.walk.push((child, depth + 1, end));
        }
    }

    /// Appends a node line: its kind, then the fields. By hand: `writeln!` through core::fmt took about half of the
    /// writer's time on large trees.
    fn push_line(&mut self, kind: &str, fields: &[u64]) {
        self.body.push_str(kind);
        for &value in fields {
            self.body.push(' ');
            push_decimal(&mut self.body, value);
        }
        self.body.push('\n');
    }

    /// Wraps the node lines in `body` into an `inv` ... `end` record and writes it with one call.
    fn finish_record(&mut self, rec: &Recorder, start: u64, duration: u64, written: u64, filtered: u64) {
        let seq = self.seq;
        let kind = match rec.kind() {
            OwnerKind::Thread => "thread",
            OwnerKind::Task => "task",
        };
        let _ = writeln!(
            self.pending,
            "inv {seq} {kind} {} {start} {duration} {written} {} {filtered} {}",
            rec.owner(),
            rec.truncated(),
            rec.name().unwrap_or("")
        );
        self.pending.push_str(&self.body);
        for slot in 1..=retire::slots_used().min(rec.retired_calls().len() - 1) {
            let calls = rec.retired_calls()[slot];
            if calls > 0 {
                self.pending.push_str("r ");
                push_decimal(&mut self.pending, u64::from(retire::slot_index(slot)));
                self.pending.push(' ');
                push_decimal(&mut self.pending, calls);
                self.pending.push('\n');
            }
        }
        let _ = writeln!(self.pending, "end {seq}");
        self.seq += 1;
        self.pending_records += 1;
        if rec.truncated() > 0 {
            self.pending_truncated += 1;
        }
    }

    fn subtree_size(&self, slot: u32) -> u64 {
        let mut size = 0;
        let mut pending = vec![slot];
        while let Some(s) = pending.pop() {
            size += 1;
            let mut child = self.first_child[s as usize];
            while child != NO_SLOT {
                pending.push(child);
                child = self.next_sibling[child as usize];
            }
        }
        size
    }
}

/// The estimated total time of a folded call path (trace-format.md): its exact part, plus its later calls at the
/// mean of the calls timed at random gaps.
fn unbiased_total(calls: u64, timed: u64, timed_ns: u64, exact_calls: u64, exact_ns: u64) -> u64 {
    if timed > exact_calls {
        let sampled_ns = u128::from(timed_ns.saturating_sub(exact_ns));
        let later = u128::from(calls.saturating_sub(exact_calls));
        exact_ns + (later * sampled_ns / u128::from(timed - exact_calls)) as u64
    } else if exact_calls > 0 {
        (u128::from(exact_ns) * u128::from(calls) / u128::from(exact_calls)) as u64
    } else {
        0
    }
}

/// The header's `calibration` line (trace-format.md), empty when the probes were not calibrated.
fn calibration_line() -> String {
    let Some(c) = crate::calibrate::get() else { return String::new() };
    format!(
        "calibration recorded_inner={} recorded_outer={} folded_outer={} timed_inner={} timed_outer={} \
         retired_outer={}\n",
        c.recorded_inner_ps,
        c.recorded_outer_ps,
        c.folded_outer_ps,
        c.timed_inner_ps,
        c.timed_outer_ps,
        c.retired_outer_ps
    )
}

pub(crate) fn install_flush_hooks() {
    // Replacing the hook while panicking would itself panic (and abort).
    if !std::thread::panicking() {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            drain(true);
            previous(info);
        }));
    }
    #[cfg(any(unix, windows))]
    {
        extern "C" {
            fn atexit(callback: extern "C" fn()) -> std::os::raw::c_int;
        }
        extern "C" fn flush_at_exit() {
            // Unwinding out of an extern "C" function aborts; nothing here should panic, but be sure.
            let _ = std::panic::catch_unwind(|| drain(true));
        }
        // SAFETY: atexit is the C library's; the callback is a plain extern "C" fn with no captured state.
        unsafe {
            atexit(flush_at_exit);
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn push_decimal_writes_every_width() {
        for value in [0, 7, 9, 10, 42, 99, 100, 101, 999, 1000, 65_536, 1_234_567_890, u64::MAX] {
            let mut out = String::from("x");
            super::push_decimal(&mut out, value);
            assert_eq!(out, format!("x{value}"));
        }
    }
}
