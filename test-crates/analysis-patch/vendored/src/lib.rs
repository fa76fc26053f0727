pub struct Source<'i> {
    text: &'i str,
}

impl<'i> Source<'i> {
    pub fn new(text: &'i str) -> Self {
        Source { text }
    }

    pub fn count(&self) -> usize {
        lex(self.text).len()
    }
}

pub fn lex(text: &str) -> Vec<String> {
    text.split(' ').map(str::to_owned).collect()
}
