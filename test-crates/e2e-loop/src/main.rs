use std::time::Duration;

fn main() {
    let pid = std::process::id();
    for i in 0.. {
        let value = e2e_loop::step(i);
        // The pid first, so the test can kill this process (not cargo-calltime).
        println!("{pid} {i} {value}");
        std::thread::sleep(Duration::from_millis(20));
    }
}
