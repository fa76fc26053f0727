//! Call shapes: `Type::assoc`, `Self::`, trait calls, `dyn Trait` and generics (every impl plus the default body),
//! receivers of known type (self, fields, parameters, typed lets, constructors, struct literals), receivers of
//! unknown type (by name and arity), functions as values, closures and macro arguments.

pub trait Shape {
    fn area(&self) -> f64;

    fn describe(&self) -> String {
        format!("area {}", self.area())
    }
}

pub struct Square(pub f64);

pub struct Circle {
    pub r: f64,
}

impl Shape for Square {
    fn area(&self) -> f64 {
        self.0 * self.0
    }
}

impl Shape for Circle {
    fn area(&self) -> f64 {
        3.0 * self.r * self.r
    }

    fn describe(&self) -> String {
        "a circle".to_owned()
    }
}

pub struct Counter {
    n: u32,
}

impl Counter {
    pub fn new() -> Self {
        Counter { n: 0 }
    }

    pub fn bump(&mut self) -> bool {
        self.n += 1;
        Self::check(self.n)
    }

    fn check(n: u32) -> bool {
        n > 3
    }
}

impl Default for Counter {
    fn default() -> Self {
        Self::new()
    }
}

pub struct Engine {
    shapes: Vec<Box<dyn Shape>>,
    counter: Counter,
}

impl Engine {
    pub fn new() -> Self {
        Engine { shapes: vec![Box::new(Square(1.0)), make_circle()], counter: Counter::default() }
    }

    pub fn total(&mut self) -> f64 {
        self.counter.bump();
        // `s` has no written type: `area` is resolved by name and arity.
        self.shapes.iter().map(|s| s.area()).sum()
    }

    pub fn report(&self, shape: &dyn Shape) -> String {
        shape.describe()
    }
}

fn make_circle() -> Box<dyn Shape> {
    Box::new(Circle { r: 1.0 })
}

pub fn generic<T: Shape>(t: &T) -> f64 {
    t.area() + T::area(t)
}

pub fn parse(s: &str) -> u32 {
    s.len() as u32
}

pub fn parse_all(items: &[&str]) -> Vec<u32> {
    items.iter().copied().map(parse).collect()
}

fn check_all(v: &[u32]) -> bool {
    v.iter().all(|x| *x > 0)
}

fn shown() -> u32 {
    7
}

macro_rules! twice {
    ($e:expr) => {{
        $e;
        $e
    }};
}

pub fn macros() -> u32 {
    let v = vec![parse("1"), parse("22")];
    assert!(check_all(&v), "failed with {}", shown());
    let text = format!("{:?}", parse_all(&["333"]));
    twice!(parse(&text))
}

pub struct Walker;
pub struct Runner;

impl Walker {
    pub fn step(&self, n: u32) -> u32 {
        n
    }
}

impl Runner {
    pub fn step(&self, n: u32) -> u32 {
        n + 1
    }
}

fn pick() -> Walker {
    Walker
}

pub fn entry() -> f64 {
    let mut engine = Engine::new();
    let total = engine.total();
    engine.report(&Square(2.0));
    let circle = Circle { r: 2.0 };
    let typed: Counter = Counter::new();
    let _ = typed.n;
    circle.describe();
    generic(&Square(3.0));
    <Square as Shape>::area(&Square(1.0));
    Shape::describe(&Square(1.0));
    // A function's result has its declared type (`Walker`): not both workspace methods named `step`.
    pick().step(1);
    let run = |x: u32| macros() + x;
    Wrapper(Counter::new()).poke();
    let extra = f64::from(raii_and_loops()) + implicit() as f64 + f64::from(apply(double, 2) + apply(|x| parse("1") + x, 3) + relay(|x| shown() + x, 1));
    total + f64::from(run(1)) + extra + f64::from(gaps())
}

/// A tuple struct: `self.0` has the field's type.
pub struct Wrapper(Counter);

impl Wrapper {
    fn poke(&mut self) -> bool {
        self.0.bump()
    }
}

/// Implicit calls that are modelled: `x[i]` on a workspace type (Index), `.into()` (From impls), and a method the
/// type does not have (auto-deref through its Deref impl).
pub struct Grid {
    cells: Vec<u32>,
}

impl std::ops::Index<usize> for Grid {
    type Output = u32;

    fn index(&self, i: usize) -> &u32 {
        &self.cells[i]
    }
}

pub struct Name(String);

impl From<&str> for Name {
    fn from(s: &str) -> Self {
        Name(s.to_owned())
    }
}

