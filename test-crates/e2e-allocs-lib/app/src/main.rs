//! The binary half of e2e-allocs-lib: per call, `handle` makes one allocation of 24 bytes itself, then per round
//! calls `shapes::shape` (3 allocations: 8, 16 and 40 bytes, two of them in `shapes::label`) and `pad` (one of 100
//! bytes). What `main` allocates outside the root is not counted.

use std::hint::black_box;

#[cfg(feature = "tally")]
extern crate tally;

fn main() {
    let outside = black_box(vec![0u8; 512]);
    let mut sum = 0;
    for rounds in [1, 2] {
        sum += handle(rounds);
    }
    drop(outside);
    println!("sum {sum}");
}

fn handle(rounds: u32) -> usize {
    let own = black_box(vec![0u64; 3]);
    let mut sum = own.len();
    for id in 0..rounds {
        sum += shapes::shape(id);
        sum += pad();
    }
    sum
}

#[inline(never)]
fn pad() -> usize {
    black_box(Vec::<u8>::with_capacity(100)).capacity()
}
