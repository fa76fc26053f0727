//! Workspace traits implemented for std types (issue 12.6), and items under `#[cfg]` (issue 12.12).

/// Shown with an indent; implemented for std types only.
pub trait Show {
    fn show(&self, indent: usize) -> String;

    /// Default body, reached through the std types' impls.
    fn banner(&self) -> String {
        format!("[{}]", self.show(0))
    }
}

impl<T: std::fmt::Debug> Show for Vec<T> {
    fn show(&self, indent: usize) -> String {
        let mut out = String::new();
        for item in self {
            out.push_str(&format!("{:indent$}{item:?}\n", ""));
        }
        out
    }
}

impl Show for &str {
    fn show(&self, indent: usize) -> String {
        let mut out = " ".repeat(indent);
        for c in self.chars() {
            out.push(c);
        }
        out
    }
}

impl Show for String {
    fn show(&self, indent: usize) -> String {
        self.as_str().show(indent)
    }
}

impl Show for u64 {
    fn show(&self, indent: usize) -> String {
        let mut out = String::new();
        for _ in 0..indent {
            out.push(' ');
        }
        out + &self.to_string()
    }
}

/// Implemented for a slice and for `Option`.
pub trait Measure {
    fn measure(&self) -> usize;
}

impl Measure for [u8] {
    fn measure(&self) -> usize {
        self.iter().map(|b| usize::from(*b)).sum()
    }
}

impl<T: Measure> Measure for Option<T> {
    fn measure(&self) -> usize {
        let mut total = 0;
        for inner in self {
            total += inner.measure();
        }
        total
    }
}

impl Measure for u64 {
    fn measure(&self) -> usize {
        let mut n = *self;
        let mut digits = 0;
        while n > 0 {
            n /= 10;
            digits += 1;
        }
        digits
    }
}

pub fn shown(words: &[&str], n: u64, label: String) -> usize {
    let mut total = vec![1, 2].show(2).len();
    total += "abc".show(1).len();
    total += label.show(0).len();
    total += n.show(3).len();
    total += words.to_vec().banner().len();
    total += Some(n).measure();
    total += words[0].as_bytes().measure();
    total += opaque().show(4).len();
    total += Some(&n).cloned().measure();
    total
}

fn opaque() -> Vec<u32> {
    let mut v = Vec::new();
    for i in 0..3 {
        v.push(i);
    }
    v
}

#[cfg(feature = "grain")]
pub mod grain;

#[cfg(not(feature = "grain"))]
pub mod grain {
    pub fn coarse(n: u64) -> u64 {
        let mut total = 0;
        for i in 0..n {
            total += i;
        }
        total
    }
}

#[cfg(feature = "fast")]
pub fn quick(n: u64) -> u64 {
    let mut total = 0;
    for i in 0..n {
        total ^= i;
    }
    total
}

#[cfg(not(feature = "fast"))]
pub fn quick(n: u64) -> u64 {
    let mut total = 0;
    for i in 0..n {
        total += i * i;
    }
    total
}

pub struct Grid {
    pub cells: Vec<u64>,
}

impl Grid {
    pub fn sum(&self) -> u64 {
        let mut total = 0;
        for c in &self.cells {
            total += c;
        }
        total + self.platform() + self.flagged()
    }

    #[cfg(unix)]
    fn platform(&self) -> u64 {
        let mut n = 0;
        for c in &self.cells {
            n += c % 7;
        }
        n
    }

    #[cfg(windows)]
    fn platform(&self) -> u64 {
        let mut n = 0;
        for c in &self.cells {
            n += c % 11;
        }
        n
    }

    /// A cfg the analysis cannot know (set by RUSTFLAGS): kept.
    #[cfg(any(shapes_custom, not(any(windows, unix))))]
    fn flagged(&self) -> u64 {
        let mut n = 0;
        for c in &self.cells {
            n += c;
        }
        n
    }

    #[cfg(not(any(shapes_custom, not(any(windows, unix)))))]
    fn flagged(&self) -> u64 {
        let mut n = 1;
        for c in &self.cells {
            n *= c;
        }
        n
    }
}

#[cfg(all(feature = "grain", debug_assertions))]
impl Grid {
    pub fn fine_sum(&self) -> u64 {
        let mut total = 0;
        for c in &self.cells {
            total += grain::fine(*c);
        }
        total
    }
}
