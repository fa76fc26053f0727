pub const NAME: &str = file!();
