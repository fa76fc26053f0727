//! Which finished invocations are kept (`CALLTIME_SLOWER_THAN_NS`, `CALLTIME_KEEP_SLOWEST`, `CALLTIME_KEEP_SAMPLE`).
//! Decided where a root returns, before its tree is handed to the writer, so a tree left out costs the writer
//! nothing. The writer holds the best K candidates so far (the slowest, or those of highest random rank: a uniform
//! sample of the whole run whatever order they arrive in) and publishes the bar a new one must clear; threads read
//! the bar (a relaxed load of a word written only when the held set changes) and leave out what falls below it.
//! Held trees are written as they are chosen, about every second (`checkpoint`: a tree later displaced by a better
//! one is named in an `unheld` record, which the reader resolves), and at exit: a process killed by a signal keeps
//! the held set as of its last checkpoint.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use crate::recorder::OwnerKind;

/// Which invocations the trace keeps besides `--slower-than`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Keep {
    /// Every one (up to `CALLTIME_MAX_INVOCATIONS`, in order).
    All,
    /// The K slowest of the run.
    Slowest(usize),
    /// A uniform sample of K over the whole run.
    Sample(usize),
}

impl Keep {
    /// `CALLTIME_KEEP_SLOWEST` wins over `CALLTIME_KEEP_SAMPLE` (the tool never sets both); 0 is "all".
    pub(crate) fn from_counts(slowest: u64, sample: u64) -> Keep {
        let at_most = |n: u64| n.min(1 << 24) as usize;
        match (slowest, sample) {
            (0, 0) => Keep::All,
            (0, n) => Keep::Sample(at_most(n)),
            (n, _) => Keep::Slowest(at_most(n)),
        }
    }

    /// How many trees are held until exit (0 for `All`: written as they come).
    pub(crate) fn held(self) -> usize {
        match self {
            Keep::All => 0,
            Keep::Slowest(k) | Keep::Sample(k) => k,
        }
    }

    /// The settings line's words (`keep_slowest`, `keep_sample`).
    pub(crate) fn counts(self) -> (usize, usize) {
        match self {
            Keep::All => (0, 0),
            Keep::Slowest(k) => (k, 0),
            Keep::Sample(k) => (0, k),
        }
    }
}

/// Why a finished invocation is not handed to the writer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LeftOut {
    /// Not slower than `--slower-than`.
    Fast,
    /// Not among the slowest K, or not in the sample, at the time it ended.
    Unselected,
}

/// `--slower-than` in nanoseconds (0: off): `CALLTIME_SLOWER_THAN_NS` at the start, then `ctl slower-than`.
static SLOWER_THAN_NS: AtomicU64 = AtomicU64::new(0);
/// `--slower-than` in clock ticks, a little under the threshold (the writer decides exactly, in nanoseconds); 0
/// until the writer has calibrated the clock, and when the threshold is off.
static SLOWER_THAN_TICKS: AtomicU64 = AtomicU64::new(0);
/// `Keep::Slowest`: the duration (ticks) of the fastest tree held once K are; 0 before.
static BAR_TICKS: AtomicU64 = AtomicU64::new(0);
/// `Keep::Sample`: the lowest rank held once K are; 0 before.
static BAR_RANK: AtomicU64 = AtomicU64::new(0);

/// Whether the tree of a root that ran from `start` to `end` (ticks) is worth handing to the writer. `local_bar`
/// is the thread's own bar for `Keep::Sample` (see `local_sample_bar`; 0 for tasks).
#[inline]
pub(crate) fn verdict(
    keep: Keep,
    start: u64,
    end: u64,
    kind: OwnerKind,
    owner: u64,
    local_bar: u64,
) -> Result<(), LeftOut> {
    // A root still open (a cancelled task) has no duration yet: the writer decides.
    let ticks = end.wrapping_sub(start);
    if ticks < SLOWER_THAN_TICKS.load(Relaxed) {
        return Err(LeftOut::Fast);
    }
    let below_bar = match keep {
        Keep::All => false,
        Keep::Slowest(_) => ticks < BAR_TICKS.load(Relaxed),
        Keep::Sample(_) => sample_rank(start, kind, owner) < BAR_RANK.load(Relaxed).max(local_bar),
    };
    if below_bar {
        Err(LeftOut::Unselected)
    } else {
        Ok(())
    }
}

