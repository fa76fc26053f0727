//! `panic = "abort"` keeps completed trees: builds the runtime and a small program with `-C panic=abort` (as a user's
//! release profile would), runs it, and reads the trace. The writer thread is held, so only the chained panic hook
//! can have written the trees before the process aborted.

mod common;

use std::path::PathBuf;
use std::process::Command;

const PROGRAM: &str = r#"
use calltime_rt::__private::{enter, enter_root, hold_writer, PlanInfo};

static PLAN: PlanInfo = PlanInfo { id: "plan-abort", table: "", functions: 4 };

fn root(fail: bool) {
    let __calltime_guard = enter_root(0, &PLAN);
    work();
    if fail {
        panic!("abort now");
    }
}

fn work() {
    let __calltime_guard = enter(1);
    std::hint::black_box(());
}

fn main() {
    hold_writer(true);
    root(false);
    root(false);
    std::thread::spawn(|| root(true)).join().ok();
    unreachable!("panic = abort ends the process");
}
"#;

fn rustc(args: &[&str]) {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let output = Command::new(&rustc).args(args).output().unwrap();
    assert!(output.status.success(), "{rustc} {}\n{}", args.join(" "), String::from_utf8_lossy(&output.stderr));
}

#[test]
fn panic_abort_keeps_completed_trees() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("calltime-rt-abort");
    std::fs::create_dir_all(&dir).unwrap();
    let lib = concat!(env!("CARGO_MANIFEST_DIR"), "/src/lib.rs");
    let d = dir.to_str().unwrap();
    rustc(
        &["--edition", "2021", "--crate-type", "rlib", "--crate-name", "calltime_rt", "-C", "panic=abort"]
            .into_iter()
            .chain(["--out-dir", d, lib])
            .collect::<Vec<_>>(),
    );
    let main = dir.join("main.rs");
    std::fs::write(&main, PROGRAM).unwrap();
    let rlib = format!("calltime_rt={d}/libcalltime_rt.rlib");
    let exe = dir.join("abort_program");
    rustc(&[
        "--edition",
        "2021",
        "-C",
        "panic=abort",
        "--extern",
        &rlib,
        "-L",
        d,
        "-o",
        exe.to_str().unwrap(),
        main.to_str().unwrap(),
    ]);
    let trace_path = dir.join("abort.trace");
    let _ = std::fs::remove_file(&trace_path);
    let output = Command::new(&exe).env("CALLTIME_OUT", &trace_path).output().unwrap();
    assert!(!output.status.success(), "the program aborts");
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(output.status.signal(), Some(6), "SIGABRT: {}", String::from_utf8_lossy(&output.stderr));
    }
    let trace = common::parse(&common::read_trace(&trace_path));
    // The two completed invocations; the third never completed (no unwinding under panic = abort).
    assert_eq!(trace.shapes(), ["0[1]", "0[1]"]);
    assert_eq!(trace.stats, Some([3, 2, 0, 0, 0]));
    assert!(trace.last_line.starts_with("stats "));
}
