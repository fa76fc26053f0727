//! The call-heavy shape of issue 11: per invocation of the root over 64 KB of text, a tiny per-byte helper
//! (~96k calls), a token function (~18k calls), then a call-free busy loop of about the same length.

use std::hint::black_box;

pub const SPACE: u8 = 0;
pub const WORD: u8 = 1;
pub const DIGIT: u8 = 2;
pub const PUNCT: u8 = 3;

const KEYWORDS: [&[u8]; 8] = [b"fn", b"let", b"if", b"else", b"for", b"in", b"match", b"return"];

/// Byte classes; a table so that the helper is a load, as in a real lexer.
static CLASSES: [u8; 256] = {
    let mut table = [PUNCT; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        table[b] = if c == b' ' || c == b'\n' || c == b'\t' {
            SPACE
        } else if c.is_ascii_alphabetic() || c == b'_' {
            WORD
        } else if c.is_ascii_digit() {
            DIGIT
        } else {
            PUNCT
        };
        b += 1;
    }
    table
};

/// Bytes that also continue an identifier, as `$` does in some languages.
const IDENT_EXTRA: &[u8] = b"$@";

/// The tiny helper, called for every byte examined. Left to the optimiser, as a real lexer's `peek` would be.
/// The `contains` (a short loop) makes it more than a getter, so the default plan probes it, as in issue 11.
pub fn class_of(byte: u8) -> u8 {
    if IDENT_EXTRA.contains(&byte) {
        WORD
    } else {
        CLASSES[byte as usize]
    }
}

/// One token: a hash of its bytes, with keywords told apart. Big enough that a real program would keep it a call.
#[inline(never)]
pub fn token(bytes: &[u8], class: u8) -> u64 {
    let mut hash = 0xcbf2_9ce4_8422_2325u64 ^ class as u64;
    for &b in bytes {
        hash = (hash ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3);
    }
    if class == WORD {
        if let Some(k) = KEYWORDS.iter().position(|k| *k == bytes) {
            hash = hash.rotate_left(k as u32 + 1);
        }
    }
    hash
}

/// The lexer loop: a token is a run of one class (each punctuation byte is its own token); spaces separate
/// tokens. The byte that ends a run is examined again as the start of the next one.
#[inline(never)]
pub fn tokenize(text: &[u8]) -> u64 {
    let mut sum = 0u64;
    let mut pos = 0;
    while pos < text.len() {
        let start = pos;
        let class = class_of(text[pos]);
        pos += 1;
        if class != PUNCT {
            while pos < text.len() && class_of(text[pos]) == class {
                pos += 1;
            }
        }
        if class != SPACE {
            sum = sum.rotate_left(5) ^ token(&text[start..pos], class);
        }
    }
    sum
}

/// Call-free work of about the tokenizer's length.
#[inline(never)]
pub fn busy(seed: u64, rounds: u64) -> u64 {
    let mut x = seed | 1;
    for _ in 0..rounds {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    x
}

/// Rounds of `busy` per invocation: chosen so that it takes about as long as `tokenize` on 64 KB.
pub const BUSY_ROUNDS: u64 = 128_000;

/// The root: tokenize a document, then do the call-free part.
#[inline(never)]
pub fn tokenize_doc(text: &[u8]) -> u64 {
    let tokens = tokenize(text);
    tokens ^ busy(tokens, black_box(BUSY_ROUNDS))
}

/// Deterministic text: words of 1-7 letters, some numbers, punctuation after some words, single spaces and
/// newlines between them (about 3.6 bytes per token).
pub fn generate_text(len: usize, seed: u64) -> Vec<u8> {
    let mut state = seed | 1;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let words: [&[u8]; 12] =
        [b"fn", b"let", b"x", b"value", b"if", b"parse", b"tok", b"else", b"buffer", b"a", b"match", b"id"];
    let mut text = Vec::with_capacity(len + 16);
    while text.len() < len {
        let r = next();
        if r % 8 == 0 {
            text.extend_from_slice((r >> 8).rem_euclid(100_000).to_string().as_bytes());
        } else {
            text.extend_from_slice(words[(r >> 16) as usize % words.len()]);
        }
        match (r >> 32) % 10 {
            0..=2 => text.push(b"(),;.:"[(r >> 40) as usize % 6]),
            3 => text.extend_from_slice(b"()"),
            _ => {}
        }
        text.push(if (r >> 48) % 12 == 0 { b'\n' } else { b' ' });
    }
    text.truncate(len);
    text
}
