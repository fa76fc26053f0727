//! Every function form the rewrite has to get right, reached from `run_all`. The program's output must be the same
//! with and without probes, and the build must stay free of warnings.
#![deny(warnings)]

use std::fmt::Display;
use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

pub trait Shape {
    fn area(&self) -> u32;
}

pub struct Square(pub u32);

impl Shape for Square {
    fn area(&self) -> u32 {
        self.0 * self.0
    }
}

#[derive(Debug)]
pub struct ParseFailed;

impl From<std::num::ParseIntError> for ParseFailed {
    fn from(_: std::num::ParseIntError) -> ParseFailed {
        ParseFailed
    }
}

/// `?` converts through From: needs the return-type pin inside the async block.
pub async fn parse_twice(text: &str) -> Result<u32, ParseFailed> {
    let n: u32 = text.parse()?;
    Ok(n * 2)
}

/// Coercion to a trait object in the tail expression.
pub async fn boxed(side: u32) -> Box<dyn Shape> {
    Box::new(Square(side))
}

/// `impl Trait` in return position: erased, no pin.
pub async fn shown(n: u32) -> impl Display {
    n + 1
}

/// An early `return` and a generic.
pub async fn first_or<T: Clone>(items: &[T], fallback: T) -> T {
    if let Some(first) = items.first() {
        return first.clone();
    }
    fallback
}

/// Unit return and an inner attribute.
pub async fn nothing() {
    #![allow(unused_variables)]
    let unused = 1;
}

/// A future from a plain function: the `async move` block is probed.
pub fn later(n: u32) -> impl Future<Output = u32> {
    async move { n + 100 }
}

pub struct Counter {
    pub hits: u32,
}

impl Counter {
    /// An async method borrowing `self`.
    pub async fn bump(&mut self) -> u32 {
        self.hits += 1;
        self.hits
    }

    pub fn get(&self) -> u32 {
        #![allow(clippy::let_and_return)]
        let hits = self.hits;
        hits
    }
}

/// Sync forms: `#[track_caller]`, `unsafe fn`, `extern "C"`, a nested fn, `impl Trait` argument.
#[track_caller]
pub fn caller_line() -> u32 {
    std::panic::Location::caller().line()
}

/// # Safety
/// `p` must be valid.
pub unsafe fn read(p: *const u32) -> u32 {
    *p
}

pub extern "C" fn doubled(x: u32) -> u32 {
    fn inner(x: u32) -> u32 {
        x * 2
    }
    inner(x)
}

pub fn total(shapes: impl IntoIterator<Item = Box<dyn Shape>>) -> u32 {
    shapes.into_iter().map(|s| s.area()).sum()
}

pub const fn limit() -> u32 {
    10
}

/// `line!()` must not move: the probes add no newline.
pub fn where_am_i() -> u32 {
    line!()
}

/// Written twice by an optimised build's rewrite (a body that declares no item): labels, early `return`s, a `const`,
/// a closure and statement macros, in both copies.
pub fn first_evens(rows: &[&[u32]]) -> Option<u32> {
    const LIMIT: u32 = 1000;
    let mut sum = 0;
    'rows: for row in rows {
        for &x in row.iter() {
            if x > LIMIT {
                return None;
            }
            if x % 2 == 0 {
                sum += x;
                continue 'rows;
            }
        }
    }
    let checked = |s: u32| s.checked_add(LIMIT - LIMIT);
    assert!(sum < LIMIT, "{sum}");
    checked(sum)
}

/// `?` in a body whose `Err` returns are counted (in the cold copy only).
pub fn parsed_sum(a: &str, b: &str) -> Result<u32, std::num::ParseIntError> {
    let x: u32 = a.parse()?;
    Ok(x + b.parse::<u32>()?)
}

/// A `static` declared in the body: written once (two copies would be two counters).
pub fn calls_so_far() -> usize {
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1
}

/// An `impl` declared in the body: written once (two copies would conflict).
pub fn wrapped(x: u32) -> u32 {
    struct Wrapper(u32);
    impl Wrapper {
        fn get(&self) -> u32 {
            self.0
        }
    }
    Wrapper(x).get()
}

/// A body of `IN_PLACE_BODY` bytes and more that declares an item (a local `macro_rules!`, as tokei's
/// `perform_multi_line_analysis`): in `run_in`'s closure in an optimised build, with `return` from inside its loop,
/// `continue` and a `break` with a value, as the plain build runs it.
pub fn scan_words(words: &[&str], stop: &str) -> Option<usize> {
    let mut skip = 0;
    let mut letters = 0;
    macro_rules! skip {
        ($n:expr) => {{
            skip = $n;
        }};
    }
    for (i, word) in words.iter().enumerate() {
        if skip != 0 {
            skip -= 1;
            continue;
        }
        if *word == stop {
            // Stops the scan early: the function's own `return`, from the loop, through the probe.
            return Some(i);
        }
        if word.starts_with('#') {
            // A comment word hides the next one, as a multi-line construct hides the lines it spans.
            skip!(1);
            continue;
        }
        if word.is_empty() {
            continue;
        }
        letters += word.len();
    }
    let found = loop {
        // A `break` with a value, at the end: the letters counted, or nothing when there were none.
        if letters == 0 {
            break None;
        }
        break Some(letters);
    };
    // The words above are short; what makes the body long is its text, as in the functions this form is for (a
    // parser's scan of one line, which runs for every line of a file and stays probed for the whole run): the
    // rewrite measures a body by its bytes of source, and this comment takes it past `IN_PLACE_BODY`, 1,000 bytes.
    found
}

