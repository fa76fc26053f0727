pub fn name() -> &'static str {
    "windows"
}
