//! Runs the crate's entry point: a target for `cargo calltime --example run --root entry`.

fn main() {
    println!("{}", analysis_modules::entry());
}
