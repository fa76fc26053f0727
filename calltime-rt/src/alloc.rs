//! The counting global allocator: `cargo calltime` declares it in the crate root of the executable it builds (or
//! wraps the program's own `#[global_allocator]` in it), so its fast path is compiled into the executable, where the
//! thread-local is one `%fs`-relative load (the runtime's rlib would reach it through a TLS call's register saves).
//! Each allocation made while an invocation is recording on this thread (or in this task's poll) is added to the
//! innermost open call; outside invocations it costs that load, a compare and a branch before the wrapped allocator
//! runs.

use std::alloc::{GlobalAlloc, Layout};
use std::ops::Deref;
use std::ptr;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

use crate::invocation::{current, replace_current, set_current, SKIP};
use crate::recorder::Recorder;

/// Wraps a global allocator (the system's, or the program's own `#[global_allocator]`) and counts, per call, the
/// allocations and bytes asked for while an invocation records. `alloc`, `alloc_zeroed` and `realloc` each count
/// one allocation of the size asked for (`realloc`: the new size); `dealloc` is not counted.
#[derive(Debug, Default)]
pub struct CountingAlloc<A>(pub A);

impl<A> Deref for CountingAlloc<A> {
    type Target = A;

    /// The wrapped allocator, so a program that calls methods on its allocator static keeps compiling.
    fn deref(&self) -> &A {
        &self.0
    }
}

/// `CURRENT` while [`detect_counting`] allocates: not a recorder, only a question to the counting allocator.
const DETECT: *mut Recorder = 2 as *mut Recorder;

/// A counting allocator is installed: its slow path answered [`detect_counting`]'s allocation.
static COUNTING: AtomicBool = AtomicBool::new(false);

/// Whether an allocation now is counted: the fast path, inlined into the executable's allocator (a compare with a
/// thread-local, and the caller's branch). The counted path reads the context again rather than taking it as an
/// argument, so the fast path does not load it into a register.
#[inline(always)]
fn recording() -> bool {
    current() as usize > SKIP as usize
}

/// The slow path: counts one allocation of `bytes`, inlined into a cold function per counted method that then
/// allocates and returns, so the fast path is a tail call away from it and saves no registers.
#[inline(always)]
fn count(bytes: usize) {
    let rec = current();
    if rec == DETECT {
        COUNTING.store(true, Relaxed);
        return;
    }
    // SAFETY: a real CURRENT is the live recorder of this thread's invocation (or of the task being polled);
    // the runtime's own allocations while it holds a reference to it are made with counting paused.
    unsafe { Recorder::count_alloc(rec, bytes as u64) }
}

/// Whether the program's global allocator counts allocations (it is a [`CountingAlloc`]): one allocation made with
/// `CURRENT = DETECT` reaches the slow path only then. Called once, when the runtime is set up, before the trace's
/// header (its `allocs` setting) is written.
pub(crate) fn detect_counting() {
    let saved = replace_current(DETECT);
    drop(std::hint::black_box(Box::new(0u64)));
    replace_current(saved);
}

/// Whether [`detect_counting`] found a counting allocator.
pub(crate) fn counting() -> bool {
    COUNTING.load(Relaxed)
}

// SAFETY: every method forwards to the wrapped allocator with the same arguments; counting touches no memory the
// allocator hands out.
unsafe impl<A: GlobalAlloc> GlobalAlloc for CountingAlloc<A> {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if recording() {
            // SAFETY: the caller's contract, passed on.
            unsafe { self.counted_alloc(layout) }
        } else {
            // SAFETY: as above.
            unsafe { self.0.alloc(layout) }
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if recording() {
            // SAFETY: the caller's contract, passed on.
            unsafe { self.counted_alloc_zeroed(layout) }
        } else {
            // SAFETY: as above.
            unsafe { self.0.alloc_zeroed(layout) }
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.0.dealloc(ptr, layout) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if recording() {
            // SAFETY: the caller's contract, passed on.
            unsafe { self.counted_realloc(ptr, layout, new_size) }
        } else {
            // SAFETY: as above.
            unsafe { self.0.realloc(ptr, layout, new_size) }
        }
    }
}

// The counted paths, cold and out of line (see `count`). Each has its `GlobalAlloc` method's safety contract.
impl<A: GlobalAlloc> CountingAlloc<A> {
    #[cold]
    #[inline(never)]
    unsafe fn counted_alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        // SAFETY: the caller's contract, passed on.
        unsafe { self.0.alloc(layout) }
    }

    #[cold]
    #[inline(never)]
    unsafe fn counted_alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        // SAFETY: the caller's contract, passed on.
        unsafe { self.0.alloc_zeroed(layout) }
    }

    #[cold]
    #[inline(never)]
    unsafe fn counted_realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size);
        // SAFETY: the caller's contract, passed on.
        unsafe { self.0.realloc(ptr, layout, new_size) }
    }
}

/// Counting stops while it lives: the runtime's own allocations inside an invocation (a node buffer growing, a
/// fold, a new call path) are neither charged to the user's calls nor counted into the structures being resized.
pub(crate) struct Paused(*mut Recorder);

impl Paused {
    #[inline]
    pub(crate) fn new() -> Paused {
        Paused(set_current(ptr::null_mut()))
    }
}

impl Drop for Paused {
    #[inline]
    fn drop(&mut self) {
        set_current(self.0);
    }
}