/// Drops write to a log, so that a change in when parameters drop shows in the output.
pub struct Noisy(pub u32);

thread_local! {
    static DROPS: std::cell::RefCell<Vec<u32>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl Drop for Noisy {
    fn drop(&mut self) {
        DROPS.with(|d| d.borrow_mut().push(self.0));
    }
}

/// Parameters taken by value, one unused: written twice in place, the guard in the second copy (`quiet_guard_in!`),
/// so they drop as in the plain build, after the body's locals.
pub fn first_of(a: Noisy, _b: Noisy, names: Vec<String>) -> u32 {
    let local = Noisy(a.0 + 100);
    if names.is_empty() {
        return local.0;
    }
    a.0 + names.len() as u32
}

/// A parameter taken by value and `?`: written twice, the cold copy in the closure its `Err` counting needs.
pub fn parsed_owned(text: String) -> Result<u32, std::num::ParseIntError> {
    let n: u32 = text.trim().parse()?;
    Ok(n + 1)
}

/// A statement macro in braces whose rules declare nothing, as serde_json's `check_recursion!`.
macro_rules! counted_down {
    ($this:ident $($body:tt)*) => {
        $this.depth -= 1;
        $this $($body)*
        $this.depth += 1;
    };
}

pub struct Walker {
    pub depth: u32,
    pub seen: u32,
}

impl Walker {
    /// The file's own statement macro in braces and a nested function: written twice all the same (each copy its
    /// own `halve`).
    pub fn step(&mut self, x: u32) -> Result<u32, String> {
        fn halve(x: u32) -> u32 {
            x / 2
        }
        counted_down! {
            self.seen += 1;
            let r = halve(x) + self.depth;
        }
        if r > 100 {
            return Err(format!("too big: {r}"));
        }
        Ok(r)
    }
}

fn block_on<F: Future>(fut: F) -> F::Output {
    let mut fut = pin!(fut);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

/// The root: calls everything and returns the lines to print.
/// `impl Trait` in return position holding a closure: one copy of the body (two would give two closure types).
pub fn plus_one(items: &[u32]) -> impl Iterator<Item = u32> + '_ {
    items.iter().map(|x| x + 1)
}

pub fn run_all() -> Vec<String> {
    let mut out = Vec::new();
    out.push(format!("{:?} {:?}", block_on(parse_twice("21")).ok(), block_on(parse_twice("x")).is_err()));
    out.push(format!("{}", block_on(boxed(3)).area()));
    out.push(format!("{}", block_on(shown(4))));
    out.push(format!("{} {}", block_on(first_or(&[5, 6], 0)), block_on(first_or::<u8>(&[], 9))));
    block_on(nothing());
    out.push(format!("{}", block_on(later(1))));
    let mut counter = Counter { hits: 0 };
    block_on(counter.bump());
    out.push(format!("{} {}", block_on(counter.bump()), counter.get()));
    let value = 7;
    // SAFETY: a valid reference.
    out.push(format!("{} {}", unsafe { read(&value) }, doubled(4)));
    out.push(format!("{}", total(vec![Box::new(Square(2)) as Box<dyn Shape>, Box::new(Square(1))])));
    out.push(format!("{} {} {}", caller_line(), where_am_i(), limit()));
    let rows: [&[u32]; 3] = [&[1, 2, 3], &[5, 7], &[4]];
    out.push(format!("{:?} {:?} {:?}", first_evens(&rows), first_evens(&[&[2000]]), parsed_sum("1", "2")));
    out.push(format!("{:?} {} {} {}", parsed_sum("1", "x").is_err(), calls_so_far(), calls_so_far(), wrapped(3)));
    out.push(format!("{:?}", plus_one(&[1, 2]).collect::<Vec<_>>()));
    let firsts = [first_of(Noisy(1), Noisy(2), vec!["x".to_owned()]), first_of(Noisy(3), Noisy(4), Vec::new())];
    out.push(format!("{firsts:?} {:?}", DROPS.with(|d| d.borrow().clone())));
    out.push(format!("{:?} {:?}", parsed_owned(" 41 ".to_owned()), parsed_owned("x".to_owned()).is_err()));
    let mut walker = Walker { depth: 3, seen: 0 };
    out.push(format!("{:?} {:?} {} {}", walker.step(10), walker.step(1000), walker.seen, walker.depth));
    let words = ["ab", "#c", "hidden", "", "def", "end", "gh"];
    out.push(format!("{:?} {:?} {:?}", scan_words(&words, "end"), scan_words(&words, "no"), scan_words(&[], "no")));
    out
}