/// Whether a root that took `ticks` would pass `--slower-than` and, with `--keep-slowest`, the bar of the slowest
/// held (for an invocation skipped for cost, which has no tree: `sampler::record_next`). `false` when neither
/// applies.
pub(crate) fn passes_time_bar(keep: Keep, ticks: u64) -> bool {
    let threshold = SLOWER_THAN_TICKS.load(Relaxed);
    match keep {
        Keep::Slowest(_) => ticks >= threshold && ticks >= BAR_TICKS.load(Relaxed),
        _ => threshold > 0 && ticks >= threshold,
    }
}

/// `Keep::Sample`: a bar a thread can apply before the writer's is known (which would let the start of a run flood
/// the writer). A tree in the run's sample of K is in the top K ranks of its own thread's first `seen` invocations,
/// and K of `seen` uniform ranks fall below `1 - m / seen` with m = K + 4 sqrt(K) + 8 with probability under 1e-4
/// (a Poisson tail), so this leaves out nearly nothing the writer would keep.
pub(crate) fn local_sample_bar(keep: Keep, seen: u64) -> u64 {
    let Keep::Sample(k) = keep else { return 0 };
    let margin = k as u64 + 4 * (k as f64).sqrt() as u64 + 8;
    if seen <= margin {
        return 0;
    }
    u64::MAX - (u64::MAX / seen) * margin
}

/// Sets the `--slower-than` threshold (0: off), at the start and on `ctl slower-than`. Switching it off takes
/// effect for the threads at once; a new threshold once the writer publishes it in ticks (its next period).
pub(crate) fn set_slower_than(ns: u64) {
    SLOWER_THAN_NS.store(ns, Relaxed);
    if ns == 0 {
        SLOWER_THAN_TICKS.store(0, Relaxed);
    }
}

/// The `--slower-than` threshold now, in nanoseconds (0: off).
pub(crate) fn slower_than_ns() -> u64 {
    SLOWER_THAN_NS.load(Relaxed)
}

/// Whether the roots' exit must decide which trees to hand over: a keep policy, or a published threshold (one
/// relaxed load: `ctl slower-than` may switch it at any time).
#[inline(always)]
pub(crate) fn chooses(keep: Keep) -> bool {
    keep != Keep::All || SLOWER_THAN_TICKS.load(Relaxed) > 0
}

/// The writer publishes `--slower-than` in ticks once it knows the clock's rate: `ns_per_2_32_ticks` is what
/// 2^32 ticks last in nanoseconds. 1% under the threshold, so the thread's estimate never leaves out a tree the
/// writer's exact check would keep.
pub(crate) fn publish_slower_than(ns_per_2_32_ticks: u64) {
    let slower_than_ns = slower_than_ns();
    if slower_than_ns == 0 {
        SLOWER_THAN_TICKS.store(0, Relaxed);
        return;
    }
    if ns_per_2_32_ticks == 0 {
        return;
    }
    let ticks = (u128::from(slower_than_ns) << 32) / u128::from(ns_per_2_32_ticks);
    SLOWER_THAN_TICKS.store(u64::try_from(ticks - ticks / 100).unwrap_or(u64::MAX), Relaxed);
}

