//! One short root per "file", as a search tool has (one root per searched file): about 10 probed calls per
//! invocation, so the per-invocation cost of the runtime dominates.

/// Bytes per file and per line: 8 lines of 32 bytes.
pub const FILE_LEN: usize = 256;
const LINE_LEN: usize = 32;

#[inline(never)]
pub fn read_header(file: &[u8]) -> u64 {
    u64::from_le_bytes(file[..8].try_into().unwrap_or([0; 8]))
}

#[inline(never)]
pub fn search_line(line: &[u8], needle: u8) -> u64 {
    line.iter().filter(|&&b| b == needle).count() as u64
}

#[inline(never)]
pub fn finish(header: u64, hits: u64) -> u64 {
    header.rotate_left(hits as u32 & 63) ^ hits
}

/// The root: 1 + 8 + 1 probed calls on a 256-byte file.
#[inline(never)]
pub fn search_file(file: &[u8], needle: u8) -> u64 {
    let header = read_header(file);
    let mut hits = 0;
    for line in file.chunks(LINE_LEN) {
        hits += search_line(line, needle);
    }
    finish(header, hits)
}

/// `count` files of `FILE_LEN` pseudo-random lower-case bytes.
pub fn generate_files(count: usize, seed: u64) -> Vec<Vec<u8>> {
    let mut state = seed | 1;
    (0..count)
        .map(|_| {
            (0..FILE_LEN)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    b'a' + (state % 26) as u8
                })
                .collect()
        })
        .collect()
}

/// `invocations` calls of the root, cycling through `files`; returns their combined checksum.
pub fn search_all(files: &[Vec<u8>], invocations: u64, offset: u64) -> u64 {
    let mut sum = 0u64;
    for i in 0..invocations {
        let file = &files[((i + offset) % files.len() as u64) as usize];
        sum = sum.wrapping_add(search_file(std::hint::black_box(file), b'e'));
    }
    sum
}
