//! Prints the columns the program sees of itself (column!(), Location::caller(), a panic's location): with probes
//! they must be those of a plain build, except on the one line that holds a whole probed body.

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

fn main() {
    std::panic::set_hook(Box::new(|info| {
        let at = info.location().map(|l| format!("{}:{}:{}", l.file(), l.line(), l.column())).unwrap_or_default();
        println!("panic at {at}");
    }));
    // Reads the probed copy under cargo calltime (issue 12 item 2, a known limit): the run warns about it.
    println!("lib.rs has {} bytes", include_str!("lib.rs").len());
    for line in e2e_columns::run() {
        println!("{line}");
    }
    let mut future = pin!(e2e_columns::later(3));
    if let Poll::Ready(line) = future.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        println!("{line}");
    }
}
