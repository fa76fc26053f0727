//! Two 30 ms waits polled together (as `tokio::join!`/`select!` do): `both` takes ~30 ms of wall time, and each
//! child ~30 ms, so the children overlap. std only, with a tiny spinning executor.
//! `race` polls `fast` and `slow` together and drops `slow` when `fast` is done, as `select!` does.
//! `cargo calltime --root run --depth 3`: the tree shows left and right at 100% each with nothing marking the
//! overlap, `report --format folded` sums them to twice the root's time, and `--format chrome` writes sibling
//! slices that overlap on one thread (not properly nested).
use std::future::{poll_fn, Future};
use std::pin::pin;
use std::task::{Context, Poll, RawWaker, RawWakerVTable, Waker};
use std::time::{Duration, Instant};

async fn wait_until(deadline: Instant) {
    poll_fn(|cx| {
        if Instant::now() >= deadline {
            return Poll::Ready(());
        }
        cx.waker().wake_by_ref();
        Poll::Pending
    })
    .await
}

async fn left() {
    wait_until(Instant::now() + Duration::from_millis(30)).await
}

async fn right() {
    wait_until(Instant::now() + Duration::from_millis(30)).await
}

async fn both() {
    let mut left = pin!(left());
    let mut right = pin!(right());
    let (mut left_done, mut right_done) = (false, false);
    poll_fn(|cx| {
        left_done = left_done || left.as_mut().poll(cx).is_ready();
        right_done = right_done || right.as_mut().poll(cx).is_ready();
        if left_done && right_done {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await
}

async fn slow() {
    wait_until(Instant::now() + Duration::from_millis(50)).await
}

async fn fast() {
    wait_until(Instant::now() + Duration::from_millis(10)).await
}

/// As `select!` does: the first to finish wins and the other is dropped (cancelled).
async fn race() {
    let mut slow = Box::pin(slow());
    let mut fast = pin!(fast());
    poll_fn(|cx| {
        if fast.as_mut().poll(cx).is_ready() {
            return Poll::Ready(());
        }
        let _ = slow.as_mut().poll(cx);
        Poll::Pending
    })
    .await;
    drop(slow);
}

async fn run() {
    both().await;
    race().await;
}

fn noop_waker() -> Waker {
    fn clone(_: *const ()) -> RawWaker {
        RawWaker::new(std::ptr::null(), &VTABLE)
    }
    fn noop(_: *const ()) {}
    static VTABLE: RawWakerVTable = RawWakerVTable::new(clone, noop, noop, noop);
    // SAFETY: every vtable function ignores the null data pointer.
    unsafe { Waker::from_raw(RawWaker::new(std::ptr::null(), &VTABLE)) }
}

fn main() {
    let waker = noop_waker();
    let mut cx = Context::from_waker(&waker);
    let mut task = pin!(run());
    while task.as_mut().poll(&mut cx).is_pending() {}
    println!("done");
}
