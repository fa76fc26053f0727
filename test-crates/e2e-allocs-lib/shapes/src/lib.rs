//! The library half of e2e-allocs-lib: `shape` makes one allocation of 8 bytes itself and calls `label`, which
//! makes exactly two (16 and 40 bytes). With the `own-alloc` feature this crate declares the program's global
//! allocator.

use std::hint::black_box;

/// One allocation of 8 bytes, then `label`'s two.
pub fn shape(id: u32) -> usize {
    let boxed = black_box(Box::new(u64::from(id)));
    *boxed as usize + label(id)
}

/// Exactly two allocations: four `u32`s (16 bytes) and a `String` of capacity 40.
#[inline(never)]
pub fn label(id: u32) -> usize {
    let parts: Vec<u32> = black_box(vec![id; 4]);
    let text = black_box(String::with_capacity(40));
    parts.len() + text.capacity()
}

#[cfg(feature = "own-alloc")]
mod own {
    use std::alloc::{GlobalAlloc, Layout, System};

    /// The system allocator, declared by the library.
    pub struct Own;

    // SAFETY: forwards to the system allocator.
    unsafe impl GlobalAlloc for Own {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            System.alloc(layout)
        }
        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            System.dealloc(ptr, layout)
        }
    }

    #[global_allocator]
    static OWN: Own = Own;
}

#[cfg(test)]
mod tests {
    #[test]
    fn one_shape() {
        assert_eq!(super::shape(2), 46);
    }

    #[test]
    fn two_shapes() {
        assert_eq!(super::shape(1) + super::shape(3), 92);
    }
}
