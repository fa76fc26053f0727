pub struct Source<'i> {
    text: &'i str,
}

impl<'i> Source<'i> {
    pub fn new(text: &'i str) -> Self {
        Source { text }
    }

    pub fn count(&self) -> usize {
        crate::lex(self.text).len()
    }
}
