// A non-mod-rs file: its children live in src/plain/.
pub mod sub;

pub fn leaf() {}
