//! `.into()` reaches the `From` impls whose source is the receiver's type (an enum's unit or struct variant, a
//! tuple struct, a typed local, `self`) or whose target is named by the annotated `let` it initialises or the
//! declared return type of the body it ends; a std source with no workspace impl reaches none; the side the syntax
//! does not show leaves every impl of the other side.

pub enum Inner {
    Missing,
    Short { wanted: usize },
}

pub struct Wrapped(pub u32);

pub struct Failure {
    pub code: u32,
}

pub struct Outer {
    pub code: u32,
}

impl From<Inner> for Failure {
    fn from(inner: Inner) -> Failure {
        match inner {
            Inner::Missing => Failure { code: 1 },
            Inner::Short { wanted } => Failure { code: wanted as u32 },
        }
    }
}

impl From<Wrapped> for Failure {
    fn from(w: Wrapped) -> Failure {
        Failure { code: w.0 }
    }
}

impl From<Failure> for Outer {
    fn from(f: Failure) -> Outer {
        Outer { code: f.code + 100 }
    }
}

impl From<Box<Inner>> for Outer {
    fn from(inner: Box<Inner>) -> Outer {
        Outer { code: Failure::from(*inner).code }
    }
}

impl From<Wrapped> for Outer {
    fn from(w: Wrapped) -> Outer {
        Outer { code: w.0 + 200 }
    }
}

fn unknown() -> Wrapped {
    Wrapped(7)
}

pub fn convert(n: usize) -> u32 {
    // Source `Inner` (a unit variant, a struct variant): `From<Inner> for Failure` alone.
    let a: Failure = Inner::Missing.into();
    let b: Failure = Inner::Short { wanted: n }.into();
    // Source `Wrapped` (a tuple struct), target `Outer` (the `let`): `From<Wrapped> for Outer` alone.
    let c: Outer = Wrapped(3).into();
    // A typed local of the workspace: its impls only (`Failure` -> `Outer`).
    let d: Outer = a.into();
    // A std source with no workspace impl: none.
    let e: u64 = 5u32.into();
    // A function's result, typed from its declared return type: `Wrapped`'s two impls.
    let f = Outer::from(unknown().into_failure());
    // A receiver the syntax does not show (a block), target `Outer`: `Outer`'s two impls.
    let g: Outer = { unknown() }.into();
    // A boxed value whose type the analysis does not see: the target's three impls, `From<Box<Inner>>` among them.
    let boxed = Box::new(Inner::Missing);
    let h: Outer = boxed.into();
    b.code + c.code + d.code + e as u32 + f.code + g.code + h.code
}

impl Wrapped {
    /// Source `Wrapped` (`self`), target `Failure` (the return type): `From<Wrapped> for Failure` alone.
    fn into_failure(self) -> Failure {
        self.into()
    }
}
