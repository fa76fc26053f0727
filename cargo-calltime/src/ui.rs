//! Terminal output shared by every command: colour choice, progress lines on stderr, error printing, and the
//! tool's own `-v` logging.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

use anstyle::{AnsiColor, Style};

use crate::cli::ColorChoice;

static QUIET: AtomicBool = AtomicBool::new(false);

/// Sets up colour (honouring `--color`, NO_COLOR and CARGO_TERM_COLOR) and `-v` logging.
pub fn init(verbose: u8, color: Option<ColorChoice>) {
    let choice = color.or_else(|| match std::env::var("CARGO_TERM_COLOR").ok().as_deref() {
        Some("always") => Some(ColorChoice::Always),
        Some("never") => Some(ColorChoice::Never),
        _ => None,
    });
    let anstream_choice = match choice {
        Some(ColorChoice::Always) => anstream::ColorChoice::Always,
        Some(ColorChoice::Never) => anstream::ColorChoice::Never,
        Some(ColorChoice::Auto) | None => anstream::ColorChoice::Auto,
    };
    anstream_choice.write_global();
    let level = match verbose {
        0 => "warn",
        1 => "cargo_calltime=info",
        _ => "cargo_calltime=debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("CALLTIME_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level));
    // The log lines follow `--color` like every other output (tracing's own default looks at NO_COLOR only).
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(color_stderr())
        .without_time()
        .try_init();
}

/// Whether stdout gets colour (after `init`).
pub fn color_stdout() -> bool {
    !matches!(anstream::AutoStream::choice(&std::io::stdout()), anstream::ColorChoice::Never)
}

pub fn set_quiet(quiet: bool) {
    QUIET.store(quiet, Ordering::Relaxed);
}

/// Whether stderr gets colour (after `init`).
pub fn color_stderr() -> bool {
    !matches!(anstream::AutoStream::choice(&std::io::stderr()), anstream::ColorChoice::Never)
}

/// A cargo-style progress line on stderr: `   Analysing myapp (42 functions)`.
pub fn status(verb: &str, message: &str) {
    if !QUIET.load(Ordering::Relaxed) {
        status_always(verb, message);
    }
}

/// A status line shown even with `-q`: the result the user asked for (`Wrote FILE`).
pub fn status_always(verb: &str, message: &str) {
    let style = Style::new().bold().fg_color(Some(AnsiColor::Green.into()));
    let _ = writeln!(anstream::stderr(), "{style}{verb:>12}{style:#} {message}");
}

/// A `warning:` line on stderr (shown even with `-q`, like cargo).
pub fn warn(message: &str) {
    let style = Style::new().bold().fg_color(Some(AnsiColor::Yellow.into()));
    let _ = writeln!(anstream::stderr(), "{style}warning{style:#}: {message}");
}

/// A `note:` on stderr: advice about the run, left out with `-q`.
pub fn note(message: &str) {
    if QUIET.load(Ordering::Relaxed) {
        return;
    }
    let style = Style::new().bold().fg_color(Some(AnsiColor::Cyan.into()));
    let _ = writeln!(anstream::stderr(), "{style}note{style:#}: {message}");
}

/// Prints an error chain as `error: outer: inner` plus any `hint:` lines the message carries.
pub fn error(err: &anyhow::Error) {
    let style = Style::new().bold().fg_color(Some(AnsiColor::Red.into()));
    let mut text = String::new();
    for (i, cause) in err.chain().enumerate() {
        if i > 0 {
            text.push_str(": ");
        }
        text.push_str(&cause.to_string());
    }
    let _ = writeln!(anstream::stderr(), "{style}error{style:#}: {text}");
    for hint in crate::error::hints_of(err) {
        let _ = writeln!(anstream::stderr(), "  hint: {hint}");
    }
}
