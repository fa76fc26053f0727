//! Which functions the plan leaves out as trivial (cheaper than a probe) and which it keeps.

#[derive(Clone, Copy, PartialEq)]
pub struct Slot(u32);

#[derive(Clone, PartialEq)]
pub enum Kind {
    Text(String),
    Break,
    Rule,
}

pub struct Doc {
    slots: Vec<u32>,
    cursor: Option<Slot>,
    kind: Kind,
    name: String,
}

impl Slot {
    // Trivial: a field read on a Copy value taken by value.
    pub fn get(self) -> usize {
        self.0 as usize
    }
}

impl Doc {
    /// The root: always probed.
    pub fn render(&mut self, bytes: &[u8]) -> usize {
        let mut n = 0;
        n += self.cursor().map_or(0, Slot::get);
        n += usize::from(self.is_break());
        n += self.slot(Slot(0)) as usize;
        n += self.advance(Slot(1)).map_or(0, |s| s.get());
        n += self.last_slot().unwrap_or(0) as usize;
        n += checksum(bytes) as usize;
        n += self.label().len();
        n += self.describe().len();
        n += self.longest() as usize;
        consume(self.name.clone());
        consume_slot(Slot(2));
        n += self.chain() as usize;
        n += self.big() as usize;
        n += self.count_down(3) as usize;
        n += self.kind_code() as usize;
        n
    }

    // Trivial: a getter.
    pub fn cursor(&self) -> Option<Slot> {
        self.cursor
    }

    // Trivial: `matches!` only.
    pub fn is_break(&self) -> bool {
        matches!(self.kind, Kind::Break | Kind::Rule)
    }

    // Trivial: indexing and a call to a trivial workspace method.
    pub fn slot(&self, at: Slot) -> u32 {
        self.slots[at.get()]
    }

    // Trivial: assignments, a trivial call, `?`-free straight line.
    pub fn advance(&mut self, at: Slot) -> Option<Slot> {
        let next = self.slot(at);
        self.cursor = Some(Slot(next));
        self.cursor
    }

    // Trivial: a constant-time std accessor.
    pub fn last_slot(&self) -> Option<u32> {
        self.slots.last().copied()
    }

    // Probed: clones a String (allocates).
    pub fn label(&self) -> String {
        self.name.clone()
    }

    // Probed: a macro that formats.
    pub fn describe(&self) -> String {
        format!("{} slots", self.slots.len())
    }

    // Probed: an iterator's `max()` is a loop.
    pub fn longest(&self) -> u32 {
        self.slots.iter().copied().max().unwrap_or(0)
    }

    // Probed: calls trivial functions, but more statements in all than a probe is worth.
    pub fn chain(&mut self) -> u32 {
        let a = self.slot(Slot(0));
        let b = self.slot(Slot(1));
        let c = self.slot(Slot(2));
        let d = self.slot(Slot(3));
        a + b + c + d
    }

    // Probed: too many statements of its own.
    pub fn big(&self) -> u32 {
        let a = self.slots.len() as u32;
        let b = a * 3;
        let c = b ^ 7;
        let d = c << 3;
        let e = d | 1;
        let f = e / 2;
        a + f
    }

    // Probed: recursive.
    pub fn count_down(&self, n: u32) -> u32 {
        if n == 0 {
            0
        } else {
            self.count_down(n - 1)
        }
    }

    // Trivial: a `match` over an enum with constant arms.
    pub fn kind_code(&self) -> u8 {
        match self.kind {
            Kind::Text(_) => 1,
            Kind::Break => 2,
            Kind::Rule => 3,
        }
    }
}

// Probed: a leaf with a loop.
pub fn checksum(bytes: &[u8]) -> u32 {
    let mut sum = 0u32;
    for b in bytes {
        sum = sum.wrapping_mul(31).wrapping_add(u32::from(*b));
    }
    sum
}

// Probed: drops a String taken by value.
pub fn consume(name: String) {
    let _ = name;
}

