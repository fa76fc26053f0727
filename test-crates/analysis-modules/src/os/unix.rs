pub fn name() -> &'static str {
    "unix"
}
