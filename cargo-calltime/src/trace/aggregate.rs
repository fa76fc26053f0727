//! The whole-run aggregate the runtime writes (`aggregate` records, docs/trace-format.md): every invocation that ran
//! while recording was on, kept or not, by call path, with exact counts and log-linear histograms of the call
//! durations. A trace keeps the last record of its process; a run's files merge theirs ([`RunAggregate::merge`]).

use serde::Serialize;

/// Sub-buckets per power of two of the histograms (as the runtime's `aggregate::bucket_of`).
const SUB_BUCKETS: u64 = 8;
const SUB_BITS: u64 = 3;

/// The smallest duration (ns) histogram bucket `bucket` holds: values under 8 ns have a bucket each, then each power
/// of two has 8 buckets of equal width.
pub fn bucket_low(bucket: u32) -> u64 {
    let bucket = u64::from(bucket);
    if bucket < SUB_BUCKETS {
        return bucket;
    }
    let exponent = bucket / SUB_BUCKETS + SUB_BITS - 1;
    if exponent >= 64 {
        return u64::MAX;
    }
    (SUB_BUCKETS + bucket % SUB_BUCKETS) << (exponent - SUB_BITS)
}

/// The middle of a bucket: what a duration in it is taken to be.
pub fn bucket_middle(bucket: u32) -> u64 {
    let low = bucket_low(bucket);
    low + bucket_low(bucket + 1).saturating_sub(low) / 2
}

/// The last `aggregate` record of a process, or the sum of several processes' ones.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RunAggregate {
    /// When it was written (ns since the trace epoch; the latest of merged ones).
    pub at_ns: u64,
    /// Root invocations folded in.
    pub invocations: u64,
    /// Calls on call paths past the runtime's per-thread path cap: counted, in no path.
    pub untracked_calls: u64,
    /// Trees dropped by the hourly byte budget (`CALLTIME_MAX_BYTES_PER_HOUR`).
    pub dropped_cap: u64,
    /// One tree per root function, in order of first entry.
    pub roots: Vec<AggregatePath>,
    /// Calls of retired functions after they retired (`gr` lines): in no call path.
    pub retired: Vec<super::RetiredCalls>,
    /// Processes whose aggregates are summed here.
    pub processes: u64,
}

/// A whole-run aggregate path of this function index is not a call: it stands for the work spawned from its parent
/// path that ran on other threads (and `SPAWNED_TASKS_INDEX`: as tasks); its children are that work's calls
/// (docs/trace-format.md, "Spawned work").
pub const SPAWNED_THREADS_INDEX: u32 = 0x1FFF_FFFF;
pub const SPAWNED_TASKS_INDEX: u32 = 0x1FFF_FFFE;

/// Where the calls under a path of `func` ran, when it is a spawned-work marker.
pub fn spawned_kind(func: u32) -> Option<super::ThreadKind> {
    match func {
        SPAWNED_THREADS_INDEX => Some(super::ThreadKind::Thread),
        SPAWNED_TASKS_INDEX => Some(super::ThreadKind::Task),
        _ => None,
    }
}

/// Every call of one function under one chain of ancestors, over the whole run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct AggregatePath {
    pub func: u32,
    /// Exact.
    pub calls: u64,
    /// Calls whose own duration is in `histogram` (the calls of folded invocations after the fold are not).
    pub timed: u64,
    /// Total time: the timed calls' sum plus the estimated time of the others; raw (probe cost included).
    pub total_ns: u64,
    pub min_ns: u64,
    pub max_ns: u64,
    /// `(bucket, calls)` of the non-empty histogram buckets, in bucket order (see [`bucket_low`]).
    pub histogram: Vec<(u32, u64)>,
    /// Self time: per call, its time less the union of its children's intervals (spawned work included), summed
    /// over the run (the `gs` line before the path's `g` line); None from a runtime that did not write it, whose
    /// self time is the total less the children's summed totals.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub self_ns: Option<u64>,
    pub children: Vec<AggregatePath>,
}

impl AggregatePath {
    /// The children split by where they ran: the path's own calls, then the calls of the work it spawned on other
    /// threads and as tasks (the children of its marker paths, a marker's own markers flattened: work spawned by
    /// spawned work hangs under the same call), merged by function.
    pub fn children_by_lane(&self) -> [Vec<AggregatePath>; 3] {
        fn spread(children: &[AggregatePath], lane: usize, out: &mut [Vec<AggregatePath>; 3]) {
            for child in children {
                match spawned_kind(child.func) {
                    Some(super::ThreadKind::Thread) => spread(&child.children, 1, out),
                    Some(super::ThreadKind::Task) => spread(&child.children, 2, out),
                    None => merge_paths(&mut out[lane], std::slice::from_ref(child)),
                }
            }
        }
        let mut out = [Vec::new(), Vec::new(), Vec::new()];
        spread(&self.children, 0, &mut out);
        out
    }

    /// The duration under which a fraction `q` of the timed calls fall (a bucket's middle); `None` when no call was
    /// timed.
    pub fn percentile_ns(&self, q: f64) -> Option<u64> {
        let count: u64 = self.histogram.iter().map(|&(_, n)| n).sum();
        if count == 0 {
            return None;
        }
        let rank = ((q * count as f64).ceil() as u64).clamp(1, count);
        let mut seen = 0;
        for &(bucket, n) in &self.histogram {
            seen += n;
            if seen >= rank {
                return Some(bucket_middle(bucket).clamp(self.min_ns, self.max_ns.max(self.min_ns)));
            }
        }
        None
    }

