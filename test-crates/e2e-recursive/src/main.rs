//! A recursive-descent parser whose invocations fold: `document` parses nested lists (`(` items `)`, digits)
//! 4 levels deep, 6 items a list, about 10,900 calls of `item`, `list` and `digit` per document, 12 documents.
//! `item` and `list` call each other (a recursive cluster), `digit` is the leaf under them.

fn digit(b: u8) -> u64 {
    u64::from(b - b'0')
}

fn list(text: &[u8], pos: &mut usize) -> u64 {
    *pos += 1; // '('
    let mut sum = 0;
    while text[*pos] != b')' {
        sum = sum * 3 + item(text, pos);
    }
    *pos += 1;
    sum % 1_000_003
}

fn item(text: &[u8], pos: &mut usize) -> u64 {
    if text[*pos] == b'(' {
        list(text, pos)
    } else {
        *pos += 1;
        digit(text[*pos - 1])
    }
}

fn document(text: &[u8]) -> u64 {
    let mut pos = 0;
    item(text, &mut pos)
}

fn nested(depth: u32, seed: &mut u64, out: &mut String) {
    if depth == 0 {
        *seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        out.push(char::from(b'0' + (*seed >> 60) as u8 % 10));
        return;
    }
    out.push('(');
    for _ in 0..6 {
        nested(depth - 1, seed, out);
    }
    out.push(')');
}

fn main() {
    let mut total = 0;
    for doc in 0..12 {
        let (mut seed, mut text) = (doc, String::new());
        nested(5, &mut seed, &mut text);
        total ^= document(text.as_bytes());
    }
    println!("{total}");
}
