//! Folded invocations. Past `fold_at` calls an invocation stops storing one node per call: what it has is merged
//! into call paths (`fold`), and each later call adds one to its path's count and is timed only now and then
//! (`enter_folded`), so a big invocation costs a counter per call instead of two clock reads and a node. Frames keep
//! a key: a node slot for the calls entered before the fold (their guards hold it), `FOLD_KEY | depth` for the later
//! ones.

use std::mem;

use super::{DepthArray, Recorder, FLAG_PANICKED, FOLD_KEY, HOT_CHILDREN, NO_PATH, PARENT_MASK, TIMED_KEY, UNTIMED};
use crate::clock::now;
use crate::retire::{
    consider_path, counted_slot_after, go_quiet_within, is_retired, quiet_within_enabled, retired_state, slot_index,
    slot_may_go_quiet, slot_of, unsettled_calls, CHECK_EVERY, COUNTED, NO_BY, QUIET, QUIET_WITHIN_CALLS,
    QUIET_WITHIN_OPEN_CALLS,
};

/// Call paths a folded invocation may have for `calls_only_retired` to scan them (a few thousand instructions, once
/// per `CHECK_EVERY` samples of a path).
const SCANNED_PATHS: usize = 1024;

/// A path's first random samples, left out of its retirement's estimate: they take the timed exit cold (the
/// tokenizer's `token`: 17-19 ns raw a sample in its first invocation against 13.3 ns later on, which made its
/// retirement's estimate 1.6x its plain time; docs/truth-bench.md, "Thirteenth round").
const COLD_SAMPLES: u64 = CHECK_EVERY;

/// Calls a sibling must have made for a quiet function's ratio to it to stand for the rest of the invocation.
const MIN_SIBLING_CALLS: u64 = 1024;

impl Recorder {
    /// Merges the per-call nodes into call paths. Cold: once per big invocation.
    #[cold]
    #[inline(never)]
    pub(crate) fn fold(&mut self) {
        let _paused = crate::alloc::Paused::new();
        let before = now();
        crate::retire::observe_at_fold(&self.nodes);
        if !self.frame_path.is_allocated(self.max_depth) {
            self.frame_path = DepthArray::new(self.max_depth);
            self.frame_start = DepthArray::new(self.max_depth);
        }
        self.paths.clear();
        self.paths.reserve(self.nodes.len().min(self.cap).max(64));
        self.slot_path.clear();
        self.slot_path.reserve(self.nodes.len());
        for slot in 0..self.nodes.len() {
            let node = self.nodes[slot];
            let path = if slot == 0 {
                self.new_path(NO_PATH, node.index)
            } else {
                let parent = (node.link & PARENT_MASK) as usize;
                let parent_path = if parent < slot { self.slot_path[parent] } else { 0 };
                match self.paths.get(parent_path as usize) {
                    None => NO_PATH,
                    // The child cache first, as `enter_path` does: a loop's callees are the same few paths over and
                    // over, and this skips the sibling walk and a call per node (4,096 at each fold).
                    Some(p) => {
                        let hot = p.hot[node.index as usize % HOT_CHILDREN];
                        match self.paths.get(hot as usize) {
                            Some(h) if h.index == node.index && h.parent == parent_path => hot,
                            _ => self.find_child(parent_path, node.index),
                        }
                    }
                }
            };
            self.slot_path.push(path);
            // Times and flags of these calls are added when the invocation is written: calls still open now end
            // later, through their own guards, exactly as before the fold.
            if let Some(p) = self.paths.get_mut(path as usize) {
                p.calls += 1;
                if p.first_start == UNTIMED {
                    p.first_start = node.start;
                }
            }
        }
        for i in 0..self.depth {
            // SAFETY: i < depth <= max_depth, and frame i was set when it was entered.
            unsafe {
                let path = self.slot_path.get(self.stack.get(i) as usize).copied().unwrap_or(NO_PATH);
                self.frame_path.set(i, path);
            }
        }
        self.folded = true;
        self.fold_at = 0;
        self.limit = 0;
        // The fold is the runtime's work (a pass over thousands of nodes): not in the open calls' times.
        self.shift_open_starts(now().saturating_sub(before));
    }

