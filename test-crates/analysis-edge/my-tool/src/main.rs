#!/usr/bin/env run-cargo-script
//! A binary whose name has a `-` (crate `my_tool`), starting with a BOM and a shebang line.

fn main() {
    let code = run();
    println!("{code}");
}

fn run() -> u32 {
    edge::entry() + edge2024::chained(Some(3)) + (edge2024::counter(1))()
}
