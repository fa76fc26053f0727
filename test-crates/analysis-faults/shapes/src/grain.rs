//! Compiled only with the `grain` feature.

pub fn coarse(n: u64) -> u64 {
    let mut total = 0;
    for i in 0..n {
        total += fine(i);
    }
    total
}

pub fn fine(n: u64) -> u64 {
    let mut total = 0;
    for i in 0..n {
        total += i % 3;
    }
    total
}
