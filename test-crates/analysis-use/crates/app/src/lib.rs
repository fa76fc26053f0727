//! Imports: a glob of another crate's prelude, nested groups with `self` and renames, a rename of a glob-cycle
//! item, `self::`/`crate::`/`::` paths, `use` inside a body, and `use super::*` in nested modules.

use beta::cycle_b::in_a as renamed_a;
use beta::prelude::*;
use beta::{
    api::{self, Client as C2},
    cycle_a::in_b,
    deep_fn,
};

mod nested;
mod util;

pub fn run() {
    let c = open();
    c.send();
    let d = C2::new();
    d.send();
    api::connect();
    deep_fn();
    renamed_a();
    in_b();
    helper();
    util::work();
    nested::child::go();
    self::util::work();
    crate::util::work();
    ::beta::helper();
}

pub struct AppHandler;

impl beta::api::Handler for AppHandler {
    fn handle(&self) -> u32 {
        util::work();
        1
    }
}

pub fn serve() -> u32 {
    api::dispatch(&AppHandler)
}
