//! Allocations per call: the counting allocator (`crate::alloc`) adds each allocation to the innermost open call
//! of the recording context, so the probes do no work for it beyond zeroing two fields of a new node.

use super::{Recorder, NO_PATH};

impl Recorder {
    /// Adds one allocation of `bytes` to the call on top of the frame stack: its node before the fold, its call path
    /// after. Nothing when no frame is open.
    ///
    /// # Safety
    /// `rec` is the live recorder current on this thread, and no reference to it is in use: the runtime's own code
    /// that allocates while holding one runs with counting paused (`crate::alloc::Paused`).
    #[inline(always)]
    pub(crate) unsafe fn count_alloc(rec: *mut Recorder, bytes: u64) {
        // SAFETY: the caller's contract gives exclusive access for the duration of this call.
        let r = unsafe { &mut *rec };
        let depth = r.depth;
        if depth == 0 {
            return;
        }
        if !r.folded {
            // SAFETY: frame depth - 1 was set when entered (depth <= max_depth).
            let slot = unsafe { r.stack.get(depth - 1) } as usize;
            if let Some(node) = r.nodes.get_mut(slot) {
                node.allocs += 1;
                node.alloc_bytes += bytes;
            }
            return;
        }
        // A folded invocation keeps every open frame's call path in `frame_path` (the fold sets it for the frames
        // entered before it).
        // SAFETY: as above; folded invocations have their frame arrays allocated.
        let path = unsafe { r.frame_path.get(depth - 1) };
        if path == NO_PATH {
            return;
        }
        if let Some(p) = r.paths.get_mut(path as usize) {
            p.allocs += 1;
            p.alloc_bytes += bytes;
        }
    }
}
