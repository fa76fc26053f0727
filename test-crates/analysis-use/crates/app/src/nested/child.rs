use super::*;

pub fn go() {
    parent_helper();
    sibling();
    super::super::util::work();
}

fn sibling() {
    // `work` comes through two globs: child -> nested -> util.
    work();
}
