//! Receivers reached through calls (issue 16's leftover): `lock().unwrap()`, `borrow()`, `as_ref()`, `clone()`,
//! `?` and functions' results are typed from the declared types, so the call goes to the one method it names, not
//! to every workspace method of that name. `Twin` has methods of the same names, which name matching would add.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::{Arc, Mutex, RwLock};

pub struct Counter {
    hits: u32,
}

impl Counter {
    pub fn bump(&mut self) -> u32 {
        self.hits += 1;
        self.hits
    }

    pub fn peek(&self) -> u32 {
        self.hits
    }

    pub fn child(&self) -> Option<Counter> {
        Some(Counter { hits: self.hits })
    }

    pub fn open(hits: u32) -> Result<Counter, String> {
        Ok(Counter { hits })
    }
}

/// Same method names as `Counter`: reached only when a call is matched by name.
pub struct Twin;

impl Twin {
    pub fn bump(&mut self) -> u32 {
        1
    }

    pub fn peek(&self) -> u32 {
        2
    }
}

pub struct Shared {
    counter: Arc<Mutex<Counter>>,
    table: RwLock<Counter>,
    cell: Rc<RefCell<Counter>>,
    spare: Option<Counter>,
}

impl Shared {
    pub fn through_lock(&self) -> u32 {
        self.counter.lock().unwrap().bump()
    }

    pub fn through_guard(&self) -> u32 {
        let mut guard = self.counter.lock().expect("not poisoned");
        guard.bump()
    }

    pub fn through_rwlock(&self) -> u32 {
        self.table.read().unwrap().peek() + self.table.write().unwrap().bump()
    }

    pub fn through_borrow(&self) -> u32 {
        self.cell.borrow().peek() + self.cell.borrow_mut().bump()
    }

    pub fn through_as_ref(&self) -> u32 {
        self.spare.as_ref().map_or(0, |c| c.peek()) + self.spare.as_ref().unwrap().peek()
    }

    pub fn through_clone(&self) -> u32 {
        Arc::clone(&self.counter).lock().unwrap().peek() + self.counter.clone().lock().unwrap().peek()
    }
}

fn make_shared() -> Shared {
    Shared {
        counter: Arc::new(Mutex::new(Counter { hits: 0 })),
        table: RwLock::new(Counter { hits: 0 }),
        cell: Rc::new(RefCell::new(Counter { hits: 0 })),
        spare: None,
    }
}

/// A function's result, a method's result and `?` on a workspace function's `Result`.
pub fn through_results() -> Result<u32, String> {
    let shared = make_shared();
    let first = make_shared().through_lock();
    let child = Counter { hits: first }.child().unwrap().peek();
    let opened = Counter::open(3)?.peek();
    Ok(shared.through_guard() + child + opened)
}

/// Still unknown: a closure's result is not typed, so this stays matched by name (with a note).
pub fn still_by_name(make: impl Fn() -> Counter) -> u32 {
    let mut made = (make)();
    made.bump()
}

/// `std::mem::take` is std's, not this crate's `take` (no recursion); a dependency's `dep::f` (sd's
/// `unescape::unescape`) resolves the same way.
pub fn take(v: &mut Vec<u32>) -> Vec<u32> {
    std::mem::take(v)
}

pub fn start() -> u32 {
    let shared = make_shared();
    let mut spare = vec![1];
    take(&mut spare);
    shared.through_lock()
        + shared.through_rwlock()
        + shared.through_borrow()
        + shared.through_as_ref()
        + shared.through_clone()
        + through_results().unwrap_or(0)
        + still_by_name(|| Counter { hits: 1 })
}

/// Same names as std methods, so name matching would reach them from std values.
pub struct Lengthy;

impl Lengthy {
    pub fn len(&self) -> usize {
        7
    }

    pub fn next(&mut self) -> Option<u32> {
        None
    }
}

pub enum Shape {
    Round(Counter),
    Square { side: Counter },
}

impl Shape {
    /// `Self::Variant(x)` and `Self::Variant { x }` patterns type their bindings (toml_edit's `Value::decor_mut`).
    pub fn peek(&self) -> u32 {
        match self {
            Self::Round(c) => c.peek(),
            Self::Square { side } => side.peek(),
        }
    }
}

/// Locals bound to std values (`x.to_string()`, `s.chars()`, a literal), slice parameters and the prelude's
/// `size_of` are std's: none reaches `Lengthy`; a name rebound by `if let` forgets its earlier type.
pub fn std_values(words: &[u8], shape: &Shape) -> usize {
    let text = shape.peek().to_string();
    let mut chars = text.chars();
    chars.next();
    let count = 3;
    if let Some(count) = Some(Lengthy) {
        return count.len();
    }
    text.len() + words.len() + count + size_of::<u64>()
}

/// A one-field wrapper destructured in the parameter list, as axum's extractors are: `counter` is a `Counter`.
pub struct State<S>(pub S);

pub fn extractor(State(counter): State<Counter>) -> u32 {
    counter.peek()
}

/// Has a `with`, as regex-syntax's `Repetition` does: `DEPTH.with(..)` on a `thread_local!` is not it.
pub struct Builder;

impl Builder {
    pub fn with(&self, n: u32) -> u32 {
        n
    }
}

thread_local! {
    static DEPTH: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// Auto-deref to `Target` (toml_edit's `DocumentMut` to `Document`): `handle.peek()` is `Counter::peek`.
pub struct Handle {
    counter: Counter,
}

impl std::ops::Deref for Handle {
    type Target = Counter;

    fn deref(&self) -> &Counter {
        &self.counter
    }
}

pub fn through_deref(handle: &Handle) -> u32 {
    handle.peek()
}

pub fn more() -> usize {
    let depth = DEPTH.with(|d| d.get()) + through_deref(&Handle { counter: Counter { hits: 3 } });
    std_values(b"ab", &Shape::Round(Counter { hits: 1 })) + extractor(State(Counter { hits: 2 })) as usize + depth as usize
}
