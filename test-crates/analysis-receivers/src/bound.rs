//! Values bound by `Some(x)` and `Ok(x)` from a scrutinee whose type the syntax shows (rustc-demangle's
//! `match self.style { Some(ref d) => write!(f, "{}", d) }` and `if let Some(out) = &mut self.out`): they have the
//! contents' type, so `{}` reaches the contents' `Display` and a std value's method is std's, not every workspace
//! method of that name.

use std::fmt;

pub struct Style {
    pub depth: usize,
}

impl fmt::Display for Style {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        for _ in 0..self.depth {
            f.write_str(">")?;
        }
        Ok(())
    }
}

/// A workspace type with a method named like `String`'s (`push_str`); `chains::Lengthy` has a `len`.
pub struct Buffer {
    pub bytes: Vec<u8>,
}

impl Buffer {
    pub fn push_str(&mut self, text: &str) {
        for b in text.bytes() {
            self.bytes.push(b);
        }
    }

    pub fn count(&self) -> usize {
        let mut n = 0;
        for _ in &self.bytes {
            n += 1;
        }
        n
    }
}

pub struct Shown {
    pub style: Option<Style>,
    pub out: Option<String>,
    pub parsed: Result<Buffer, String>,
}

impl fmt::Display for Shown {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self.style {
            None => f.write_str("-"),
            Some(ref style) => write!(f, "{}", style),
        }
    }
}

pub fn show(shown: &mut Shown) -> usize {
    let text = shown.to_string();
    let mut total = 0;
    // A `String`: std's `push_str` and `len`.
    if let Some(out) = &mut shown.out {
        out.push_str(&text);
        total += out.len();
    }
    // A `Buffer`: its own `count`.
    if let Ok(buffer) = &shown.parsed {
        total += buffer.count();
    }
    total
}

/// A std trait's method called by path runs the first argument's impl (rustc-demangle's
/// `DemangleStyle::V0(ref d) => fmt::Display::fmt(d, f)`), as `style.fmt(f)` would.
pub fn relay(style: &Style, f: &mut fmt::Formatter) -> fmt::Result {
    fmt::Display::fmt(style, f)
}
