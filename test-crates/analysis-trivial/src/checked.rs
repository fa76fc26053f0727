//! Bodies that invoke the crate's own macros (defined in lib.rs, before this module): only `tri!` keeps a body
//! straight-line.

pub struct Checked {
    bytes: Vec<u8>,
    at: usize,
}

/// What `counted!` calls.
pub fn tally(n: usize) -> usize {
    (0..n).filter(|i| i % 3 == 0).count()
}

/// What `named` has `call_it!` call.
fn tally_ten() -> usize {
    tally(10)
}

impl Checked {
    /// The root of the macro cases.
    pub fn scan(&mut self) -> Result<usize, ()> {
        let first = tri!(self.peek_or_zero());
        Ok(usize::from(first) + tri!(self.counted()) + tri!(self.spun()) + tri!(self.named()))
    }

    // A forwarder: `tri!` is a match and a return, so the body runs straight through, and its one call is trivial.
    fn peek_or_zero(&mut self) -> Result<u8, ()> {
        Ok(tri!(self.peek()).unwrap_or(0))
    }

    // Trivial.
    fn peek(&mut self) -> Result<Option<u8>, ()> {
        Ok(self.bytes.get(self.at).copied())
    }

    // Probed: `counted!` calls a function, which the body does not show.
    fn counted(&mut self) -> Result<usize, ()> {
        Ok(counted!(self.at))
    }

    // Probed: `spin!` loops.
    fn spun(&mut self) -> Result<usize, ()> {
        Ok(spin!(self.at))
    }

    // Probed: `call_it!` calls the function it is given.
    fn named(&mut self) -> Result<usize, ()> {
        Ok(call_it!(tally_ten))
    }
}
