//! Work started inside an invocation on another thread or task (a closure given to `thread::spawn`, rayon's `join`,
//! a future given to `tokio::spawn`). The rewrite wraps a closure written at the spawn as
//! `{ let __calltime_ticket = ticket(); |args| __calltime_ticket.run(|| body) }` (so the spawning function still
//! infers the closure's signature, references included), a closure passed by name in [`adopt`], and a future in
//! [`adopt_future`].
//!
//! At the spawn, on the spawning thread, the wrapper takes a *ticket*: nothing but one thread-local load when no
//! invocation records there; inside one, the spawning frame (its node slot, or its call path once folded) is noted
//! in the invocation's [`Adoption`], created at its first spawn. Where the work runs, it records into a recorder of
//! its own (a *part*), whose first node (index [`PART_ROOT`]) spans the closure or the future itself, and hands it
//! to the adoption when it ends. The writer writes the invocation's finished parts after its nodes (`p` records);
//! a part still running then is written as outlived, and what it records afterwards is dropped (it is never put
//! into another invocation). Work that runs on the spawning thread inside the same invocation (a rayon job that
//! was not stolen) records as an ordinary call of the frame that runs it. While a part records, its thread's
//! context is the part: a root function entered there is a call in the part, not a new invocation.

use std::cell::Cell;
use std::future::Future;
use std::mem::{self, ManuallyDrop};
use std::pin::Pin;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use crate::clock::now;
use crate::invocation::{
    current, give_back, lock, set_current, task_recorder, OwnedRecorder, RUNTIME, SKIP, TASK_IDS, THREAD_IDS,
};
use crate::recorder::{OwnerKind, Recorder, FLAG_CANCELLED, FLAG_PANICKED};

/// Function index of a part's first node: the spawned closure or future itself (no function of the plan).
pub(crate) const PART_ROOT: u32 = 0x1FFF_FFFF;
/// In the whole-run aggregate, the call path of a part's first node when it ran on another thread (the index of
/// `PART_ROOT`), and when it ran as its own task: its calls are the path's children.
pub(crate) const PART_THREAD_PATH: u32 = PART_ROOT;
pub(crate) const PART_TASK_PATH: u32 = PART_ROOT - 1;
/// Spawns noted per invocation at most; later ones that run elsewhere are counted (`unrecorded`) and run
/// unrecorded.
const MAX_PARTS: usize = 1 << 16;
/// The entry index of a spawn past `MAX_PARTS`.
const CAPPED: usize = usize::MAX;

/// Where a part ran.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum PartKind {
    Thread,
    Task,
}

/// What became of one spawn.
pub(crate) enum PartState {
    /// Spawned, not finished (or not started).
    Pending,
    /// Ran on the spawning thread inside the invocation: its calls are ordinary nodes.
    Inline,
    /// Dropped before it ran (a thread that failed to start, a future never polled).
    Abandoned,
    /// No free recorder when it started: ran unrecorded.
    Unrecorded,
    /// Finished: its recorder, to be written with the invocation.
    Done(Box<Recorder>),
}

pub(crate) struct PartEntry {
    /// The spawning frame: a node slot of the invocation's recorder, or `PATH_KEY | path`.
    pub(crate) key: u32,
    pub(crate) kind: PartKind,
    /// Thread number (shared with the `inv` lines' numbering) or task number.
    pub(crate) id: u64,
    pub(crate) state: PartState,
}

/// The work spawned from one recording context (an invocation, or a part that spawns in turn).
pub(crate) struct Adoption {
    pub(crate) state: Mutex<AdoptState>,
}

pub(crate) struct AdoptState {
    /// Set by the writer when it wrote the invocation: parts ending later are outlived.
    pub(crate) written: bool,
    pub(crate) entries: Vec<PartEntry>,
    /// The aggregate's call path of each entry's spawning frame (`Recorder::append_aggregate_path`), as a range of
    /// `paths`: one buffer that grows, not an allocation per spawn. Kept when the writer takes the entries: a part
    /// whose thread or task starts only after its invocation was written still counts under its spawning call.
    path_ranges: Vec<(u32, u32)>,
    paths: Vec<u32>,
    /// Spawns past `MAX_PARTS`.
    pub(crate) unrecorded: u64,
}

