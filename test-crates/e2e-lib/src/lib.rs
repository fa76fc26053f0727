//! A library with no binary: its unit tests are the program (`cargo calltime --lib --root checksum`).

/// The root: sums the words of `text`, each weighted by its position.
pub fn checksum(text: &str) -> u64 {
    let mut total = 0;
    for (position, word) in text.split_whitespace().enumerate() {
        total += weigh(word) * (position as u64 + 1);
    }
    total
}

/// A checksum as text (not reached from the root: only here so the crate has a dependency to reuse).
pub fn label(checksum: u64) -> String {
    itoa::Buffer::new().format(checksum).to_owned()
}

fn weigh(word: &str) -> u64 {
    let mut sum = 0;
    for byte in word.bytes() {
        sum += u64::from(byte);
    }
    sum
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_word() {
        assert_eq!(checksum("ab"), 97 + 98);
    }

    #[test]
    fn two_words() {
        assert_eq!(checksum("a b"), 97 + 2 * 98);
    }

    #[test]
    fn empty_text_is_zero() {
        assert_eq!(checksum(""), 0);
    }
}
