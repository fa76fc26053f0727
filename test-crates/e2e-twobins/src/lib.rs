pub fn work() -> u32 {
    7
}