impl Adoption {
    /// An invocation that is never written (`aggregate_only`) keeps its parts that end before its root returns
    /// too, for the aggregate's self time of their spawning calls, and hands them back then ([`root_returned`]).
    fn new() -> Adoption {
        Adoption {
            state: Mutex::new(AdoptState {
                written: false,
                entries: Vec::new(),
                path_ranges: Vec::new(),
                paths: Vec::new(),
                unrecorded: 0,
            }),
        }
    }

    /// For the writer: the spawns, marked written (a part that ends from now on is outlived).
    pub(crate) fn take_for_writing(&self) -> (Vec<PartEntry>, u64) {
        lock(&self.state).take_for_writing()
    }

    /// For the writer: when no spawn left anything to write (each ran inline, or never ran), marks the adoption
    /// written as `take_for_writing` does and returns true, so the invocation is written as one without spawns
    /// (tokei's `LanguageType::parse` notes rayon spawns that all run inline). False, and nothing changed,
    /// otherwise.
    pub(crate) fn taken_if_nothing_to_write(&self) -> bool {
        let mut state = lock(&self.state);
        let nothing = state.unrecorded == 0
            && state.entries.iter().all(|entry| matches!(entry.state, PartState::Inline | PartState::Abandoned));
        if nothing {
            state.take_for_writing();
        }
        nothing
    }

    fn set(&self, at: usize, state: PartState) {
        let mut adoption = lock(&self.state);
        if adoption.written {
            drop(adoption);
            if let PartState::Done(rec) = state {
                give_back(rec);
            }
            return;
        }
        if at == CAPPED {
            adoption.unrecorded += u64::from(matches!(state, PartState::Unrecorded));
        } else if let Some(entry) = adoption.entries.get_mut(at) {
            entry.state = state;
        }
    }
}

/// An invocation's root returned and it was folded into the aggregate: one that is never written hands back the
/// parts that ended so far, and those that end later hand theirs back as they end (they count in the aggregate
/// where they end).
pub(crate) fn root_returned(rec: &Recorder) {
    let Some(adoption) = rec.adoption.as_ref().filter(|_| rec.aggregate_only) else { return };
    let (entries, _) = adoption.take_for_writing();
    for entry in entries {
        if let PartState::Done(part) = entry.state {
            give_back(part);
        }
    }
}

impl AdoptState {
    fn take_for_writing(&mut self) -> (Vec<PartEntry>, u64) {
        self.written = true;
        let entries = mem::take(&mut self.entries);
        (entries, self.unrecorded)
    }
}

impl Drop for AdoptState {
    /// An invocation that was never written (left out, dropped) hands its parts' recorders back to the pool.
    fn drop(&mut self) {
        for entry in self.entries.drain(..) {
            if let PartState::Done(rec) = entry.state {
                give_back(rec);
            }
        }
    }
}

/// A spawn noted in its invocation ([`ticket`]); consumed where the work runs ([`Ticket::run`]). Dropped unused,
/// the spawn counts as abandoned. `Send` and `Sync`.
pub struct Ticket {
    noted: Option<(Arc<Adoption>, usize)>,
    /// The spawning context's invocation id, to tell work that runs inline.
    invocation: u64,
    /// Past `MAX_PARTS`: run with recording off.
    skip: bool,
}

impl Ticket {
    const NONE: Ticket = Ticket { noted: None, invocation: 0, skip: false };
    /// Spawned inside an invocation that is not recorded (sampled out): the work runs with recording off, so a
    /// root it enters does not start an invocation of its own either.
    const SKIPPED: Ticket = Ticket { noted: None, invocation: 0, skip: true };

    #[inline(always)]
    fn take(kind: PartKind) -> Ticket {
        let cur = current();
        if cur.is_null() {
            return Ticket::NONE;
        }
        if cur == SKIP {
            return Ticket::SKIPPED;
        }
        // SAFETY: a real CURRENT is the live recorder of this thread's invocation (or of the task being polled).
        unsafe { note_spawn(cur, kind) }
    }

    /// Takes the noted spawn out, so dropping the ticket afterwards marks nothing.
    fn take_noted(&mut self) -> Option<(Arc<Adoption>, usize)> {
        self.noted.take()
    }

    /// Runs the spawned work where it landed: inline when that is inside the spawning invocation on its own
    /// thread, else recording into a part of it. Returns what `f` returns; a panic passes through.
    #[inline(always)]
    pub fn run<R>(self, f: impl FnOnce() -> R) -> R {
        run_closure(self, f)
    }
}