/// A random rank for `Keep::Sample`, the same wherever it is computed (the thread and the writer both see the root's
/// start and owner): keeping the K highest ranks is a uniform sample of K, in any arrival order.
#[inline]
pub(crate) fn sample_rank(start: u64, kind: OwnerKind, owner: u64) -> u64 {
    let task_bit = if matches!(kind, OwnerKind::Task) { 1 << 63 } else { 0 };
    // splitmix64's finaliser.
    let mut z = start ^ owner.rotate_left(29) ^ task_bit;
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A formatted record held, ordered by score, then the earlier first (so of equal scores the later one goes).
pub(crate) struct Held {
    pub(crate) score: u64,
    pub(crate) seq: u64,
    /// The record; emptied once written to the trace.
    pub(crate) text: String,
    pub(crate) truncated: bool,
    /// In the trace already (by a checkpoint): displacing it takes an `unheld` record.
    pub(crate) written: bool,
}

/// What a checkpoint appended to the text it was given.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Checkpoint {
    /// Held records appended (not written before).
    pub(crate) records: u64,
    /// Of those, truncated ones.
    pub(crate) truncated: u64,
    /// Their sequence numbers, to mark them written once the text is.
    pub(crate) seqs: Vec<u64>,
}

impl Held {
    fn key(&self) -> (u64, Reverse<u64>) {
        (self.score, Reverse(self.seq))
    }
}

impl PartialEq for Held {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}
impl Eq for Held {}
impl PartialOrd for Held {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Held {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key().cmp(&other.key())
    }
}

/// The writer's held trees: the K best scores so far (a min-heap, the first to go on top).
pub(crate) struct Holder {
    keep: Keep,
    heap: BinaryHeap<Reverse<Held>>,
    /// Sequence numbers of written trees displaced since the last checkpoint.
    unheld: Vec<u64>,
}

impl Holder {
    pub(crate) const fn new() -> Holder {
        Holder { keep: Keep::All, heap: BinaryHeap::new(), unheld: Vec::new() }
    }

    pub(crate) fn set_keep(&mut self, keep: Keep) {
        self.keep = keep;
    }

    /// The score a tree is ranked by: its duration in ticks, or its random rank; `None` when trees are not held.
    pub(crate) fn score(&self, start: u64, end: u64, kind: OwnerKind, owner: u64) -> Option<u64> {
        match self.keep {
            Keep::All => None,
            Keep::Slowest(_) => Some(end.saturating_sub(start)),
            Keep::Sample(_) => Some(sample_rank(start, kind, owner)),
        }
    }

    /// Whether a tree of `score` would be held now (so it is worth formatting).
    pub(crate) fn wants(&self, score: u64) -> bool {
        self.heap.len() < self.keep.held() || self.heap.peek().is_some_and(|Reverse(least)| score > least.score)
    }

    /// Holds a formatted record; the one it displaces (if any) goes (named in the next checkpoint's `unheld`
    /// record when it was written), and the bar the threads read rises.
    pub(crate) fn hold(&mut self, held: Held) -> Option<Held> {
        self.heap.push(Reverse(held));
        let displaced = (self.heap.len() > self.keep.held()).then(|| self.heap.pop()).flatten().map(|Reverse(h)| h);
        if let Some(gone) = displaced.as_ref().filter(|gone| gone.written) {
            self.unheld.push(gone.seq);
        }
        if self.heap.len() >= self.keep.held() {
            let bar = self.heap.peek().map_or(0, |Reverse(least)| least.score);
            match self.keep {
                Keep::All => {}
                Keep::Slowest(_) => BAR_TICKS.store(bar, Relaxed),
                Keep::Sample(_) => BAR_RANK.store(bar, Relaxed),
            }
        }
        displaced
    }

    /// Appends to `unheld` the `unheld` record of the written trees displaced since the last checkpoint (forgotten
    /// here: the writer writes it whatever the budget says), and to `out` the held records not written yet, in the
    /// order they completed; `mark_written` once `out` is in the trace.
    pub(crate) fn checkpoint(&mut self, unheld: &mut String, out: &mut String) -> Checkpoint {
        if !self.unheld.is_empty() {
            unheld.push_str("unheld");
            for seq in self.unheld.drain(..) {
                unheld.push(' ');
                unheld.push_str(&seq.to_string());
            }
            unheld.push('\n');
        }
        let mut fresh: Vec<&Held> = self.heap.iter().map(|Reverse(h)| h).filter(|h| !h.written).collect();
        fresh.sort_by_key(|h| h.seq);
        let mut done = Checkpoint::default();
        for held in fresh {
            out.push_str(&held.text);
            done.records += 1;
            done.truncated += u64::from(held.truncated);
            done.seqs.push(held.seq);
        }
        done
    }

