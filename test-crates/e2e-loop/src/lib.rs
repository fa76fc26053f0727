//! A program that never ends by itself: the tests kill it, or it aborts, after a few roots completed.

use std::time::Duration;

pub fn step(i: u64) -> u64 {
    inner(i) + 1
}

fn inner(i: u64) -> u64 {
    i.wrapping_mul(2)
}

/// A root that never returns.
pub fn forever() -> ! {
    loop {
        std::thread::sleep(Duration::from_millis(10));
    }
}
