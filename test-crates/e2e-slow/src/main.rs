//! A request loop with a few slow requests injected: `handle` runs 500 times, and requests 50, 150, ..., 450 (5 of
//! them) take the slow path, which sleeps 20 ms. What `--slower-than`, `--keep-slowest` and `--keep-sample` keep.

use std::time::Duration;

fn parse(request: u64) -> u64 {
    let mut h = request;
    for _ in 0..8 {
        h = h.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (h >> 29);
    }
    h
}

fn slow_path(request: u64) -> u64 {
    std::thread::sleep(Duration::from_millis(20));
    parse(request) ^ 1
}

fn handle(request: u64) -> u64 {
    if request % 100 == 50 {
        slow_path(request)
    } else {
        parse(request)
    }
}

fn main() {
    let mut total = 0u64;
    for request in 0..500 {
        total = total.wrapping_add(handle(request));
    }
    println!("{total}");
}