impl std::ops::Deref for Name {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

pub fn implicit() -> usize {
    let grid = Grid { cells: vec![1, 2] };
    let name: Name = "ab".into();
    grid[1] as usize + name.len()
}

/// Callbacks: `apply` calls its parameter, so `double` and the closure's `parse` run under `apply`.
pub fn apply<F: Fn(u32) -> u32>(f: F, x: u32) -> u32 {
    f(x)
}

fn double(x: u32) -> u32 {
    x * 2
}

/// Forwards its callback: the closure's `shown` runs under `apply`, not under `relay`.
pub fn relay<F: Fn(u32) -> u32>(f: F, x: u32) -> u32 {
    apply(f, x)
}

/// Drop and `for` loops on workspace types: `Noisy::drop` runs when `_guard` goes out of scope, `Countdown::next`
/// for each turn of the loop.
pub struct Noisy(u32);

impl Drop for Noisy {
    fn drop(&mut self) {
        self.0 = 0;
    }
}

pub struct Countdown(u32);

impl Iterator for Countdown {
    type Item = u32;

    fn next(&mut self) -> Option<u32> {
        if self.0 == 0 {
            None
        } else {
            self.0 -= 1;
            Some(self.0)
        }
    }
}

pub fn raii_and_loops() -> u32 {
    let _guard = Noisy(1);
    let countdown = Countdown(3);
    let mut sum = 0;
    for x in countdown {
        sum += x;
    }
    sum
}

/// Closures that reach a callee through a local or a wrapper: `apply_ref` and `maybe_apply` call their
/// parameter, so `first`, `second` and `third` run under them.
pub fn apply_ref(f: &dyn Fn(u32) -> u32, x: u32) -> u32 {
    f(x)
}

pub fn apply_mut(f: &mut dyn FnMut(u32) -> u32, x: u32) -> u32 {
    f(x)
}

/// Calls the callback it was given through a pattern binding.
pub fn maybe_apply(f: Option<&dyn Fn(u32) -> u32>, x: u32) -> u32 {
    if let Some(cb) = f {
        cb(x)
    } else {
        x
    }
}

fn first() -> u32 {
    1
}

fn second() -> u32 {
    2
}

fn third() -> u32 {
    3
}

pub fn bound_closures(n: u32) -> u32 {
    let handler = |x: u32| first() + x;
    let chosen: &dyn Fn(u32) -> u32 = if n > 100 { &|x| x } else { &handler };
    apply(handler, n) + apply_ref(&handler, n) + apply_ref(chosen, n) + maybe_apply(Some(&|x| second() + x), n)
        + apply_mut(&mut |x| third() + x, n)
}

/// Futures handed to an executor: `fetch`'s body runs when `block_on` polls it.
pub async fn fetch(x: u32) -> u32 {
    first() + x
}

pub fn block_on<F: std::future::Future>(fut: F) -> F::Output {
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    let mut fut = std::pin::pin!(fut);
    loop {
        if let std::task::Poll::Ready(value) = fut.as_mut().poll(&mut cx) {
            return value;
        }
    }
}

/// Operators and formatting traits on a workspace type.
#[derive(Clone, Copy)]
pub struct Meters(i64);

impl std::ops::Add for Meters {
    type Output = Meters;

    fn add(self, other: Meters) -> Meters {
        Meters(self.0 + other.0)
    }
}

impl std::ops::Sub<i64> for Meters {
    type Output = Meters;

    fn sub(self, other: i64) -> Meters {
        Meters(self.0 - other)
    }
}

impl std::ops::Neg for Meters {
    type Output = Meters;

    fn neg(self) -> Meters {
        Meters(-self.0)
    }
}

impl std::ops::AddAssign for Meters {
    fn add_assign(&mut self, other: Meters) {
        self.0 += other.0;
    }
}

impl PartialEq for Meters {
    fn eq(&self, other: &Meters) -> bool {
        self.0 == other.0
    }
}

impl std::fmt::Display for Meters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} m", self.0)
    }
}

impl std::fmt::Debug for Meters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Meters({})", self.0)
    }
}

pub fn measure(a: Meters, b: Meters) -> usize {
    let mut c: Meters = a + b;
    c += b;
    let d: Meters = -(c - 1);
    let same = a == b;
    let text = format!("{} {:?} {d}", a, b);
    text.len() + c.to_string().len() + usize::from(same)
}

pub fn gaps() -> u32 {
    bound_closures(1) + block_on(fetch(2)) + measure(Meters(1), Meters(2)) as u32 + seeded()
        + describe_reading(&Reading::Distance { value: Meters(3) }).len() as u32
        + describe_reading(&Reading::Pair(Meters(1), Meters(2))).len() as u32
}

fn seed() -> u32 {
    5
}

thread_local! {
    /// Its initializer runs inside the first `SEED.with(..)`.
    static SEED: std::cell::Cell<u32> = std::cell::Cell::new(seed());
}

pub fn seeded() -> u32 {
    SEED.with(|s| s.get())
}

/// Pattern bindings have the types of the fields they bind.
pub enum Reading {
    Distance { value: Meters },
    Pair(Meters, Meters),
}

pub fn describe_reading(r: &Reading) -> String {
    match r {
        Reading::Distance { value } => format!("{value}"),
        Reading::Pair(a, _) => format!("{:?}", a),
    }
}