    /// A new call path under `parent` (`NO_PATH` for the root's), or `NO_PATH` past the cap.
    fn new_path(&mut self, parent: u32, index: u32) -> u32 {
        let _paused = crate::alloc::Paused::new();
        let id = self.paths.len();
        if id >= self.cap || id >= NO_PATH as usize {
            return NO_PATH;
        }
        // A path made at the fold has its calls so far (exact) and is timed at random gaps from there, so which calls
        // are timed never depends on their durations. A path made later times its first call unconditionally (an
        // exact part, like the calls before the fold: a path called once, such as a long loop, then has a time),
        // then the others at random gaps.
        let countdown = if self.folded { 1 } else { self.next_gap() };
        let next_sibling = match self.paths.get_mut(parent as usize) {
            Some(p) => mem::replace(&mut p.first_child, id as u32),
            None => NO_PATH,
        };
        self.paths.push(PathNode {
            calls: 0,
            countdown,
            timed: 0,
            ticks: 0,
            exact_calls: 0,
            exact_ticks: 0,
            cold_sample_ticks: 0,
            first_open: false,
            min: u64::MAX,
            max: 0,
            first_start: UNTIMED,
            index,
            parent,
            first_child: NO_PATH,
            next_sibling,
            hot: [NO_PATH; HOT_CHILDREN],
            flags: 0,
            allocs: 0,
            alloc_bytes: 0,
            errs: 0,
        });
        id as u32
    }

    /// The child path of `parent` for function `index`, created if needed; `NO_PATH` past the cap.
    #[inline(never)]
    fn find_child(&mut self, parent: u32, index: u32) -> u32 {
        let mut child = self.paths[parent as usize].first_child;
        while child != NO_PATH {
            let p = &self.paths[child as usize];
            if p.index == index {
                break;
            }
            child = p.next_sibling;
        }
        if child == NO_PATH {
            child = self.new_path(parent, index);
        }
        if child != NO_PATH {
            self.paths[parent as usize].hot[index as usize % HOT_CHILDREN] = child;
        }
        child
    }

    /// Counts a call of `index` on its call path under the top frame and enters its frame, timed when the path's
    /// countdown runs out; returns the frame's key, `None` past the depth limit (counted as truncated). A call
    /// past the path cap gets a frame with no path, so its callees are not counted on the wrong path.
    #[inline(always)]
    pub(crate) fn enter_path(&mut self, index: u32) -> Option<u32> {
        let depth = self.depth;
        if depth == 0 || depth >= self.max_depth {
            self.truncated += 1;
            return None;
        }
        // SAFETY: 0 < depth < max_depth; frame depth - 1 was set (on entry or by the fold).
        let parent = unsafe { self.frame_path.get(depth - 1) };
        let mut path = NO_PATH;
        let mut key = FOLD_KEY | depth as u32;
        if let Some(p) = self.paths.get(parent as usize) {
            let hot = p.hot[index as usize % HOT_CHILDREN];
            path = match self.paths.get(hot as usize) {
                Some(h) if h.index == index => hot,
                _ => self.find_child(parent, index),
            };
        }
        match self.paths.get_mut(path as usize) {
            Some(p) => {
                p.calls += 1;
                p.countdown -= 1;
                if p.countdown == 0 {
                    key |= TIMED_KEY;
                    let start = self.timed_start(path);
                    // SAFETY: depth < max_depth, checked above; the arrays are allocated once folded.
                    unsafe { self.frame_start.set(depth, start) };
                }
            }
            None => self.truncated += 1,
        }
        // SAFETY: depth < max_depth, checked above.
        unsafe { self.push_frame_at(depth, key, path) };
        Some(key)
    }

