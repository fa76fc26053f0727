//! What a std sequence's accessors return is std's (`Vec::first`, `last_mut`, `pop` give an `Option`,
//! `split_off` the same `Vec`): the methods called on it are std's, not every workspace method of that name
//! (markdown-rs's `self.buffers.last_mut().expect(..)` matched `Tokenizer::expect`, and
//! `self.resolvers.split_off(0)`'s `len` a workspace `len`).

/// A workspace method named like `Option`'s; `chains::Lengthy` has a `len`.
pub struct Checker;

impl Checker {
    pub fn expect(&self, what: &str) -> usize {
        let mut n = 0;
        for _ in what.chars() {
            n += 1;
        }
        n
    }
}

pub struct Lines {
    pub lines: Vec<String>,
    pub stack: Vec<usize>,
}

impl Lines {
    pub fn measure(&mut self, checker: &Checker) -> usize {
        let widest = self.lines.last_mut().expect("a line");
        widest.push('!');
        let rest = self.stack.split_off(1);
        let top = self.stack.pop().expect("a top");
        rest.len() + top + checker.expect("typed")
    }
}