    /// The records of a checkpoint are in the trace: their text is no longer needed.
    pub(crate) fn mark_written(&mut self, seqs: &[u64]) {
        if seqs.is_empty() {
            return;
        }
        // The heap orders by score and seq only, so changing the other fields in place keeps it valid.
        let mut held: Vec<Reverse<Held>> = std::mem::take(&mut self.heap).into_vec();
        for Reverse(h) in &mut held {
            if seqs.contains(&h.seq) {
                h.written = true;
                h.text = String::new();
            }
        }
        self.heap = BinaryHeap::from(held);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(score: u64, seq: u64) -> Held {
        Held { score, seq, text: format!("inv {seq}\n"), truncated: false, written: false }
    }

    /// The held records in completion order, written or not (what the trace holds after the last checkpoint).
    fn held_in_order(holder: &Holder) -> Vec<(u64, u64)> {
        let mut held: Vec<(u64, u64)> = holder.heap.iter().map(|Reverse(h)| (h.seq, h.score)).collect();
        held.sort();
        held
    }

    /// Offers every (score, seq) the way the writer does: formatted only when wanted.
    fn offer_all(holder: &mut Holder, scores: impl IntoIterator<Item = u64>) -> u64 {
        let mut left_out = 0;
        for (seq, score) in scores.into_iter().enumerate() {
            if holder.wants(score) {
                left_out += u64::from(holder.hold(record(score, seq as u64)).is_some());
            } else {
                left_out += 1;
            }
        }
        left_out
    }

    #[test]
    fn keeps_the_slowest_k_in_completion_order() {
        let mut holder = Holder::new();
        holder.set_keep(Keep::Slowest(3));
        let durations = [5, 90, 1, 70, 70, 3, 100, 2, 70];
        let scores: Vec<u64> = durations.iter().map(|&d| holder_score(&holder, d)).collect();
        let left_out = offer_all(&mut holder, scores);
        // 100, 90 and the first of the three 70s; in completion order.
        assert_eq!(held_in_order(&holder), [(1, 90), (3, 70), (6, 100)]);
        assert_eq!(left_out, 6);
    }

    fn holder_score(holder: &Holder, duration: u64) -> u64 {
        holder.score(1_000, 1_000 + duration, OwnerKind::Thread, 1).expect("trees are held")
    }

    #[test]
    fn checkpoints_write_each_tree_once_and_name_the_written_ones_displaced() {
        let mut holder = Holder::new();
        holder.set_keep(Keep::Slowest(2));
        holder.hold(record(10, 0));
        holder.hold(record(20, 1));
        let (mut unheld, mut out) = (String::new(), String::new());
        let first = holder.checkpoint(&mut unheld, &mut out);
        assert_eq!((out.as_str(), first.records, &first.seqs[..]), ("inv 0\ninv 1\n", 2, &[0, 1][..]));
        assert!(unheld.is_empty());
        holder.mark_written(&first.seqs);
        // 30 displaces the written 10; 25 displaces 20 (written); 40 displaces 25 before it was ever written.
        for (score, seq) in [(30, 2), (25, 3), (40, 4)] {
            holder.hold(record(score, seq));
        }
        let (mut unheld, mut out) = (String::new(), String::new());
        let second = holder.checkpoint(&mut unheld, &mut out);
        assert_eq!(unheld, "unheld 0 1\n", "25 was never in the trace: nothing to undo");
        assert_eq!((out.as_str(), second.truncated), ("inv 2\ninv 4\n", 0));
        holder.mark_written(&second.seqs);
        let (mut unheld, mut out) = (String::new(), String::new());
        assert_eq!(holder.checkpoint(&mut unheld, &mut out), Checkpoint::default());
        assert!(out.is_empty() && unheld.is_empty(), "nothing new: {unheld}{out}");
        assert_eq!(held_in_order(&holder), [(2, 30), (4, 40)]);
    }

    #[test]
    fn keeps_all_until_k_then_only_better_scores() {
        let mut holder = Holder::new();
        holder.set_keep(Keep::Slowest(2));
        assert!(holder.wants(0));
        assert!(holder.hold(record(10, 0)).is_none());
        assert!(holder.hold(record(20, 1)).is_none());
        assert!(!holder.wants(10), "a tie with the least held is not better");
        assert!(holder.wants(11));
        let displaced = holder.hold(record(30, 2)).expect("one displaced");
        assert_eq!((displaced.seq, displaced.score), (0, 10));
    }

    #[test]
    fn the_sample_is_uniform_over_the_whole_run() {
        // 200 runs of 1000 invocations, keep 10: each position is kept 2 times in expectation; the first and last
        // tenths of the run must be kept as often as the rest (a "first N" policy would keep only the first 10).
        let (k, n, runs) = (10usize, 1000u64, 200u64);
        let mut kept_by_tenth = [0u64; 10];
        for run in 0..runs {
            let mut holder = Holder::new();
            holder.set_keep(Keep::Sample(k));
            for seq in 0..n {
                let score = holder.score(run * n + seq, 0, OwnerKind::Thread, 7).expect("held");
                if holder.wants(score) {
                    holder.hold(record(score, seq));
                }
            }
            for (seq, _) in held_in_order(&holder) {
                kept_by_tenth[(seq * 10 / n) as usize] += 1;
            }
        }
        let expected = (k as u64 * runs) / 10;
        for (tenth, &kept) in kept_by_tenth.iter().enumerate() {
            // Binomial(2000, 0.1): standard deviation about 13; 5 of them either side.
            assert!(kept.abs_diff(expected) < 70, "tenth {tenth} of the run kept {kept} times, expected {expected}");
        }
    }

    #[test]
    fn the_threads_own_bar_leaves_out_nothing_the_sample_keeps() {
        // Whatever ends up in the sample of K must have cleared the thread's own bar when it ended.
        for k in [1usize, 10, 100] {
            for run in 0..40u64 {
                let ranks: Vec<u64> = (0..5_000u64).map(|i| sample_rank(run << 32 | i, OwnerKind::Thread, 3)).collect();
                let mut sorted = ranks.clone();
                sorted.sort_unstable();
                let kth = sorted[sorted.len() - k];
                for (seen, &rank) in ranks.iter().enumerate() {
                    if rank >= kth {
                        let bar = local_sample_bar(Keep::Sample(k), seen as u64 + 1);
                        assert!(
                            rank >= bar,
                            "k {k} run {run}: the rank of invocation {seen} is under the thread's bar"
                        );
                    }
                }
            }
        }
        assert_eq!(local_sample_bar(Keep::Slowest(5), 1_000_000), 0);
        assert!(local_sample_bar(Keep::Sample(10), 1_000_000) > u64::MAX / 100 * 99);
    }

    #[test]
    fn sample_ranks_differ_by_owner_and_kind() {
        let thread = sample_rank(1, OwnerKind::Thread, 1);
        assert_ne!(thread, sample_rank(1, OwnerKind::Thread, 2));
        assert_ne!(thread, sample_rank(1, OwnerKind::Task, 1));
        assert_ne!(thread, sample_rank(2, OwnerKind::Thread, 1));
    }

    #[test]
    fn keep_reads_its_counts() {
        assert_eq!(Keep::from_counts(0, 0), Keep::All);
        assert_eq!(Keep::from_counts(5, 0), Keep::Slowest(5));
        assert_eq!(Keep::from_counts(0, 7), Keep::Sample(7));
        assert_eq!(Keep::Sample(7).counts(), (0, 7));
        assert_eq!(Keep::All.held(), 0);
    }
}