    /// Enters the frame at `depth` (== `self.depth`) of a folded invocation; a timed one (`TIMED_KEY` in `key`) has
    /// its start set already.
    ///
    /// # Safety
    /// `depth < max_depth` and the invocation has folded (the arrays are allocated).
    #[inline(always)]
    unsafe fn push_frame_at(&mut self, depth: usize, key: u32, path: u32) {
        // SAFETY: the caller's contract.
        unsafe {
            self.stack.set(depth, key);
            self.frame_path.set(depth, path);
        }
        self.depth = depth + 1;
    }

    /// Starts a timed call of `path`: sets its next countdown and reads the clock.
    #[inline(never)]
    fn timed_start(&mut self, path: u32) -> u64 {
        let gap = self.next_gap();
        let start = now();
        let p = &mut self.paths[path as usize];
        p.countdown = gap;
        // Its first call (paths made after the fold): at most one call of a path is open at a time.
        p.first_open = p.calls == 1;
        if p.first_start == UNTIMED {
            p.first_start = start;
        }
        start
    }

    /// Enters a frame of a folded invocation for `path`, untimed; returns its key.
    pub(crate) fn push_path_frame(&mut self, path: u32) -> Option<u32> {
        if self.depth >= self.max_depth {
            return None;
        }
        let key = FOLD_KEY | self.depth as u32;
        self.push_keyed_frame(key, path);
        Some(key)
    }

    /// Enters an untimed frame of a folded invocation (`key` without `TIMED_KEY`); the caller checked the depth.
    pub(super) fn push_keyed_frame(&mut self, key: u32, path: u32) {
        // SAFETY: the caller checked depth < max_depth; only folded invocations get here.
        unsafe { self.push_frame_at(self.depth, key, path) };
    }

    /// The gap to the next timed call of a path: uniform in 1..2N-1 (mean N). Never shorter for a young path: the
    /// first calls of a recursive function are its biggest subtrees, and timing them more often biased its total.
    #[inline(never)]
    fn next_gap(&mut self) -> u64 {
        if self.time_sample <= 1 {
            return 1;
        }
        let mut x = self.rng;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng = x;
        1 + x % (2 * self.time_sample - 1)
    }

    /// Leaves the top frame of a folded invocation when its key is `slot`, timing it if it was timed.
    #[inline(always)]
    pub(crate) fn leave_folded(&mut self, slot: u32) -> bool {
        let depth = self.depth;
        let flags = if std::thread::panicking() { FLAG_PANICKED } else { 0 };
        // SAFETY: frames 0..depth (depth <= max_depth) were set when entered.
        if depth == 0 || unsafe { self.stack.get(depth - 1) } != slot {
            return self.pop(slot, now());
        }
        self.depth = depth - 1;
        // SAFETY: frame depth - 1 (< max_depth) was set when it was entered or by the fold.
        let path = unsafe { self.frame_path.get(depth - 1) };
        if slot & (FOLD_KEY | TIMED_KEY) == FOLD_KEY | TIMED_KEY {
            // SAFETY: a timed frame's start was set when it was entered.
            let start = unsafe { self.frame_start.get(depth - 1) };
            let end = now();
            if let Some(p) = self.paths.get_mut(path as usize) {
                if p.first_open {
                    p.first_open = false;
                    p.add_exact(end.saturating_sub(start));
                } else {
                    p.add_time(end.saturating_sub(start));
                }
                let samples = p.timed - p.exact_calls;
                if path != 0 && samples % CHECK_EVERY == 0 {
                    let (index, calls, sample_ticks) = (p.index, p.calls, p.ticks - p.exact_ticks);
                    let cold_ticks = p.cold_sample_ticks;
                    // The rule reads the samples after the cold ones (`COLD_SAMPLES`).
                    if samples <= COLD_SAMPLES {
                        p.cold_sample_ticks = sample_ticks;
                    } else if self.calls_only_retired(index) {
                        let warm_ticks = sample_ticks.saturating_sub(cold_ticks);
                        consider_path(index, self.paths[0].index, calls, samples - COLD_SAMPLES, warm_ticks);
                    }
                    self.consider_quiet_within();
                }
            }
        }
        if flags != 0 {
            if let Some(p) = self.paths.get_mut(path as usize) {
                p.flags |= flags;
            }
        }
        true
    }

