//! The recorder's side of `Err` counting (`crate::outcome`): the flag on a per-call node, the count on a call path.

use super::{Recorder, FLAG_ERR, NO_PATH, PARENT_BITS};

impl Recorder {
    /// The top frame returned an `Err`, if it is a call of `index`: a per-call node gets `FLAG_ERR`; in a folded
    /// invocation the frame's call path counts it (calls entered before the fold included: the writer adds only
    /// the flags of nodes closed before it).
    pub(crate) fn note_err(&mut self, index: u32) {
        let depth = self.depth;
        if depth == 0 {
            return;
        }
        if self.folded {
            // SAFETY: frames 0..depth of a folded invocation have their path set (at the fold or when entered).
            let path = unsafe { self.frame_path.get(depth - 1) };
            if path == NO_PATH {
                return;
            }
            if let Some(p) = self.paths.get_mut(path as usize) {
                if p.index == index {
                    p.errs = p.errs.saturating_add(1);
                }
            }
            return;
        }
        // SAFETY: frames 0..depth were set when they were entered.
        let slot = unsafe { self.stack.get(depth - 1) };
        if let Some(node) = self.nodes.get_mut(slot as usize) {
            if node.index == index {
                node.link |= FLAG_ERR << PARENT_BITS;
            }
        }
    }
}
