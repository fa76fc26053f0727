pub fn deepest() {
    crate::dir::child::grandchild();
}
