//! A program that never ends by itself: the test kills it after a few roots completed.

pub fn step(i: u64) -> u64 {
    inner(i) + 1
}

fn inner(i: u64) -> u64 {
    i.wrapping_mul(2)
}
