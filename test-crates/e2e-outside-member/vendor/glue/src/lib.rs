use core_sums::checksum;

/// The checksums of each line of `text`, summed: a registry crate calling a workspace member.
pub fn line_sums(text: &str) -> u64 {
    text.lines().map(|line| checksum(line.as_bytes())).fold(0, u64::wrapping_add)
}