// Trivial: the value taken is Copy.
pub fn consume_slot(slot: Slot) {
    let _ = slot;
}

/// A cursor over bytes by raw pointers, as parsers keep one (httparse's `Bytes`).
pub struct Cursor<'a> {
    at: *const u8,
    end: *const u8,
    waited: std::time::Duration,
    bytes: std::marker::PhantomData<&'a [u8]>,
}

impl<'a> Cursor<'a> {
    /// The root of the pointer cases.
    pub fn scan(&mut self) -> usize {
        let mut n = 0;
        while let Some(b) = self.next_byte() {
            n += usize::from(b);
        }
        n + self.rest().len() + self.waited(std::time::Duration::ZERO).as_secs() as usize
    }

    // Trivial: raw pointer arithmetic (`add` on a raw pointer field); `debug_assert!` compiles to nothing.
    /// # Safety
    /// `n` bytes remain.
    pub unsafe fn advance(&mut self, n: usize) {
        self.at = unsafe { self.at.add(n) };
        debug_assert!(self.at <= self.end);
    }

    // Trivial: `unsafe { .. }` and `else { None }` around one expression are no code of their own.
    pub fn next_byte(&mut self) -> Option<u8> {
        if self.at < self.end {
            unsafe {
                let b = *self.at;
                self.advance(1);
                Some(b)
            }
        } else {
            None
        }
    }

    // Trivial: `slice::from_raw_parts` and `offset_from` on raw pointers.
    pub fn rest(&self) -> &'a [u8] {
        unsafe { std::slice::from_raw_parts(self.at, self.end.offset_from(self.at) as usize) }
    }

    // Probed: `add` on a field of a named type (some crate's `add` may do anything).
    pub fn waited(&self, more: std::time::Duration) -> std::time::Duration {
        use std::ops::Add;
        self.waited.add(more)
    }
}

/// A byte source, as serde_json's `Read`: implemented by a slice reader, a reader that delegates to one, a
/// costly reader, and every `&mut R`.
pub trait Source {
    fn peek(&mut self) -> Option<u8>;
    fn discard(&mut self);
    fn fill(&mut self) -> usize;
}

pub struct SliceSource<'a> {
    slice: &'a [u8],
    index: usize,
}

impl<'a> Source for SliceSource<'a> {
    // Trivial: indexing and a comparison.
    fn peek(&mut self) -> Option<u8> {
        if self.index < self.slice.len() {
            Some(self.slice[self.index])
        } else {
            None
        }
    }

    // Trivial.
    fn discard(&mut self) {
        self.index += 1;
    }

    // Probed: a loop.
    fn fill(&mut self) -> usize {
        let mut n = 0;
        while self.index + n < self.slice.len() {
            n += 1;
        }
        n
    }
}

/// Delegates to a field of a declared type.
pub struct TextSource<'a> {
    delegate: SliceSource<'a>,
}

impl<'a> Source for TextSource<'a> {
    // Trivial: `self.delegate` is a `SliceSource`, whose own impl is the one called (never the blanket impl for
    // `&mut R`, which covers other types).
    fn peek(&mut self) -> Option<u8> {
        self.delegate.peek()
    }

    // Trivial, likewise.
    fn discard(&mut self) {
        self.delegate.discard();
    }

    // A forwarder to a probed function: left out.
    fn fill(&mut self) -> usize {
        self.delegate.fill()
    }
}

/// Reads from a file: its `peek` has a loop.
pub struct FileSource {
    buffer: Vec<u8>,
    at: usize,
}

impl Source for FileSource {
    // Probed: a loop.
    fn peek(&mut self) -> Option<u8> {
        while self.at >= self.buffer.len() {
            self.buffer.push(0);
        }
        Some(self.buffer[self.at])
    }

    // Trivial.
    fn discard(&mut self) {
        self.at += 1;
    }

    // Probed: a loop.
    fn fill(&mut self) -> usize {
        for b in self.buffer.iter_mut() {
            *b = 0;
        }
        self.buffer.len()
    }
}