impl std::fmt::Debug for Ticket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ticket").field("noted", &self.noted.is_some()).finish()
    }
}

/// Notes a spawn in the invocation recording on this thread (one thread-local load when none is).
#[inline(always)]
pub fn ticket() -> Ticket {
    Ticket::take(PartKind::Thread)
}

impl Drop for Ticket {
    /// Inline: a ticket taken outside any invocation has nothing to settle.
    #[inline(always)]
    fn drop(&mut self) {
        if self.noted.is_some() {
            self.abandon();
        }
    }
}

impl Ticket {
    #[cold]
    #[inline(never)]
    fn abandon(&mut self) {
        if let Some((adoption, at)) = self.noted.take() {
            adoption.set(at, PartState::Abandoned);
        }
    }
}

/// Notes a spawn in the current context's adoption (created at its first spawn). Cold: a spawn costs far more.
///
/// # Safety
/// `cur` is the live recorder current on this thread.
#[cold]
#[inline(never)]
unsafe fn note_spawn(cur: *mut Recorder, kind: PartKind) -> Ticket {
    // The adoption's allocations are the runtime's, not the spawning call's.
    let _paused = crate::alloc::Paused::new();
    // SAFETY: the caller's contract; counting is paused, so the allocator does not touch it meanwhile.
    let r = unsafe { &mut *cur };
    let key = r.spawn_key();
    let adoption = Arc::clone(r.adoption.get_or_insert_with(|| Arc::new(Adoption::new())));
    let at = {
        let mut state = lock(&adoption.state);
        if state.entries.len() >= MAX_PARTS {
            // Past the cap: run inline as usual, elsewhere unrecorded (counted then).
            drop(state);
            return Ticket { noted: Some((adoption, CAPPED)), invocation: r.invocation(), skip: false };
        }
        state.entries.push(PartEntry { key, kind, id: 0, state: PartState::Pending });
        let from = state.paths.len();
        if crate::aggregate::enabled() {
            r.append_aggregate_path(key, &mut state.paths);
        }
        let range = (from as u32, state.paths.len() as u32);
        state.path_ranges.push(range);
        state.entries.len() - 1
    };
    Ticket { noted: Some((adoption, at)), invocation: r.invocation(), skip: false }
}

thread_local! {
    /// This thread's number, taken the first time it runs a root or a part: one number per thread, shared by its
    /// `inv` lines and its parts' `p` lines.
    static THREAD_NUMBER: Cell<u64> = const { Cell::new(0) };
}

/// This thread's number (a fresh one at thread teardown, when the thread-local is gone).
pub(crate) fn thread_number() -> u64 {
    THREAD_NUMBER
        .try_with(|id| {
            if id.get() == 0 {
                id.set(THREAD_IDS.fetch_add(1, Relaxed));
            }
            id.get()
        })
        .unwrap_or_else(|_| THREAD_IDS.fetch_add(1, Relaxed))
}

/// A recorder begun for a part, its first node (the part itself) entered at `start`; `None` without a runtime or
/// a free recorder.
fn begin_part(start: u64, kind: PartKind, adoption: &Adoption, at: usize) -> Option<Box<Recorder>> {
    let rt = RUNTIME.get()?;
    let mut rec = task_recorder(rt)?;
    rec.begin(OwnerKind::Task, 0, None);
    let state = lock(&adoption.state);
    if let Some(&(from, to)) = state.path_ranges.get(at) {
        if let Some(path) = state.paths.get(from as usize..to as usize) {
            rec.adopted_path.extend_from_slice(path);
        }
    }
    drop(state);
    rec.part_marker = match kind {
        PartKind::Thread => PART_THREAD_PATH,
        PartKind::Task => PART_TASK_PATH,
    };
    rec.push(PART_ROOT, start);
    Some(rec)
}

/// Restores the previous context when a part (or an unrecorded run) ends, also by unwinding; a recorded part is
/// closed and handed to its adoption.
struct PartScope {
    rec: *mut Recorder,
    prev: *mut Recorder,
    noted: Option<(Arc<Adoption>, usize)>,
    id: u64,
}

