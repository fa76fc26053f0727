//! Edition 2024: `unsafe extern` blocks with `safe` items, `#[unsafe(no_mangle)]`, precise capturing, let chains,
//! and modules that lean on `use super::*`.

unsafe extern "C" {
    pub safe fn labs(x: i64) -> i64;
}

#[unsafe(no_mangle)]
pub extern "C" fn edge2024_exported(x: i64) -> i64 {
    labs(x)
}

pub fn counter(start: u32) -> impl Fn() -> u32 + use<> {
    move || start + 1
}

pub fn chained(a: Option<u32>) -> u32 {
    if let Some(x) = a
        && x > 1
    {
        parts::one::first(x)
    } else {
        0
    }
}

fn shared(x: u32) -> u32 {
    x * 2
}

pub mod parts {
    use super::*;

    pub mod one {
        use super::*;

        pub fn first(x: u32) -> u32 {
            two::second(shared(x))
        }
    }

    pub mod two {
        use super::*;

        pub fn second(x: u32) -> u32 {
            helper(x)
        }
    }

    fn helper(x: u32) -> u32 {
        shared(x) + edge2024_exported(1) as u32
    }
}
