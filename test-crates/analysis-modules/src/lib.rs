//! Module-tree shapes: `mod x;` as x.rs and x/mod.rs, `#[path]` (top level and inside an inline module), inline
//! modules, `#[cfg]` variants of one module, a `#[cfg(test)]` module and a declared module with no file.

mod dir;
mod plain;
#[path = "custom/location.rs"]
mod renamed;

pub mod inline {
    pub fn inner() {
        super::plain::leaf();
    }

    // Inside an inline module of lib.rs, `#[path]` is relative to src/inline/.
    #[path = "deep_file.rs"]
    pub mod deep;

    pub mod nested {
        // Without `#[path]`: src/inline/nested/leafmod.rs.
        pub mod leafmod;
    }
}

#[cfg(unix)]
#[path = "os/unix.rs"]
mod os;
#[cfg(windows)]
#[path = "os/windows.rs"]
mod os;

#[cfg(feature = "never")]
mod missing;

#[cfg(test)]
mod tests;

pub fn entry() -> usize {
    plain::leaf();
    plain::sub::below_plain();
    dir::from_dir();
    renamed::moved();
    inline::inner();
    inline::deep::deepest();
    inline::nested::leafmod::nested_leaf();
    os::name().len()
}
