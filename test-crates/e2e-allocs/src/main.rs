//! Allocations per node: `handle` makes one allocation of 24 bytes itself and calls `allocating` (exactly 3
//! allocations: 16, 100 and 1000 bytes) and `quiet` (none) per round; what `main` allocates outside the root is
//! not counted.

use std::hint::black_box;

fn main() {
    let outside = black_box(vec![0u8; 4096]);
    for rounds in [1, 3] {
        handle(rounds);
    }
    drop(outside);
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
