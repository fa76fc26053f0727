//! Functions whose bodies hold column-sensitive code at several places of their lines.

use std::panic::Location;

pub fn run() -> Vec<String> {
    let mut out = vec![format!("run {}:{}", line!(), column!())];
    out.push(format!("caller {}", here()));
    out.push(one_line());
    let failed = std::panic::catch_unwind(boom).is_err();
    out.push(format!("caught {failed}"));
    out
}

#[track_caller]
fn here() -> &'static Location<'static> {
    Location::caller()
}

pub fn one_line() -> String { format!("one_line {}", column!()) }

fn boom() {
    let values: Vec<u32> = Vec::new();
    let _ = values.iter().map(|v| v + 1).sum::<u32>() / values.len() as u32;
}

pub async fn later(n: u32) -> String {
    let text = format!("later {} {}", n, column!());
    text
}
