//! Work a root hands to rayon's pool and to a tokio multi-thread runtime (issue 13 item 1): `rayon::join`,
//! `rayon::scope` with spawns inside, and a request handler that spawns tasks and blocking work, waits for them,
//! and leaves one task running past its return. Then every rayon worker runs a root of its own (`tag`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Set by the slow task when it ends: the runtime is kept until then (dropping it would cancel the task).
static SLOW_DONE: AtomicBool = AtomicBool::new(false);

fn main() {
    // Two workers whatever the machine, so the trees and thread numbers compare across machines.
    rayon::ThreadPoolBuilder::new().num_threads(2).build_global().expect("rayon's global pool");
    let pooled = pool(10);
    // Each worker that ran parts of `pool` now runs a root of its own: one thread number for both.
    let tagged: u64 = rayon::broadcast(|ctx| tag(ctx.index() as u64)).iter().sum();
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).build().expect("a tokio runtime");
    let served = runtime.block_on(async {
        let mut total = 0;
        for request in 0..2 {
            total += handler(request).await;
        }
        total
    });
    while !SLOW_DONE.load(Ordering::Acquire) {
        std::thread::sleep(Duration::from_millis(10));
    }
    drop(runtime);
    println!("pool {pooled}, served {served}, tagged {tagged}");
}

/// Root: rayon's join, then a scope whose body spawns two jobs.
fn pool(n: u64) -> u64 {
    let (a, b) = rayon::join(|| work(n), || work(n + 1));
    let mut c = 0;
    rayon::scope(|s| {
        s.spawn(|_| {
            step(1);
        });
        s.spawn(|_| {
            step(2);
        });
        c = step(3);
    });
    a + b + c + tally(4) + named(2)
}

/// Root: a request handler that spawns two tasks and blocking work and waits for them; the second request also
/// leaves a slow task running after it returns.
async fn handler(request: u64) -> u64 {
    let first = tokio::spawn(lookup(request));
    // A method matched by name, given a call of a workspace async fn: a future.
    let again = tokio::runtime::Handle::current().spawn(lookup(request + 2));
    let blocking = tokio::task::spawn_blocking(move || work(request));
    if request == 1 {
        drop(tokio::spawn(slow()));
    }
    let found = first.await.expect("the lookup task ends") + again.await.expect("the second lookup ends");
    found + blocking.await.expect("the blocking work ends")
}

async fn lookup(key: u64) -> u64 {
    tokio::task::yield_now().await;
    step(key) + step(key + 1)
}

/// Waits on blocking work for a second: it ends long after the handler that spawned it was written.
async fn slow() {
    let pause = tokio::task::spawn_blocking(|| std::thread::sleep(Duration::from_secs(1)));
    pause.await.expect("the pause ends");
    step(9);
    SLOW_DONE.store(true, Ordering::Release);
}

/// Root: run once on every rayon worker.
fn tag(n: u64) -> u64 {
    step(n)
}

fn work(n: u64) -> u64 {
    step(n) + step(n * 2)
}

/// Parallel iterators: the closures written in a chain run on the pool's threads, one call per item; their calls
/// hang under `tally`, one part per worker and chain.
fn tally(n: u64) -> u64 {
    use rayon::prelude::*;
    let squares: u64 = (0..n).into_par_iter().map(|i| step(i)).sum();
    let kept = [1u64, 2, 3].par_iter().filter(|&&i| step(i) > 0).count() as u64;
    let longest = vec![5u64, 6].into_par_iter().map(|i| -> u64 { step(i) }).reduce(|| 0, |a, b| a.max(b));
    squares + kept + longest
}

/// A function passed by name to a parallel iterator: run through the chain's context as a closure written there.
fn named(n: u64) -> u64 {
    use rayon::prelude::*;
    (0..n).into_par_iter().map(step).sum()
}

fn step(n: u64) -> u64 {
    (0..1000 + n).fold(0u64, |a, b| a.wrapping_add(b * b)) % 1000
}
