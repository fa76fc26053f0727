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
