//! A dependency outside the workspace that declares the program's global allocator.

/// The system allocator, under another name.
pub struct Tally;

// SAFETY: forwards to the system allocator.
unsafe impl std::alloc::GlobalAlloc for Tally {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        std::alloc::System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        std::alloc::System.dealloc(ptr, layout)
    }
}

#[global_allocator]
static TALLY: Tally = Tally;