    fn add(&mut self, other: &AggregatePath) {
        let timed_before = self.timed;
        self.calls += other.calls;
        self.timed += other.timed;
        self.total_ns = self.total_ns.saturating_add(other.total_ns);
        self.self_ns = match (self.self_ns, other.self_ns) {
            (Some(a), Some(b)) => Some(a.saturating_add(b)),
            _ => None,
        };
        if other.timed > 0 {
            self.min_ns = if timed_before == 0 { other.min_ns } else { self.min_ns.min(other.min_ns) };
            self.max_ns = self.max_ns.max(other.max_ns);
        }
        for &(bucket, n) in &other.histogram {
            match self.histogram.binary_search_by_key(&bucket, |&(b, _)| b) {
                Ok(at) => self.histogram[at].1 += n,
                Err(at) => self.histogram.insert(at, (bucket, n)),
            }
        }
        merge_paths(&mut self.children, &other.children);
    }
}

fn merge_paths(into: &mut Vec<AggregatePath>, from: &[AggregatePath]) {
    for path in from {
        match into.iter_mut().find(|p| p.func == path.func) {
            Some(same) => same.add(path),
            None => into.push(path.clone()),
        }
    }
}

impl RunAggregate {
    /// Adds another process's aggregate (or an earlier segment's, for a process whose last record is missing).
    pub fn merge(&mut self, other: &RunAggregate) {
        self.at_ns = self.at_ns.max(other.at_ns);
        self.invocations += other.invocations;
        self.untracked_calls += other.untracked_calls;
        self.dropped_cap += other.dropped_cap;
        self.processes += other.processes;
        merge_paths(&mut self.roots, &other.roots);
        for r in &other.retired {
            match self.retired.iter_mut().find(|s| s.func == r.func) {
                Some(same) => {
                    same.calls += r.calls;
                    same.counted += r.counted;
                    same.estimated |= r.estimated;
                }
                None => self.retired.push(*r),
            }
        }
    }

    /// The root tree of function `func`.
    pub fn root(&self, func: u32) -> Option<&AggregatePath> {
        self.roots.iter().find(|r| r.func == func)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(func: u32, calls: u64, histogram: Vec<(u32, u64)>, children: Vec<AggregatePath>) -> AggregatePath {
        let timed = histogram.iter().map(|&(_, n)| n).sum();
        let (min_ns, max_ns) = match (histogram.first(), histogram.last()) {
            (Some(&(lo, _)), Some(&(hi, _))) => (bucket_low(lo), bucket_low(hi + 1) - 1),
            _ => (0, 0),
        };
        AggregatePath { func, calls, timed, total_ns: 0, min_ns, max_ns, histogram, self_ns: None, children }
    }

    #[test]
    fn buckets_are_an_eighth_of_their_values_wide() {
        assert_eq!((0..10).map(bucket_low).collect::<Vec<_>>(), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
        assert_eq!((bucket_low(16), bucket_low(24), bucket_low(25)), (16, 32, 36));
        for bucket in 8..480 {
            let (low, high) = (bucket_low(bucket), bucket_low(bucket + 1));
            assert!(high > low && (high - low) * 8 <= low, "{bucket}");
        }
    }

    #[test]
    fn percentiles_come_from_the_histogram() {
        // 90 calls near 1 µs (bucket of 1024), 10 near 1 ms.
        let (fast, slow) = (bucket_of_ns(1000), bucket_of_ns(1_000_000));
        let p = path(0, 100, vec![(fast, 90), (slow, 10)], vec![]);
        let p50 = p.percentile_ns(0.5).unwrap();
        let p99 = p.percentile_ns(0.99).unwrap();
        assert!((950..=1050).contains(&p50), "{p50}");
        assert!((940_000..=1_060_000).contains(&p99), "{p99}");
        assert_eq!(path(0, 3, vec![], vec![]).percentile_ns(0.5), None);
    }

    #[test]
    fn merging_adds_by_call_path() {
        let mut a = RunAggregate {
            invocations: 2,
            processes: 1,
            roots: vec![path(0, 2, vec![(40, 2)], vec![path(1, 4, vec![(30, 4)], vec![])])],
            ..RunAggregate::default()
        };
        let b = RunAggregate {
            invocations: 1,
            processes: 1,
            roots: vec![path(0, 1, vec![(41, 1)], vec![path(2, 1, vec![], vec![]), path(1, 2, vec![(30, 2)], vec![])])],
            ..RunAggregate::default()
        };
        a.merge(&b);
        assert_eq!((a.invocations, a.processes), (3, 2));
        let root = a.root(0).unwrap();
        assert_eq!((root.calls, root.timed, root.histogram.clone()), (3, 3, vec![(40, 2), (41, 1)]));
        let children: Vec<(u32, u64)> = root.children.iter().map(|c| (c.func, c.calls)).collect();
        assert_eq!(children, [(1, 6), (2, 1)]);
        assert_eq!(root.children[0].histogram, [(30, 6)]);
    }

    /// The bucket of a duration, as the runtime computes it.
    fn bucket_of_ns(value: u64) -> u32 {
        (0..).find(|&b| bucket_low(b + 1) > value).unwrap()
    }
}
