//! Functions that return `Err` exactly N of M times, in every form the rewrite must keep working: `?` with a `From`
//! conversion, `return Err`, `io::Result`, an alias ending in `Result`, a `Box<dyn Error>` coercion, a borrow handed
//! back through `&mut self`, const generics, `unsafe fn`, `impl Trait` inside the result, an async fn, a non-std
//! type named `*Result` (never counted) and a `#[track_caller]` function (not counted: its location must stay).
//! `cargo calltime --root run --format json`: `parse_even` errs 3 of 6 calls, `checked` 2 of 6, `io_step` 1 of 4,
//! `boxed` 1 of 2, `slot` 1 of 3, `pick` 1 of 3, `raw` 1 of 2, `evens` 1 of 2, `fetch` 2 of 4,
//! `owned_with_item` 1 of 3.
#![deny(warnings)]

use std::error::Error;
use std::fmt;
use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, RawWaker, RawWakerVTable, Waker};

#[derive(Debug)]
struct Odd(u32);

impl fmt::Display for Odd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} is odd", self.0)
    }
}

impl Error for Odd {}

#[derive(Debug)]
struct AppError(String);

impl From<Odd> for AppError {
    fn from(odd: Odd) -> AppError {
        AppError(odd.to_string())
    }
}

type AppResult<T> = Result<T, AppError>;

fn parse_even(n: u32) -> Result<u32, Odd> {
    if n % 2 == 1 {
        return Err(Odd(n));
    }
    Ok(n / 2)
}

/// `?` converts with `From`; errs when `n` is odd or its half is 3.
fn checked(n: u32) -> AppResult<u32> {
    let half = parse_even(n)?;
    if half == 3 {
        return Err(AppError(format!("{n} halves to 3")));
    }
    Ok(half)
}

fn io_step(n: u32) -> std::io::Result<u32> {
    if n == 3 {
        Err(std::io::Error::new(std::io::ErrorKind::Other, "three"))
    } else {
        Ok(n)
    }
}

/// The error is coerced to `Box<dyn Error>` by the declared return type.
fn boxed(n: u32) -> Result<u32, Box<dyn Error>> {
    if n > 1 {
        return Err(Box::new(Odd(n)));
    }
    Ok(n)
}

struct Slots {
    values: Vec<u32>,
}

impl Slots {
    /// Hands back a borrow of `self` through the result.
    fn slot(&mut self, at: usize) -> Result<&mut u32, String> {
        self.values.get_mut(at).ok_or_else(|| format!("no slot {at}"))
    }
}

fn pick<const N: usize>(values: [u32; N], at: usize) -> Result<u32, String> {
    values.get(at).copied().ok_or(format!("{at} >= {N}"))
}

/// # Safety
/// `p` is valid for reads.
unsafe fn raw(p: *const u32) -> Result<u32, String> {
    let v = *p;
    if v == 0 {
        Err("zero".to_owned())
    } else {
        Ok(v)
    }
}

fn evens(limit: u32) -> Result<impl Iterator<Item = u32>, String> {
    if limit == 0 {
        return Err("empty".to_owned());
    }
    Ok((0..limit).filter(|n| n % 2 == 0))
}

async fn fetch(n: u32) -> Result<u32, AppError> {
    let half = parse_even(n)?;
    Ok(half + 1)
}

/// Not std's `Result`: nothing to count, and it must still compile.
enum LookupResult {
    Found(u32),
    Missing,
}

fn lookup(n: u32) -> LookupResult {
    if n > 2 {
        LookupResult::Missing
    } else {
        LookupResult::Found(n)
    }
}

#[track_caller]
fn located(fail: bool) -> Result<u32, String> {
    let at = std::panic::Location::caller();
    if fail {
        Err(format!("failed at line {}", at.line()))
    } else {
        Ok(at.line())
    }
}

fn block_on<F: Future>(fut: F) -> F::Output {
    fn noop(_: *const ()) {}
    fn clone(_: *const ()) -> RawWaker {
        RawWaker::new(std::ptr::null(), &VTABLE)
    }
    static VTABLE: RawWakerVTable = RawWakerVTable::new(clone, noop, noop, noop);
    // SAFETY: every vtable function ignores the null data pointer.
    let waker = unsafe { Waker::from_raw(RawWaker::new(std::ptr::null(), &VTABLE)) };
    let mut cx = Context::from_waker(&waker);
    let mut fut = pin!(fut);
    loop {
        if let Poll::Ready(out) = fut.as_mut().poll(&mut cx) {
            return out;
        }
    }
}

/// A parameter taken by value and a nested item (a `static`: two copies of the body would be two statics; a nested
/// `fn` alone may be written twice): the guard form, its result noted only when its guard records (an optimised
/// build's `rewrite::guarded_err_wrap`).
fn owned_with_item(text: String) -> Result<u32, std::num::ParseIntError> {
    static FACTOR: u32 = 2;
    fn trimmed(text: &str) -> &str {
        text.trim()
    }
    let n: u32 = trimmed(&text).parse()?;
    Ok(n * FACTOR)
}

fn run() {
    for text in [" 4 ", "x", "5"] {
        println!("owned_with_item({text:?}) = {:?}", owned_with_item(text.to_owned()));
    }
    for n in 1..=6 {
        println!("checked({n}) = {:?}", checked(n));
    }
    for n in 0..4 {
        println!("io_step({n}) = {:?}", io_step(n).map_err(|e| e.to_string()));
    }
    for n in 1..=2 {
        println!("boxed({n}) = {:?}", boxed(n).map_err(|e| e.to_string()));
    }
    let mut slots = Slots { values: vec![1, 2] };
    for at in 0..3 {
        if let Ok(v) = slots.slot(at) {
            *v += 10;
        }
    }
    println!("slots = {:?}", slots.values);
    for at in 0..3 {
        println!("pick({at}) = {:?}", pick([7, 8], at));
    }
    for v in [5u32, 0] {
        // SAFETY: `v` is a live local.
        println!("raw({v}) = {:?}", unsafe { raw(&v) });
    }
    for limit in [0, 5] {
        println!("evens({limit}) = {:?}", evens(limit).map(|it| it.collect::<Vec<_>>()));
    }
    for n in 1..=4 {
        println!("fetch({n}) = {:?}", block_on(fetch(n)).map_err(|e| e.0));
    }
    for n in 1..=3 {
        match lookup(n) {
            LookupResult::Found(v) => println!("lookup({n}) = {v}"),
            LookupResult::Missing => println!("lookup({n}) missing"),
        }
    }
    println!("located = {:?} {:?}", located(false), located(true));
}

fn main() {
    run();
}