impl Drop for PartScope {
    fn drop(&mut self) {
        set_current(self.prev);
        let Some((adoption, at)) = self.noted.take() else { return };
        if self.rec.is_null() || self.rec == SKIP {
            return adoption.set(at, PartState::Unrecorded);
        }
        // SAFETY: the pointer came from Box::into_raw in `run_closure` and nothing else owns it.
        let mut rec = unsafe { Box::from_raw(self.rec) };
        let end = now();
        rec.pop(0, end);
        rec.close(0, end, if std::thread::panicking() { FLAG_PANICKED } else { 0 });
        finish(&adoption, at, PartKind::Thread, self.id, rec);
    }
}

fn finish(adoption: &Adoption, at: usize, kind: PartKind, id: u64, rec: Box<Recorder>) {
    // Every part counts in the whole-run aggregate under its spawning call, written as a tree or not.
    crate::aggregate::fold_part(&rec);
    let mut state = lock(&adoption.state);
    if state.written {
        drop(state);
        return give_back(rec);
    }
    if let Some(entry) = state.entries.get_mut(at) {
        entry.kind = kind;
        entry.id = id;
        entry.state = PartState::Done(rec);
    }
}

/// Runs a spawned closure where it landed: inline in its own invocation, else as a part.
#[inline(always)]
fn run_closure<R>(ticket: Ticket, f: impl FnOnce() -> R) -> R {
    if ticket.noted.is_none() && !ticket.skip {
        // Spawned outside any invocation: nothing to settle, the drop is a test of `noted`.
        return f();
    }
    run_noted(ticket, f)
}

/// [`run_closure`] for a spawn made inside an invocation.
#[inline(never)]
fn run_noted<R>(mut ticket: Ticket, f: impl FnOnce() -> R) -> R {
    let noted = ticket.take_noted();
    let cur = current();
    // SAFETY: a real CURRENT is the live recorder of this thread's invocation (or of the task being polled).
    if cur as usize > SKIP as usize && unsafe { (*cur).invocation() } == ticket.invocation {
        if let Some((adoption, at)) = noted {
            adoption.set(at, PartState::Inline);
        }
        return f();
    }
    let rec = match noted {
        Some((ref adoption, at)) if at != CAPPED => {
            begin_part(now(), PartKind::Thread, adoption, at).map_or(SKIP, Box::into_raw)
        }
        _ => SKIP,
    };
    let id = if rec == SKIP { 0 } else { thread_number() };
    let _scope = PartScope { rec, prev: set_current(rec), noted, id };
    f()
}

/// Wraps a closure run on another thread (`thread::spawn`, a scoped thread, `rayon::join`, `spawn_blocking`): its
/// probed calls hang under the frame that spawned it, in the same invocation. Types, bounds and the result are the
/// closure's own; a panic passes through.
#[inline(always)]
pub fn adopt<F: FnOnce() -> R, R>(f: F) -> impl FnOnce() -> R {
    let ticket = Ticket::take(PartKind::Thread);
    move || run_closure(ticket, f)
}

/// [`adopt`] for a spawned future (`tokio::spawn`, `spawn_local`, other executors' `spawn`).
#[inline(always)]
pub fn adopt_future<F: Future>(fut: F) -> Adopted<F> {
    Adopted { fut: ManuallyDrop::new(fut), ticket: Ticket::take(PartKind::Task), state: FutureState::Unpolled }
}

/// A spawned future recording into a part of the invocation that spawned it. `Send` when the future is.
#[must_use = "futures do nothing unless polled"]
pub struct Adopted<F> {
    fut: ManuallyDrop<F>,
    ticket: Ticket,
    state: FutureState,
}

enum FutureState {
    Unpolled,
    /// Not spawned inside an invocation: polls pass through.
    Inert,
    /// Noted but unrecorded (no free recorder, or past the cap): polled with recording off.
    Skipped(Option<(Arc<Adoption>, usize)>),
    Running {
        rec: OwnedRecorder,
        adoption: Arc<Adoption>,
        at: usize,
        id: u64,
    },
    Done,
}

impl FutureState {
    /// Decides at the first poll; a running part has its first node entered.
    fn begin(ticket: &mut Ticket) -> FutureState {
        let noted = ticket.take_noted();
        match noted {
            None if !ticket.skip => FutureState::Inert,
            None => FutureState::Skipped(None),
            Some((adoption, CAPPED)) => FutureState::Skipped(Some((adoption, CAPPED))),
            Some((adoption, at)) => match begin_part(now(), PartKind::Task, &adoption, at) {
                Some(rec) => {
                    let id = TASK_IDS.fetch_add(1, Relaxed);
                    FutureState::Running { rec: OwnedRecorder::new(rec), adoption, at, id }
                }
                None => FutureState::Skipped(Some((adoption, at))),
            },
        }
    }
}

