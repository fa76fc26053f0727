//! A root that calls a tiny (but not trivial: it loops) function 20,000 times, and a slower one a few times: the
//! first is what the overhead note names and `--exclude-fast` leaves out.

fn mix(x: u64) -> u64 {
    let mut h = x;
    for _ in 0..2 {
        h = h.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (h >> 29);
    }
    h
}

fn slow(x: u64) -> u64 {
    std::thread::sleep(std::time::Duration::from_millis(1));
    mix(x)
}

fn run(n: u64) -> u64 {
    let mut total = 0u64;
    for i in 0..n {
        total = total.wrapping_add(mix(i));
    }
    for i in 0..3 {
        total ^= slow(i);
    }
    total
}

fn main() {
    println!("{}", run(20_000));
}
