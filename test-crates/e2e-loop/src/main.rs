use std::time::Duration;

/// With no argument, loops for ever calling the root `step`; `--stuck` enters the root `forever` and never leaves
/// it; `--abort-after N` aborts right after the Nth `step` returned.
fn main() {
    let pid = std::process::id();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let abort_after = match args.as_slice() {
        [flag] if flag == "--stuck" => {
            println!("{pid} stuck");
            e2e_loop::forever()
        }
        [flag, n] if flag == "--abort-after" => n.parse::<u64>().ok(),
        _ => None,
    };
    for i in 0.. {
        let value = e2e_loop::step(i);
        // The pid first, so the test can kill this process (not cargo-calltime).
        println!("{pid} {i} {value}");
        if abort_after == Some(i + 1) {
            std::process::abort();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