/// Leaves the part's frame when a poll returns or unwinds, and finishes the part when the future completed.
struct PollScope<'a> {
    state: &'a mut FutureState,
    prev: *mut Recorder,
    ready: bool,
    returned: bool,
}

impl Drop for PollScope<'_> {
    fn drop(&mut self) {
        let finished = self.ready || !self.returned;
        if let FutureState::Running { rec, .. } = &*self.state {
            let end = now();
            // SAFETY: our own recorder, current during this poll.
            let r = unsafe { &mut *rec.ptr() };
            r.pop(0, end);
            if finished {
                r.close(0, end, if self.returned { 0 } else { FLAG_PANICKED });
            }
        }
        set_current(self.prev);
        if finished {
            finish_future(mem::replace(self.state, FutureState::Done));
        }
    }
}

fn finish_future(state: FutureState) {
    match state {
        FutureState::Running { rec, adoption, at, id } => finish(&adoption, at, PartKind::Task, id, rec.into_box()),
        FutureState::Skipped(Some((adoption, at))) => adoption.set(at, PartState::Unrecorded),
        _ => {}
    }
}

impl<F: Future> Future for Adopted<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        // SAFETY: `fut` is structurally pinned: never moved out (Drop drops it in place); the other fields are
        // plain data that is not pinned.
        let this = unsafe { self.get_unchecked_mut() };
        // SAFETY: as above.
        let fut = unsafe { Pin::new_unchecked(&mut *this.fut) };
        let mut first = false;
        if let FutureState::Unpolled = this.state {
            this.state = FutureState::begin(&mut this.ticket);
            first = true;
        }
        let prev = match &this.state {
            FutureState::Unpolled | FutureState::Inert | FutureState::Done => return fut.poll(cx),
            FutureState::Skipped(_) => set_current(SKIP),
            FutureState::Running { rec, .. } => {
                let prev = set_current(rec.ptr());
                if !first {
                    // SAFETY: our own recorder; between polls its stack is empty.
                    unsafe { (*rec.ptr()).push_frame(0) };
                }
                prev
            }
        };
        let mut scope = PollScope { state: &mut this.state, prev, ready: false, returned: false };
        let out = fut.poll(cx);
        scope.returned = true;
        scope.ready = out.is_ready();
        drop(scope);
        out
    }
}

impl<F> Drop for Adopted<F> {
    fn drop(&mut self) {
        /// Restores the context even if the inner future's destructor panics.
        struct Restore(*mut Recorder);
        impl Drop for Restore {
            fn drop(&mut self) {
                set_current(self.0);
            }
        }
        let state = mem::replace(&mut self.state, FutureState::Done);
        if let FutureState::Running { rec, .. } = &state {
            // Cancelled: what the inner future's drop records goes to the part.
            let restore = Restore(set_current(rec.ptr()));
            // SAFETY: dropped in place exactly once; never used again.
            unsafe { ManuallyDrop::drop(&mut self.fut) };
            // SAFETY: our own recorder, live until `state` is finished.
            unsafe { (*rec.ptr()).close(0, now(), FLAG_CANCELLED) };
            drop(restore);
        } else {
            // SAFETY: dropped in place exactly once; never used again.
            unsafe { ManuallyDrop::drop(&mut self.fut) };
        }
        finish_future(state);
    }
}

/// Parallel calls (rayon parallel iterators) started so far; a context's id, so a worker's cached part can never
/// be taken for another call's (0: a context made outside any invocation).
static PAR_IDS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

thread_local! {
    /// The part this thread records the items of one parallel call into: the call's context id, and the part's
    /// recorder (`SKIP`: items run unrecorded; null: items run inline, in the spawning invocation itself).
    static PAR_SLOT: Cell<(u64, *mut Recorder)> = const { Cell::new((0, std::ptr::null_mut())) };
}

