//! Allocations per node: `handle` makes one allocation of 24 bytes itself and calls `allocating` (exactly 3
//! allocations: 16, 100 and 1000 bytes) and `quiet` (none) per round; what `main` allocates outside the root is
//! not counted. This program has its own global allocator, which the copy wraps in the counting one; code that
//! uses the allocator static keeps working.

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The program's own allocator: the system's, counting its calls in a way the program reads back.
struct Tally {
    calls: AtomicUsize,
}

impl Tally {
    fn calls(&self) -> usize {
        self.calls.load(Ordering::Relaxed)
    }
}

// SAFETY: forwards to the system allocator.
unsafe impl GlobalAlloc for Tally {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        self.calls.fetch_add(1, Ordering::Relaxed);
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
}

#[global_allocator]
static TALLY: Tally = Tally { calls: AtomicUsize::new(0) };

fn main() {
    let outside = black_box(vec![0u8; 4096]);
    for rounds in [1, 3] {
        handle(rounds);
    }
    drop(outside);
    println!("own allocator used: {}", TALLY.calls() > 0);
}

fn handle(rounds: usize) {
    let own = black_box(vec![0u64; 3]);
    for _ in 0..rounds {
        allocating();
        quiet();
    }
    drop(own);
}

#[inline(never)]
fn allocating() {
    let pair = black_box(Box::new([1u64, 2]));
    let bytes: Vec<u8> = black_box(Vec::with_capacity(100));
    let text = black_box(String::with_capacity(1000));
    drop((pair, bytes, text));
}

#[inline(never)]
fn quiet() {
    black_box(());
}
