//! Re-exports: `pub use` of a private module's items, a glob re-export, a prelude module with renames, and two
//! modules whose globs import each other.

mod inner;
pub mod api;

pub use inner::deep::*;
pub use inner::helper;

pub mod prelude {
    pub use super::helper;
    pub use crate::api::{connect as open, Client};
}

pub mod cycle_a {
    pub use super::cycle_b::*;

    pub fn in_a() {}
}

pub mod cycle_b {
    pub use super::cycle_a::*;

    pub fn in_b() {
        in_a();
    }
}
