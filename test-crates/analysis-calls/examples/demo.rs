//! An example target: indexed only when a root lives in it.

fn main() {
    println!("{}", demo_helper());
}

fn demo_helper() -> f64 {
    analysis_calls::entry()
}
