//! A parser-combinator library in miniature (winnow's and nom's shapes): which functions the plan leaves out
//! because they only build a parser whose work runs later, and which tiny leaves are trivial.

pub trait AsChar {
    fn as_char(self) -> char;
}

impl AsChar for char {
    // Trivial: `self` by value is a `char`, which drops nothing.
    #[inline(always)]
    fn as_char(self) -> char {
        self
    }
}

impl AsChar for u8 {
    #[inline(always)]
    fn as_char(self) -> char {
        self as char
    }
}

impl AsChar for &u8 {
    // Trivial: a reference drops nothing; its call reaches the trivial `u8` impl.
    #[inline(always)]
    fn as_char(self) -> char {
        (*self).as_char()
    }
}

pub trait ContainsToken<C> {
    fn contains_token(&self, token: C) -> bool;
}

impl<C: AsChar> ContainsToken<C> for char {
    // Trivial: `token` is a `C: AsChar`, every impl of which (in the workspace) drops nothing and is trivial.
    #[inline(always)]
    fn contains_token(&self, token: C) -> bool {
        *self == token.as_char()
    }
}

impl<C, F: Fn(C) -> bool> ContainsToken<C> for F {
    // Not trivial: it calls a closure the caller passes.
    #[inline(always)]
    fn contains_token(&self, token: C) -> bool {
        self(token)
    }
}

pub type Result<'a, O> = std::result::Result<(&'a str, O), ()>;

pub trait Parser<'a, O> {
    fn parse(&mut self, input: &'a str) -> Result<'a, O>;
}

impl<'a, O, F: FnMut(&'a str) -> Result<'a, O>> Parser<'a, O> for F {
    fn parse(&mut self, input: &'a str) -> Result<'a, O> {
        self(input)
    }
}

/// Left out: returns `impl Parser` built without a loop; the loop runs in the closure, when the parser is used.
pub fn take_while<'a, T: ContainsToken<char>>(set: T) -> impl Parser<'a, &'a str> {
    move |input: &'a str| {
        let mut end = 0;
        for c in input.chars() {
            if !set.contains_token(c) {
                break;
            }
            end += c.len_utf8();
        }
        Ok((&input[end..], &input[..end]))
    }
}

/// Left out: a closure factory.
pub fn one(expected: char) -> impl FnMut(&str) -> Result<'_, char> {
    move |input: &str| match input.chars().next() {
        Some(c) if expected.contains_token(c) => Ok((&input[c.len_utf8()..], c)),
        _ => Err(()),
    }
}

/// Left out: a boxed closure built from other builders.
pub fn delimited<'a, O: 'a>(
    mut open: impl Parser<'a, char> + 'a,
    mut inner: impl Parser<'a, O> + 'a,
    mut close: impl Parser<'a, char> + 'a,
) -> Box<dyn FnMut(&'a str) -> Result<'a, O> + 'a> {
    Box::new(move |input: &'a str| {
        let (input, _) = open.parse(input)?;
        let (input, o) = inner.parse(input)?;
        let (input, _) = close.parse(input)?;
        Ok((input, o))
    })
}

/// Probed: returns `impl Iterator`, but sorts before returning (a loop of its own).
pub fn sorted_words(text: &str) -> impl Iterator<Item = &str> {
    let mut words: Vec<&str> = Vec::new();
    for w in text.split(' ') {
        words.push(w);
    }
    words.sort_unstable();
    words.into_iter()
}

/// Probed: a named return type.
pub fn digits(input: &str) -> Result<'_, &str> {
    take_while(|c: char| c.is_ascii_digit()).parse(input)
}

/// How many repetitions a parser takes (winnow's `Range`).
#[derive(Clone, Copy)]
pub struct Span {
    pub start: usize,
    pub end: Option<usize>,
}

impl Span {
    // Trivial: `Option<usize>` and `(usize, usize)` taken by value drop nothing.
    pub fn raw(start: usize, end: Option<usize>, _hint: (usize, usize)) -> Self {
        Span { start, end }
    }
}

/// A parser whose output is mapped (winnow's `Map`): a named parser type.
pub struct Map<P, F> {
    parser: P,
    map: F,
    marker: std::marker::PhantomData<u32>,
}

/// Left out: only stores its arguments in the named parser type it returns; the work runs in `Map::parse`.
pub fn map<P, F>(parser: P, map: F) -> Map<P, F> {
    Map { parser, map, marker: Default::default() }
}

impl<'a, O2, P: Parser<'a, &'a str>, F: FnMut(&'a str) -> O2> Parser<'a, O2> for Map<P, F> {
    fn parse(&mut self, input: &'a str) -> Result<'a, O2> {
        let (rest, o) = self.parser.parse(input)?;
        Ok((rest, (self.map)(o)))
    }
}

/// Words and their count.
pub struct Counted<'a> {
    pub n: usize,
    pub words: Vec<&'a str>,
}

impl<'a> Counted<'a> {
    /// Probed: computes a field (`words.len()`) and drops nothing it does not store, but a call is work of its own.
    pub fn new(words: Vec<&'a str>) -> Self {
        Counted { n: words.len(), words }
    }
}

/// Text being parsed.
pub struct Stream {
    pub text: String,
}

impl Stream {
    /// Probed: it loops, calling the predicate it is given.
    pub fn split_at(&self, stop: impl Fn(char) -> bool) -> usize {
        let mut at = 0;
        for c in self.text.chars() {
            if stop(c) {
                break;
            }
            at += c.len_utf8();
        }
        at
    }
}

/// Probed: it loops.
pub fn weigh(c: char) -> usize {
    (0..c as usize % 7).map(|i| i * 2).sum()
}

/// Left out as a forwarder (nom's `multispace0`): its closure runs inside `split_at`, which is probed.
pub fn space0(s: &Stream) -> usize {
    s.split_at(|c| weigh(c) > 3 || c != ' ')
}

/// Probed: two calls into the workspace.
pub fn space_then_digits(s: &Stream) -> usize {
    s.split_at(|c| c != ' ') + s.split_at(|c| !c.is_ascii_digit())
}

/// Probed: its closure runs in `Option::map`, in this function.
pub fn first_weight(s: &Stream) -> Option<usize> {
    s.text.chars().next().map(|c| weigh(c))
}

/// The root: a list of digit runs in brackets.
pub fn parse_list(input: &str) -> usize {
    let mut n = 0;
    let mut rest = input;
    while let Ok((r, d)) = delimited(one('['), digits, one(']'))(rest) {
        n += d.len();
        rest = r;
        rest = take_while(' ').parse(rest).map_or(rest, |(r, _)| r);
    }
    n += Span::raw(1, None, (0, 0)).start;
    n += map(digits, |d: &str| d.len()).parse("12").map_or(0, |(_, len)| len);
    n += Counted::new(input.split(' ').collect()).n;
    let stream = Stream { text: input.to_owned() };
    n += space0(&stream) + space_then_digits(&stream) + first_weight(&stream).unwrap_or(0);
    n + sorted_words(input).count() + usize::from('a'.contains_token(b'a')) + usize::from('b'.contains_token(&b'b'))
}
