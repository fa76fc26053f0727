use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Get,
    Post,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub method: Method,
    pub path: String,
    pub query: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParseError {
    Empty,
    UnknownMethod(String),
    BadPath(String),
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseError::Empty => write!(f, "empty request"),
            ParseError::UnknownMethod(m) => write!(f, "unknown method {m}"),
            ParseError::BadPath(p) => write!(f, "bad path {p}"),
        }
    }
}

/// `GET /users/1?verbose` -> Request.
pub fn parse_request(line: &str) -> Result<Request, ParseError> {
    let line = line.trim();
    if line.is_empty() {
        return Err(ParseError::Empty);
    }
    let (method, target) = line.split_once(' ').unwrap_or((line, "/"));
    let method = parse_method(method)?;
    let (path, query) = split_target(target.trim())?;
    Ok(Request { method, path, query })
}

fn parse_method(word: &str) -> Result<Method, ParseError> {
    match word {
        "GET" => Ok(Method::Get),
        "POST" => Ok(Method::Post),
        other => Err(ParseError::UnknownMethod(other.to_owned())),
    }
}

fn split_target(target: &str) -> Result<(String, Option<String>), ParseError> {
    if !target.starts_with('/') {
        return Err(ParseError::BadPath(target.to_owned()));
    }
    match target.split_once('?') {
        Some((path, query)) => Ok((path.to_owned(), Some(query.to_owned()))),
        None => Ok((target.to_owned(), None)),
    }
}

/// The number in `/checksum/<n>`. Panics on anything that is not a number: the server's bug on bad input.
pub fn parse_count(text: &str) -> u32 {
    text.parse().expect("count must be a number")
}
