//! `cargo calltime graph --root show --depth 2` lists `<to_string_edge::Dots as Display>::fmt` at level 2
//! (std's blanket `ToString` runs the type's `Display::fmt`, as the graph's "implicit calls" note says), like
//! `--root show_formatted` does; it lists `show` alone. `.parse()` likewise misses `FromStr::from_str`.
use std::fmt::Display;
use std::str::FromStr;

pub struct Dots(pub u8);

impl Display for Dots {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for _ in 0..self.0 {
            write!(f, ".")?;
        }
        Ok(())
    }
}

impl FromStr for Dots {
    type Err = std::num::ParseIntError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let n: u8 = s.trim().parse()?;
        Ok(Dots(n.min(80)))
    }
}

pub fn show(dots: &Dots) -> String {
    dots.to_string()
}

pub fn show_formatted(dots: &Dots) -> String {
    format!("{}", dots)
}

pub fn read(text: &str) -> Option<Dots> {
    text.parse().ok()
}
