//! `str::parse` runs `<T as FromStr>::from_str` of the type it parses: named by a turbofish or by the `let` the call
//! initialises (through `?`, `.unwrap()`, `.expect(..)`, `.unwrap_or(..)`), it is that type's impl alone (jiff's
//! `parse_batch` reached 8); a std type's is none of the workspace's. Still missed: `zone_of`'s target is its return
//! type, which is not read, and its receiver is a `&str` parameter (std's): no impl is reached.

use std::str::FromStr;

pub struct Stamp(u64);
pub struct Span(u32);
pub struct Zone(u8);

impl FromStr for Stamp {
    type Err = ();
    fn from_str(text: &str) -> Result<Stamp, ()> {
        text.bytes().map(u64::from).try_fold(0u64, |a, b| a.checked_add(b)).map(Stamp).ok_or(())
    }
}

impl FromStr for Span {
    type Err = ();
    fn from_str(text: &str) -> Result<Span, ()> {
        text.chars().filter(|c| c.is_ascii_digit()).count().try_into().map(Span).map_err(|_| ())
    }
}

impl FromStr for Zone {
    type Err = ();
    fn from_str(text: &str) -> Result<Zone, ()> {
        text.len().try_into().map(Zone).map_err(|_| ())
    }
}

fn zone_of(text: &str) -> Result<Zone, ()> {
    text.parse()
}

pub fn parse_line(line: &str) -> Result<u64, ()> {
    let mut fields = line.split(' ');
    let stamp: Stamp = fields.next().unwrap_or("").parse()?;
    let span: Span = fields.next().unwrap_or("").parse().expect("a span");
    let count: u64 = fields.next().unwrap_or("").parse().unwrap_or(0);
    let other = "7".parse::<Span>().map_or(0, |s| s.0);
    let zone = zone_of(line)?;
    Ok(stamp.0 + u64::from(span.0) + count + u64::from(other) + u64::from(zone.0))
}
