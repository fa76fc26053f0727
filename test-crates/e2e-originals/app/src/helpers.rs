//! A non-mod.rs module with a child of its own (in helpers/) and a test module: moving it must not move them.

pub mod consts;
// One module declared once per cfg, as `cfg_if!` writes it (sha2's `mod soft;`): the compiled one is the second.
#[cfg(not(unix))]
pub mod platform;
#[cfg(unix)]
pub mod platform;
pub mod deep;
pub mod nested {
    pub mod leaf;
}
#[cfg(test)]
mod tests;

pub fn where_am_i() -> String {
    format!("helpers: {}:{}:{} ({} bytes of deep.rs)", file!(), line!(), column!(), include_str!("helpers/deep.rs").len())
}

pub fn fail() {
    panic!("helpers::fail");
}
