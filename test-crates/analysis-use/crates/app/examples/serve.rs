//! Runs the crate's entry points: a target for `cargo calltime -p app --example serve --root app::run`.

fn main() {
    app::run();
    println!("{}", app::serve());
}
