//! A request server simulation: parse, route, a cached lookup in one of two stores, render.
//! Some handlers are async and run on a tiny hand-written executor; one panics on bad input.

pub mod cache;
pub mod exec;
pub mod parse;
pub mod render;
pub mod server;
pub mod stats;
pub mod store;
