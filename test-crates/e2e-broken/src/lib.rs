//! Does not compile, on purpose: cargo-calltime must say the user's code is at fault and touch nothing.

pub fn entry() -> u32 {
    helper() + 1
}

fn helper() -> u32 {
    let parsed: u32 = "not a number";
    parsed
}