    /// Lets the retired functions this invocation has counted enough calls of go quiet now rather than when it ends
    /// (a root that runs once for a long time would otherwise count them to the end), with their calls and their
    /// callers' (or a sibling's) calls so far (`calls_so_far`). Enough: `QUIET_WITHIN_OPEN_CALLS` while a call of a
    /// caller is open (its calls of the function are still coming: the tokenizer's `class_of` in its first
    /// invocation), `QUIET_WITHIN_CALLS` with none open (the invocation may be about to end, and going quiet then
    /// would only turn its exact count into an estimate). Checked on a timed exit every `CHECK_EVERY` samples: a loop
    /// over the slots still counted, in order of retirement (a quiet slot has nothing to decide, and most slots of a
    /// long run are quiet).
    #[cold]
    #[inline(never)]
    fn consider_quiet_within(&mut self) {
        if !quiet_within_enabled() {
            return;
        }
        // Every path's every `CHECK_EVERY`th sample triggers a check, and a check that scans the paths costs about
        // 20 k instructions (syn: 287,000 of them, a third of the run; docs/truth-bench.md "Eighth round, after the
        // merges"). A check that scanned and decided nothing doubles the gap to the next (up to `MAX_QUIET_GAP`
        // triggers): a function that becomes ready is seen within twice the triggers it took.
        const MAX_QUIET_GAP: u32 = 1 << 12;
        self.quiet_checks = self.quiet_checks.wrapping_add(1);
        if self.quiet_checks < self.quiet_check_next {
            return;
        }
        let (mut scanned, mut decided) = (false, false);
        let mut after = 0;
        while let Some(slot) = counted_slot_after(after) {
            after = slot;
            let counted = self.retired_calls_of(slot) + unsettled_calls(slot);
            // A cycle's member goes quiet at an invocation's end only: `go_quiet_within` would pass it over after `calls_so_far`'s scan
            // of the paths (syn's expression cluster, at every check).
            if !slot_may_go_quiet(slot) || counted < QUIET_WITHIN_OPEN_CALLS {
                continue;
            }
            let index = slot_index(slot);
            scanned = true;
            match self.calls_so_far(index, slot) {
                Some((calls, per, by)) if by != NO_BY || counted >= QUIET_WITHIN_CALLS => {
                    go_quiet_within(index, calls, per, by);
                    decided = true;
                }
                _ => {}
            }
        }
        self.quiet_check_gap = match (scanned, decided) {
            (true, false) => (self.quiet_check_gap * 2).min(MAX_QUIET_GAP),
            (_, true) => 1,
            (false, false) => self.quiet_check_gap,
        };
        self.quiet_check_next = self.quiet_checks.saturating_add(self.quiet_check_gap);
    }

