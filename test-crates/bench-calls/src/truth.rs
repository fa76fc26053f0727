//! What a plain build measures: the root and the mid-level functions timed from outside with `Instant`, called
//! directly (outside any root, so an instrumented build's probes stay inert here except for their entry check).

use crate::tokenizer::{class_of, token, tokenize, tokenize_doc, PUNCT, SPACE};
use std::hint::black_box;
use std::time::Instant;

/// The tokens of `text` as (start, end, class), found the way `tokenize` finds them.
fn token_spans(text: &[u8]) -> Vec<(usize, usize, u8)> {
    let mut spans = Vec::new();
    let mut start = 0;
    while start < text.len() {
        let class = class_of(text[start]);
        let run = if class == PUNCT { 1 } else { text[start..].iter().take_while(|&&b| class_of(b) == class).count() };
        if class != SPACE {
            spans.push((start, start + run, class));
        }
        start += run;
    }
    spans
}

/// Mean ns per call of `f` over `rounds` calls (after one warm-up call).
fn mean_ns(rounds: u32, mut f: impl FnMut() -> u64) -> (f64, u64) {
    let mut sum = f();
    let started = Instant::now();
    for _ in 0..rounds {
        sum = sum.wrapping_add(f());
    }
    (started.elapsed().as_nanos() as f64 / rounds as f64, sum)
}

/// Prints `truth <function path> <mean ns> <calls timed>` lines, then returns a checksum.
pub fn run(text: &[u8], rounds: u32) -> u64 {
    let spans = token_spans(text);
    let (root, a) = mean_ns(rounds, || tokenize_doc(black_box(text)));
    let (lexer, b) = mean_ns(rounds, || tokenize(black_box(text)));
    let (all_tokens, c) = mean_ns(rounds, || {
        let mut sum = 0u64;
        for &(start, end, class) in &spans {
            sum = sum.rotate_left(5) ^ token(black_box(&text[start..end]), black_box(class));
        }
        sum
    });
    let token_calls = rounds as u64 * spans.len() as u64;
    println!("truth bench_calls::tokenizer::tokenize_doc {root:.1} {rounds}");
    println!("truth bench_calls::tokenizer::tokenize {lexer:.1} {rounds}");
    println!("truth bench_calls::tokenizer::token {:.1} {token_calls}", all_tokens / spans.len() as f64);
    println!("tokens_per_invocation {}", spans.len());
    a ^ b ^ c
}
