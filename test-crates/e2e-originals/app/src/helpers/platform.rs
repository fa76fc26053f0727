//! Declared twice in helpers.rs, under exclusive cfgs.

pub const NAME: &str = if cfg!(unix) { "unix" } else { "other" };
