//! `Err` returns: a function returning a `Result` has its body wrapped by the rewrite so that its result passes
//! [`Outcome::note`] before it returns. An `Ok` costs one branch; an `Err` one out-of-line call that marks the
//! current node (or counts on its call path, in a folded invocation). Nothing allocates, locks or formats.

use crate::invocation::{current, SKIP};

/// A function's result on its way out, as the rewritten body hands it to the runtime.
pub struct Outcome<'a, T: ?Sized>(pub &'a T);

impl<T, E> Outcome<'_, Result<T, E>> {
    /// Counts an `Err` returned by function `index`. An inherent method, so it wins over [`NotAResult::note`]
    /// whenever the result is std's `Result`.
    #[inline(always)]
    pub fn note(&self, index: u32) {
        if self.0.is_err() {
            err_returned(index);
        }
    }
}

/// The fallback for a return type whose name ends in `Result` without being std's `Result` (an enum
/// `LookupResult`): nothing to count. The rewrite imports it anonymously next to each note.
pub trait NotAResult {
    /// Does nothing: only std's `Result` has an `Err` to count.
    #[inline(always)]
    fn note(&self, _index: u32) {}
}

impl<T: ?Sized> NotAResult for Outcome<'_, T> {}

/// Runs a wrapped body: a closure called through an `FnOnce` bound, so it may hand back borrows of what it
/// captured (as the function body it replaces could).
#[inline(always)]
pub fn call_once<R, F: FnOnce() -> R>(body: F) -> R {
    body()
}

/// Marks the `Err` on the current frame when it is function `index`'s (a function whose probe recorded nothing,
/// retired or past a cap, leaves its caller's frame current: that one is left alone).
#[cold]
#[inline(never)]
fn err_returned(index: u32) {
    let rec = current();
    if rec as usize <= SKIP as usize {
        return;
    }
    // SAFETY: a non-null, non-SKIP CURRENT points to the live recorder owned by this thread or by the task being
    // polled on it, and nothing else uses it during this call.
    unsafe { (*rec).note_err(index) }
}
