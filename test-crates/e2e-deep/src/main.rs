//! Recursion 5,000 levels deep under the root: past the runtime's default frame-depth limit (4096).

fn main() {
    let levels: u32 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(5_000);
    // A thread with room for the recursion in debug builds.
    let sum = std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(move || run(levels))
        .expect("spawn")
        .join()
        .expect("join");
    println!("{sum}");
}

fn run(levels: u32) -> u64 {
    descend(levels)
}

fn descend(n: u32) -> u64 {
    if n == 0 {
        return 0;
    }
    u64::from(n) + descend(n - 1)
}
