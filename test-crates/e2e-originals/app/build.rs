//! Hashes a sibling crate's source and this crate's own main.rs, as code generators and version stampers do.

fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

fn main() {
    let b_source = std::fs::read("../b/src/lib.rs").expect("b's source");
    let own_main = std::fs::read("src/main.rs").expect("main.rs");
    println!("cargo:rustc-env=B_SOURCE_HASH={:016x}", fnv(&b_source));
    println!("cargo:rustc-env=MAIN_SOURCE_HASH={:016x}", fnv(&own_main));
    println!("cargo:rerun-if-changed=../b/src/lib.rs");
    println!("cargo:rerun-if-changed=src/main.rs");
}
