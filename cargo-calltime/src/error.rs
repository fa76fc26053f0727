//! Leaf module: the typed error a user sees. A message plus hints, instead of prose with `\n  hint:` spliced in, so
//! that the printer (ui) styles hints and tests can match them without parsing text.

use std::fmt;

/// An error caused by the user's input or environment: one lower-case message naming the thing, and hints that say
/// what to do next. Wrap it in `anyhow::Error` as usual; `ui::error` finds it in the chain and prints the hints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserError {
    pub message: String,
    pub hints: Vec<String>,
}

impl UserError {
    pub fn new(message: impl Into<String>) -> Self {
        UserError { message: message.into(), hints: Vec::new() }
    }

    /// Adds a `hint:` line (builder style: `UserError::new("..").hint("..")`).
    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hints.push(hint.into());
        self
    }
}

impl fmt::Display for UserError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for UserError {}

/// The hints of the first `UserError` in an error chain (empty when there is none).
pub fn hints_of(err: &anyhow::Error) -> &[String] {
    err.chain().find_map(|cause| cause.downcast_ref::<UserError>()).map_or(&[], |user| user.hints.as_slice())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hints_are_found_through_context() {
        let err = anyhow::Error::new(UserError::new("no root named `x`").hint("try `--root server::handle`"))
            .context("cannot plan");
        assert_eq!(err.to_string(), "cannot plan");
        assert_eq!(hints_of(&err), ["try `--root server::handle`".to_string()]);
        assert!(hints_of(&anyhow::anyhow!("plain")).is_empty());
    }
}
