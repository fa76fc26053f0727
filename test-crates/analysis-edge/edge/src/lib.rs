//! Edge cases: const fn, nested functions and items in bodies, async fn, `impl Future` with an `async move` tail,
//! a boxed future, extern block items, an `unsafe extern "C"` fn, macro-generated functions, recursion and a
//! cycle, inner attributes, a file that does not parse, and test-only code.

use std::future::Future;
use std::pin::Pin;

pub const fn limit() -> u32 {
    3
}

pub fn outer() -> u32 {
    #![allow(clippy::items_after_statements)]
    fn inner() -> u32 {
        limit()
    }
    struct Local;
    impl Local {
        fn go(&self) -> u32 {
            inner()
        }
    }
    Local.go()
}

pub async fn fetch(x: u32) -> Result<u32, String> {
    helper_async().await;
    Ok(x)
}

async fn helper_async() {}

pub fn later(x: u32) -> impl Future<Output = u32> {
    let y = x + 1;
    async move { fetch(y).await.unwrap_or(0) }
}

pub fn boxed() -> Pin<Box<dyn Future<Output = ()>>> {
    Box::pin(async {})
}

extern "C" {
    fn abs(x: i32) -> i32;
}

/// # Safety
/// Any input is fine.
pub unsafe extern "C" fn exported(x: i32) -> i32 {
    abs(x)
}

macro_rules! make_fn {
    ($name:ident) => {
        pub fn $name() {}
    };
}

make_fn!(generated);

macro_rules! wrap {
    ($($item:item)*) => { $($item)* };
}

wrap! {
    pub fn wrapped() {
        limit();
    }
}

// Never compiled, but every `#[cfg]` branch is analysed: this file does not parse.
#[cfg(any())]
mod broken;

pub fn recursive(n: u32) -> u32 {
    if n == 0 {
        return ping(3);
    }
    recursive(n - 1)
}

fn ping(n: u32) -> u32 {
    if n == 0 {
        0
    } else {
        pong(n - 1)
    }
}

fn pong(n: u32) -> u32 {
    ping(n)
}

pub fn entry() -> u32 {
    let _ = later(1);
    let _ = boxed();
    generated();
    wrapped();
    let _ = unsafe { exported(-1) };
    outer() + recursive(2)
}

#[cfg(test)]
mod tests {
    #[test]
    fn entry_is_positive() {
        assert!(super::entry() > 0);
    }
}