impl<'b, R: Source> Source for &'b mut R {
    // A forwarder through the bound (its own method again only for `&mut &mut R`): every impl is probed or
    // trivial, so it is left out.
    fn peek(&mut self) -> Option<u8> {
        R::peek(self)
    }

    // Trivial: every impl's `discard` is.
    fn discard(&mut self) {
        R::discard(self);
    }

    fn fill(&mut self) -> usize {
        R::fill(self)
    }
}

/// Generic over its source, as serde_json's `Deserializer<R>`.
pub struct Parser<R> {
    read: R,
    depth: usize,
}

impl<R: Source> Parser<R> {
    /// The root of the forwarder cases.
    pub fn skip_spaces(&mut self) -> Option<u8> {
        loop {
            match self.peek() {
                Some(b' ') => self.eat(),
                other => return other,
            }
        }
    }

    // A forwarder: `self.read` is an `R: Source` in this impl, so its `peek` is one of the trait's impls (not every
    // method named `peek`, this one among them); all are probed or trivial or forwarders: left out.
    fn peek(&mut self) -> Option<u8> {
        self.read.peek()
    }

    // Trivial: every `Source::discard` is.
    fn eat(&mut self) {
        self.read.discard();
    }

    // Probed: two calls into the workspace are work of its own.
    pub fn refill(&mut self) -> usize {
        self.depth += 1;
        self.read.fill() + self.read.fill()
    }
}

/// A visitor without fields: taking it by value drops nothing.
pub struct UnitVisitor;

impl UnitVisitor {
    // Trivial: `self` by value, but a unit struct without `Drop` drops nothing.
    pub fn visit_flag(self, flag: bool) -> Option<bool> {
        Some(flag)
    }

    /// A root for the visitor and the unresolved forwarder.
    pub fn visit_all(self, text: &[u8]) -> usize {
        let mut parser = Parser { read: SliceSource { slice: text, index: 0 }, depth: 0 };
        let spaces = parser.skip_spaces().map_or(0, usize::from);
        let registry = Registry::new();
        spaces
            + parser.refill()
            + usize::from(UnitVisitor.visit_flag(true).unwrap_or(false))
            + forward_guess(text[0]).0
            + registry.table.len()
    }
}

/// A map type chosen by a `#[cfg]`, as serde_json's `MapImpl`.
type Table = std::collections::BTreeMap<String, u32>;

pub struct Registry {
    table: Table,
}

impl Registry {
    // Trivial: an empty std collection, through a workspace alias.
    pub fn new() -> Self {
        Registry { table: Table::default() }
    }
}

/// A count made from a byte.
pub struct Count(pub usize);

impl From<u8> for Count {
    fn from(b: u8) -> Count {
        let mut n = 0;
        for _ in 0..b {
            n += 1;
        }
        Count(n)
    }
}

// Probed: its one call (`b.into()` on a generic value, into an unannotated local) may be any workspace `From` impl,
// a guess: what it reaches is not known.
pub fn forward_guess<T: Into<Count>>(b: T) -> Count {
    let count = b.into();
    count
}

/// `?` as serde_json writes it: a match and a return, nothing that loops or calls. A body invoking it may still
/// be trivial (`checked.rs`).
macro_rules! tri {
    ($e:expr $(,)?) => {
        match $e {
            Ok(val) => val,
            Err(err) => return Err(err),
        }
    };
}

/// Calls a function in its expansion, which a body invoking it does not show as a call of its own.
macro_rules! counted {
    ($e:expr) => {
        tally($e)
    };
}

/// Loops in its expansion.
macro_rules! spin {
    ($n:expr) => {{
        let mut left = $n;
        while left > 0 {
            left -= 1;
        }
        left
    }};
}

/// Calls what its invocation names: `call_it!(work)` is a call of `work` that the body does not show.
macro_rules! call_it {
    ($f:expr) => {
        $f()
    };
}

mod checked;
pub use checked::{tally, Checked};
