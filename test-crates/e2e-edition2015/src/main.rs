//! Edition 2015: the copy declares `extern crate calltime_rt;` and the counting allocator in the crate root, after
//! its last token, which a line comment follows with no newline at the end of the file. `handle` makes one
//! allocation of 10 bytes per call.

fn main() {
    let mut sum = 0;
    for _ in 0..2 {
        sum += handle();
    }
    println!("sum {}", sum);
}

fn handle() -> usize {
    let bytes = vec![1u8; 10];
    nonzero(&bytes)
}

/// Not a root, so an optimised build wraps its body (with its return type pinned: no `::core` path in 2015).
fn nonzero(bytes: &[u8]) -> usize {
    let mut n = 0;
    for b in bytes {
        if *b != 0 {
            n += 1;
        }
    }
    n
} // the end, no newline