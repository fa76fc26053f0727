//! `cargo calltime ctl [PID] on|off|status|sample N`: control a running instrumented program (see `crate::control`).

use std::time::Duration;

use anyhow::Result;

use super::options;
use crate::cli::{CtlArgs, GlobalArgs};
use crate::control::{self, ControlCommand, ProcessStatus};
use crate::error::UserError;
use crate::ui;
use crate::workspace::Workspace;

/// How long `ctl` waits for the runtime to apply a command (it polls every 20 ms).
const APPLY_TIMEOUT: Duration = Duration::from_secs(2);

pub fn ctl(global: &GlobalArgs, args: &CtlArgs) -> Result<i32> {
    let (pid, command) = parse(&args.words)?;
    // Outside a workspace, only programs run by hand (the runtime's default directory) are found.
    let workspace = Workspace::load(&options::cargo_options(global, &args.cargo)).ok();
    let dirs = control::default_dirs(workspace.as_ref().map(|ws| ws.calltime_dir()).as_deref());
    if command == ControlCommand::Status && pid.is_none() {
        let running = control::running(&dirs);
        if running.is_empty() {
            ui::note("no instrumented process is running");
        }
        for process in &running {
            println!("{}", describe(process));
        }
        return Ok(0);
    }
    let process = control::pick(&dirs, pid)?;
    let (status, took) = control::send(&process, command, APPLY_TIMEOUT)?;
    println!("{}", describe(&status));
    ui::status("Applied", &format!("in {} ms", took.as_millis()));
    Ok(0)
}

fn describe(s: &ProcessStatus) -> String {
    let sample = if s.sample > 1 { format!(", 1 in {} roots", s.sample) } else { String::new() };
    format!(
        "process {}: recording {}{sample}; {} roots seen, {} trees kept, {} dropped; trace {}",
        s.pid,
        if s.recording { "on" } else { "off" },
        s.seen,
        s.kept,
        s.dropped,
        s.trace.display()
    )
}

/// `[PID] COMMAND [ARG]`.
fn parse(words: &[String]) -> Result<(Option<u32>, ControlCommand)> {
    let (pid, rest) = match words.split_first() {
        Some((first, rest)) if first.chars().all(|c| c.is_ascii_digit()) => {
            let pid = first.parse::<u32>().map_err(|_| UserError::new(format!("`{first}` is not a process id")))?;
            (Some(pid), rest)
        }
        _ => (None, words),
    };
    let usage = || UserError::new("usage: cargo calltime ctl [PID] on|off|status|sample N");
    let command = match rest {
        [cmd] if cmd == "on" => ControlCommand::On,
        [cmd] if cmd == "off" => ControlCommand::Off,
        [cmd] if cmd == "status" => ControlCommand::Status,
        [cmd, n] if cmd == "sample" => match n.parse::<u64>() {
            Ok(n) if n >= 1 => ControlCommand::Sample(n),
            _ => return Err(usage().hint(format!("`sample` takes N >= 1 (record 1 in N roots), not `{n}`")).into()),
        },
        [cmd, ..] if cmd == "slower-than" => {
            return Err(UserError::new(
                "`ctl slower-than` needs the keep policy of `--slower-than`, which this build \
                                       does not have yet",
            )
            .hint("use `ctl sample N` to thin out recording instead")
            .into())
        }
        _ => {
            return Err(usage()
                .hint("for example `cargo calltime ctl off`, `cargo calltime ctl 4242 sample 10`")
                .into())
        }
    };
    Ok((pid, command))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        text.split(' ').map(str::to_owned).collect()
    }

    #[test]
    fn commands_with_and_without_a_pid() {
        assert_eq!(parse(&words("off")).unwrap(), (None, ControlCommand::Off));
        assert_eq!(parse(&words("4242 on")).unwrap(), (Some(4242), ControlCommand::On));
        assert_eq!(parse(&words("sample 10")).unwrap(), (None, ControlCommand::Sample(10)));
        assert!(parse(&words("sample 0")).is_err());
        assert!(parse(&words("4242")).is_err());
        assert!(parse(&words("pause")).is_err());
    }
}