    /// Calls of retired function `index` (slot `slot`) in this invocation so far (its call paths, from before it
    /// retired, and its counted calls), the calls to take its ratio to, and whose they are (`NO_BY`: its callers').
    /// With no call of a caller open: calls of its callers (the functions of its paths' parents: their paths, and
    /// their counted calls if they retired too). With one open (a loop that runs for the whole invocation, such as
    /// pulldown-cmark's `HtmlWriter::run`), whose calls of it are not all made yet: calls of its busiest probed
    /// sibling under its callers (`Parser::next` there), a function called alongside it, so the tool estimates its
    /// later calls from that one's (an estimate, marked `~`; test `quiet_within_an_open_caller_by_a_sibling` in
    /// calltime-rt/tests/truth.rs states how far off). None when it has no caller here (it retired in an earlier
    /// invocation: it goes quiet at an invocation's end instead), when a caller is quiet (its calls are not
    /// counted), when an open caller has no busy probed sibling, or when the invocation has too many paths or
    /// callers to scan.
    fn calls_so_far(&self, index: u32, slot: usize) -> Option<(u64, u64, u32)> {
        const MAX_CALLERS: usize = 16;
        if self.paths.len() > 4 * SCANNED_PATHS {
            return None;
        }
        let (mut callers, mut found, mut calls) = ([u32::MAX; MAX_CALLERS], 0, 0);
        for p in self.paths.iter().filter(|p| p.index == index) {
            calls += p.calls;
            let caller = self.paths.get(p.parent as usize)?.index;
            if !callers[..found].contains(&caller) {
                *callers.get_mut(found)? = caller;
                found += 1;
            }
        }
        let callers = &callers[..found];
        let open = (0..self.depth).any(|i| {
            // SAFETY: i < depth <= max_depth; frames 0..depth have their path (set on entry or by the fold).
            let path = unsafe { self.frame_path.get(i) };
            self.paths.get(path as usize).is_some_and(|p| callers.contains(&p.index))
        });
        if callers.is_empty() {
            return None;
        }
        let calls = calls + self.retired_calls_of(slot) + unsettled_calls(slot);
        if open {
            let (sibling, sibling_calls) = self.busiest_sibling(index, callers)?;
            return Some((calls, sibling_calls, sibling));
        }
        let mut caller_calls: u64 = self.paths.iter().filter(|p| callers.contains(&p.index)).map(|p| p.calls).sum();
        for &caller in callers {
            match retired_state(caller) {
                COUNTED => caller_calls += self.retired_calls_of(slot_of(caller)) + unsettled_calls(slot_of(caller)),
                s if s >= QUIET => return None,
                _ => {} // probed, or pinned: an async caller, probed
            }
        }
        Some((calls, caller_calls, NO_BY))
    }

    /// The function other than `index` with the most calls in the invocation among those with a path under one of
    /// `callers`' paths, and those calls (on all its paths, plus its counted calls if it retired: what the tool counts
    /// of it); None under `MIN_SIBLING_CALLS`. A sibling that retired and is still counted qualifies: its calls stay
    /// exact to the invocation's end (the tokenizer's `token` for `class_of`, both under `tokenize`, open throughout:
    /// `class_of` then goes quiet within the first invocation instead of counting 88,000 more calls). A quiet one
    /// does not: its calls are no longer counted.
    fn busiest_sibling(&self, index: u32, callers: &[u32]) -> Option<(u32, u64)> {
        const MAX_SIBLINGS: usize = 16;
        let under_caller = |p: &PathNode| self.paths.get(p.parent as usize).is_some_and(|c| callers.contains(&c.index));
        let (mut siblings, mut found) = ([u32::MAX; MAX_SIBLINGS], 0);
        for p in self.paths.iter().filter(|p| p.index != index && retired_state(p.index) < QUIET && under_caller(p)) {
            if !siblings[..found].contains(&p.index) && found < MAX_SIBLINGS {
                siblings[found] = p.index;
                found += 1;
            }
        }
        let (busiest, calls) =
            siblings[..found].iter().map(|&s| (s, self.calls_in_invocation(s))).max_by_key(|&(_, c)| c)?;
        (calls >= MIN_SIBLING_CALLS).then_some((busiest, calls))
    }

    /// Calls of function `index` in this invocation so far: on its call paths, plus its counted calls if it retired.
    fn calls_in_invocation(&self, index: u32) -> u64 {
        let on_paths: u64 = self.paths.iter().filter(|p| p.index == index).map(|p| p.calls).sum();
        if retired_state(index) == COUNTED {
            let slot = slot_of(index);
            on_paths + self.retired_calls_of(slot) + unsettled_calls(slot)
        } else {
            on_paths
        }
    }