/// One parallel call (a rayon parallel iterator's chain, up to the call that consumes it) started inside an
/// invocation: the rewrite makes it at the start of the chain, as `let __calltime_par = &par_context();` in a block
/// around the chain, and each closure written in the chain runs its item through [`ParContext::run`].
///
/// The closures run once per item, mostly on the pool's threads, and one part per item would cost more than most
/// items: a worker enters the call's context once, the first time an item of it runs there (a part of its own,
/// its first node spanning its first item's start to its last item's end), and every later item on that worker
/// only makes that part current while it runs. The parts are closed and handed to the invocation when the context
/// is dropped, after the chain was consumed (its closures borrow the context, so none can still run). Items that
/// run on the spawning thread itself record as ordinary calls of the frame that started the chain. `Sync`.
pub struct ParContext {
    /// 0 outside any invocation: items run as they are.
    id: u64,
    /// The spawning context's invocation id, to tell items that run inline.
    invocation: u64,
    /// Started in an invocation that is not recorded: items elsewhere run with recording off.
    skip: bool,
    spawner: Option<ParSpawner>,
}

/// Where a recorded parallel call hangs, and the parts its workers made.
struct ParSpawner {
    adoption: Arc<Adoption>,
    key: u32,
    path: Vec<u32>,
    /// (entry in the adoption, the part's recorder or `SKIP`, its thread's number).
    parts: Mutex<Vec<(usize, *mut Recorder, u64)>>,
}

// SAFETY: the parts' recorders are owned by the context: a worker uses one only while its item runs (the context is
// borrowed meanwhile), and the context's drop, after every borrow ended, is the only other user.
unsafe impl Send for ParContext {}
// SAFETY: as above; each part's recorder is used by the one thread that made it.
unsafe impl Sync for ParContext {}

impl std::fmt::Debug for ParContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParContext").field("id", &self.id).finish()
    }
}

/// Starts a parallel call's context (one thread-local load when no invocation records on this thread).
#[inline(always)]
pub fn par_context() -> ParContext {
    let cur = current();
    if cur.is_null() {
        return ParContext { id: 0, invocation: 0, skip: false, spawner: None };
    }
    // SAFETY: a real CURRENT is the live recorder of this thread's invocation (or of the task being polled).
    unsafe { note_parallel(cur) }
}

/// [`par_context`] inside an invocation. Cold: once per parallel call.
///
/// # Safety
/// `cur` is null-checked and, unless `SKIP`, the live recorder current on this thread.
#[cold]
#[inline(never)]
unsafe fn note_parallel(cur: *mut Recorder) -> ParContext {
    let id = PAR_IDS.fetch_add(1, Relaxed);
    if cur == SKIP {
        return ParContext { id, invocation: 0, skip: true, spawner: None };
    }
    let _paused = crate::alloc::Paused::new();
    // SAFETY: the caller's contract; counting is paused, so the allocator does not touch it meanwhile.
    let r = unsafe { &mut *cur };
    let key = r.spawn_key();
    let mut path = Vec::new();
    if crate::aggregate::enabled() {
        r.append_aggregate_path(key, &mut path);
    }
    let adoption = Arc::clone(r.adoption.get_or_insert_with(|| Arc::new(Adoption::new())));
    let spawner = ParSpawner { adoption, key, path, parts: Mutex::new(Vec::new()) };
    ParContext { id, invocation: r.invocation(), skip: false, spawner: Some(spawner) }
}

impl ParContext {
    /// Runs one item of the parallel call where it landed (see the type). Returns what `f` returns; a panic passes
    /// through.
    #[inline(always)]
    pub fn run<R>(&self, f: impl FnOnce() -> R) -> R {
        if self.id == 0 {
            return f();
        }
        let (id, rec) = PAR_SLOT.with(Cell::get);
        // SAFETY: a slot of this context holds its part (live until the context drops) or SKIP or null.
        if id == self.id && (rec as usize <= SKIP as usize || unsafe { (*rec).depth } == 1) {
            return run_item(rec, f);
        }
        self.run_cold(f)
    }

    /// The first item of this call on this thread, or an item that lands while another one's probed call is open
    /// on this thread (work stealing): inline, a new part, or unrecorded.
    #[cold]
    #[inline(never)]
    fn run_cold<R>(&self, f: impl FnOnce() -> R) -> R {
        let cur = current();
        // SAFETY: a real CURRENT is the live recorder of this thread's invocation (or of the task being polled).
        if cur as usize > SKIP as usize && unsafe { (*cur).invocation() } == self.invocation {
            PAR_SLOT.with(|slot| slot.set((self.id, std::ptr::null_mut())));
            return f();
        }
        let rec = self.begin_worker();
        PAR_SLOT.with(|slot| slot.set((self.id, rec)));
        run_item(rec, f)
    }

