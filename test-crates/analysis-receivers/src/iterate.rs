//! A workspace type that implements `Iterator` (pest's `Pairs`, url's `Input`): std's provided methods called on
//! it (`map`, `take_while`, `count`, `by_ref`) pull items through its `next`, an edge; the method is no unresolved
//! call of the workspace.

pub struct Words<'a> {
    rest: &'a str,
}

impl<'a> Iterator for Words<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        let text = self.rest.trim_start();
        if text.is_empty() {
            return None;
        }
        let end = text.find(' ').unwrap_or(text.len());
        self.rest = &text[end..];
        Some(&text[..end])
    }
}

pub fn words(text: &str) -> Words<'_> {
    Words { rest: text }
}

fn weight(word: &str) -> usize {
    word.bytes().filter(|b| b.is_ascii_alphabetic()).count()
}

pub fn total(text: &str) -> usize {
    let mut input = words(text);
    let short = input.by_ref().take_while(|w| w.len() < 8).count();
    short + words(text).map(weight).sum::<usize>()
}