    /// True when, on every call path of function `index`, every child path is of a function that retired (or
    /// there is none): its later calls record no callee, so it may retire as a leaf does (retire.rs: only leaves
    /// retire, a caller once its callees did). Every path, not only the one being checked: retirement is per
    /// function, and a function that calls a probed one on another path would leave that callee's calls under its
    /// own caller, a tree that never happened. Checked on a timed exit every `CHECK_EVERY` samples; an invocation
    /// with more than `SCANNED_PATHS` paths keeps its callers probed rather than scan them all that often.
    fn calls_only_retired(&self, index: u32) -> bool {
        if self.paths.len() > SCANNED_PATHS {
            return false;
        }
        let retired = is_retired;
        self.paths.iter().filter(|p| p.index == index).all(|p| {
            let mut child = p.first_child;
            while let Some(c) = self.paths.get(child as usize) {
                if !retired(c.index) {
                    return false;
                }
                child = c.next_sibling;
            }
            true
        })
    }

    /// True once the invocation has folded or has reached the call count where it folds.
    #[inline(always)]
    pub(crate) fn past_fold(&self) -> bool {
        self.nodes.len() >= self.fold_at
    }

    /// The common call of a folded invocation, for `probe::enter_folded`: when the path is in its parent's child
    /// cache and this call is not timed, counts it and enters its frame, returning the frame's key; `None` for
    /// everything else (the caller's slow path). A few loads, a counter and two stores, no register saves.
    ///
    /// # Safety
    /// The invocation has folded (`self.folded`).
    #[inline(always)]
    pub(crate) unsafe fn enter_cached_path(&mut self, index: u32) -> Option<u32> {
        let depth = self.depth;
        if depth > 0 && depth < self.max_depth {
            // SAFETY: 0 < depth < max_depth, the depth arrays are allocated once folded (caller's contract) and frame
            // depth - 1 was set; path ids are checked against paths.len() before use.
            unsafe {
                let parent = self.frame_path.get(depth - 1) as usize;
                let count = self.paths.len();
                if parent < count {
                    let paths = self.paths.as_mut_ptr();
                    let hot = (*paths.add(parent)).hot[index as usize % HOT_CHILDREN];
                    if (hot as usize) < count {
                        let p = &mut *paths.add(hot as usize);
                        if p.index == index && p.countdown > 1 {
                            p.calls += 1;
                            p.countdown -= 1;
                            let key = FOLD_KEY | depth as u32;
                            self.push_frame_at(depth, key, hot);
                            return Some(key);
                        }
                    }
                }
            }
        }
        None
    }

    /// The common exit of a call entered after the fold, for `probe::leave_folded_call`: an untimed call (its key
    /// says so), on top of the stack, not the root. Leaves its frame and returns true; false for everything else
    /// (the caller's slow path). The caller then checks for unwinding (`note_unwinding`), out of line so that this
    /// path saves no registers.
    ///
    /// A key with `FOLD_KEY` is on the stack only in a folded invocation (frames of one that has not folded hold
    /// node slots, and frames below `depth` belong to the invocation being recorded), so the match alone says the
    /// invocation folded.
    #[inline(always)]
    pub(crate) fn leave_untimed(&mut self, slot: u32) -> bool {
        let depth = self.depth;
        // SAFETY: 1 < depth <= max_depth; frame depth - 1 was set when entered.
        if slot & TIMED_KEY == 0 && depth > 1 && unsafe { self.stack.get(depth - 1) } == slot {
            self.depth = depth - 1;
            return true;
        }
        false
    }

    /// After `leave_untimed`: when the call was left by unwinding, flags its call path as `leave_folded` would have.
    #[inline(always)]
    pub(crate) fn note_unwinding(&mut self) {
        if std::thread::panicking() {
            // SAFETY: frame `depth` was just left (depth < max_depth); its path was set when it was entered.
            let path = unsafe { self.frame_path.get(self.depth) };
            if let Some(p) = self.paths.get_mut(path as usize) {
                p.flags |= FLAG_PANICKED;
            }
        }
    }