    /// A part for this thread's items (`SKIP` when not recorded), noted in the spawning invocation.
    fn begin_worker(&self) -> *mut Recorder {
        let Some(spawner) = self.spawner.as_ref().filter(|_| !self.skip) else { return SKIP };
        let _paused = crate::alloc::Paused::new();
        let at = {
            let mut state = lock(&spawner.adoption.state);
            if state.entries.len() >= MAX_PARTS {
                state.unrecorded += 1;
                None
            } else {
                // Also when the invocation counts in the aggregate only (written from the start): the part then
                // counts there when it ends, like a spawned thread's.
                state.entries.push(PartEntry {
                    key: spawner.key,
                    kind: PartKind::Thread,
                    id: 0,
                    state: PartState::Pending,
                });
                let from = state.paths.len();
                state.paths.extend_from_slice(&spawner.path);
                let range = (from as u32, state.paths.len() as u32);
                state.path_ranges.push(range);
                Some(state.entries.len() - 1)
            }
        };
        let rec = match at {
            Some(at) => begin_part(now(), PartKind::Thread, &spawner.adoption, at).map_or(SKIP, Box::into_raw),
            None => SKIP,
        };
        let thread = if rec == SKIP { 0 } else { thread_number() };
        lock(&spawner.parts).push((at.unwrap_or(CAPPED), rec, thread));
        rec
    }
}

/// Runs an item with `rec` current (null: inline, as it is), the part's end moved to the item's end.
#[inline(always)]
fn run_item<R>(rec: *mut Recorder, f: impl FnOnce() -> R) -> R {
    if rec.is_null() {
        return f();
    }
    /// Restores the context also when the item unwinds.
    struct Item {
        rec: *mut Recorder,
        prev: *mut Recorder,
    }
    impl Drop for Item {
        #[inline(always)]
        fn drop(&mut self) {
            if self.rec != SKIP {
                // SAFETY: the part's recorder, used by this thread alone while the context is borrowed.
                unsafe { (*self.rec).close(0, now(), 0) };
            }
            set_current(self.prev);
        }
    }
    let _item = Item { rec, prev: set_current(rec) };
    f()
}

impl Drop for ParContext {
    /// The call was consumed: each worker's part is closed at its last item's end and handed to the invocation.
    fn drop(&mut self) {
        let Some(spawner) = self.spawner.take() else { return };
        let parts = mem::take(&mut *lock(&spawner.parts));
        let panicked = std::thread::panicking();
        for (at, rec, thread) in parts {
            if rec == SKIP {
                if at != CAPPED {
                    spawner.adoption.set(at, PartState::Unrecorded);
                }
                continue;
            }
            // SAFETY: made by Box::into_raw in `begin_worker`; no item runs any more (see the type).
            let mut rec = unsafe { Box::from_raw(rec) };
            let end = rec.nodes().first().map_or_else(now, |first| first.end);
            rec.pop(0, end);
            rec.close(0, end, if panicked { FLAG_PANICKED } else { 0 });
            finish(&spawner.adoption, at, PartKind::Thread, thread, rec);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outside_an_invocation_the_wrappers_pass_everything_through() {
        let f = adopt(|| 41 + 1);
        assert_eq!(f(), 42);
        let g = {
            let t = ticket();
            |s: &str| t.run(|| s.len())
        };
        assert_eq!(g("abc"), 3);
        let h = std::thread::spawn(adopt(|| String::from("moved")));
        assert_eq!(h.join().unwrap(), "moved");
        let panicked = std::thread::spawn(adopt(|| panic!("boom"))).join();
        assert!(panicked.is_err());
    }

    fn assert_send<T: Send>(_: &T) {}

    #[test]
    fn adopted_futures_keep_send_and_output() {
        let fut = adopt_future(async { 7 });
        assert_send(&fut);
        struct NoWake;
        impl std::task::Wake for NoWake {
            fn wake(self: Arc<Self>) {}
        }
        let waker = std::task::Waker::from(Arc::new(NoWake));
        let mut cx = Context::from_waker(&waker);
        let mut fut = std::pin::pin!(fut);
        assert_eq!(fut.as_mut().poll(&mut cx), Poll::Ready(7));
    }
}
