//! Work a root hands to other threads (issue 13 item 1): scoped threads, threads joined before the root returns
//! (one of which enters the root function again), and a thread that outlives its root.

use std::sync::mpsc;
use std::thread;
use std::time::Duration;

fn main() {
    let total = handle(3);
    let (tx, rx) = mpsc::channel();
    let late = serve(tx);
    late.join().expect("the late thread ends");
    println!("handled {total}, late {}", rx.recv().expect("the late thread sends its result"));
}

/// Root: scoped threads, then spawned threads joined before it returns.
fn handle(n: u64) -> u64 {
    scoped(n) + joined(n)
}

fn scoped(n: u64) -> u64 {
    let mut results = [0u64; 2];
    thread::scope(|s| {
        let (first, second) = results.split_at_mut(1);
        s.spawn(|| first[0] = work(n));
        s.spawn(|| second[0] = work(n + 1));
    });
    results.iter().sum()
}

fn joined(n: u64) -> u64 {
    let handles: Vec<_> = (0..2)
        .map(|i| thread::spawn(move || if n > 1 && i == 0 { handle(0) } else { work(n + i) }))
        .collect();
    handles.into_iter().map(|h| h.join().expect("a joined thread ends")).sum()
}

/// Root: leaves a thread running that ends long after the root returned.
fn serve(tx: mpsc::Sender<u64>) -> thread::JoinHandle<()> {
    thread::spawn(move || {
        thread::sleep(Duration::from_secs(1));
        tx.send(work(1)).expect("main waits for the result");
    })
}

fn work(n: u64) -> u64 {
    step(n) + step(n * 2)
}

fn step(n: u64) -> u64 {
    (0..1000 + n).fold(0u64, |a, b| a.wrapping_add(b * b)) % 1000
}