    /// First poll of an async call once the invocation is past its fold: folds it if needed, counts the call on
    /// its path and enters a frame for this poll. Returns the path, the call's start (async calls are always timed
    /// from their first poll) and the frame's key; `None` past the depth limit.
    pub(crate) fn enter_async_path(&mut self, index: u32) -> Option<(u32, u64, u32)> {
        if !self.folded {
            self.fold();
        }
        let mut key = self.enter_path(index)?;
        let top = self.depth - 1;
        // The frame covers this poll only (untimed); the call's own time runs from here to its completion.
        key &= !TIMED_KEY;
        // SAFETY: enter_path entered frame `top` (< max_depth) just now.
        let path = unsafe {
            self.stack.set(top, key);
            self.frame_path.get(top)
        };
        let start = now();
        if let Some(p) = self.paths.get_mut(path as usize) {
            if p.first_start == UNTIMED {
                p.first_start = start;
            }
            p.first_open = false; // timed whole by `close_path`
        }
        Some((path, start, key))
    }

    /// Call paths of the folded invocation, in order of first entry (parents before children).
    pub(crate) fn paths(&self) -> &[PathNode] {
        &self.paths
    }

    /// The call path each node was folded into.
    pub(crate) fn slot_path(&self) -> &[u32] {
        &self.slot_path
    }

    /// Ends a call entered after the fold whose start is known (async functions are always timed).
    pub(crate) fn close_path(&mut self, path: u32, start: u64, end: u64, flags: u32) {
        if let Some(p) = self.paths.get_mut(path as usize) {
            p.add_exact(end.saturating_sub(start));
            p.flags |= flags;
        }
    }
}

/// One call path of a folded invocation: every call of `index` under the same chain of ancestors.
#[derive(Clone, Copy)]
pub(crate) struct PathNode {
    pub(crate) calls: u64,
    /// Calls left until the next timed one (1: the next call is timed).
    countdown: u64,
    pub(crate) timed: u64,
    pub(crate) ticks: u64,
    /// Of `timed`, the calls timed unconditionally (per-call nodes before the fold, the first call of a path made
    /// after it, async calls) and their ticks; the others were timed at random gaps.
    pub(crate) exact_calls: u64,
    pub(crate) exact_ticks: u64,
    /// The ticks of the path's first `CHECK_EVERY` random samples, left out of its retirement's estimate.
    cold_sample_ticks: u64,
    /// The path's first call is open and timed: it counts as exact.
    first_open: bool,
    pub(crate) min: u64,
    pub(crate) max: u64,
    /// Start of the path's first call (`UNTIMED` until known).
    pub(crate) first_start: u64,
    pub(crate) index: u32,
    pub(crate) parent: u32,
    first_child: u32,
    next_sibling: u32,
    /// Child paths by the low bits of their function index: a loop body calls a few children over and over, and
    /// this finds each without walking the sibling list.
    hot: [u32; HOT_CHILDREN],
    pub(crate) flags: u32,
    /// Self allocations of the path's calls and their bytes (see `Node::allocs`).
    pub(crate) allocs: u64,
    pub(crate) alloc_bytes: u64,
    /// Calls that returned an `Err` (see `outcome`).
    pub(crate) errs: u32,
}

impl PathNode {
    #[inline(always)]
    pub(crate) fn add_time(&mut self, ticks: u64) {
        self.ticks += ticks;
        self.timed += 1;
        self.min = self.min.min(ticks);
        self.max = self.max.max(ticks);
    }

    /// A call timed unconditionally.
    pub(crate) fn add_exact(&mut self, ticks: u64) {
        self.add_time(ticks);
        self.exact_calls += 1;
        self.exact_ticks += ticks;
    }
}
