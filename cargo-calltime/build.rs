//! Compiles the runtime (`calltime-rt`) while the tool itself is built, with the rustc that builds the tool, so that
//! a user whose toolchain is that very rustc links it instead of compiling it on their first run (like std, which
//! ships precompiled). One rlib per variant the shadow build can need: the dev and release profiles (they differ in
//! debug assertions and overflow checks). They are embedded in the tool
//! (`include_bytes!`: `cargo install` deletes its target dir) with the `rustc -vV` that made them; `cargo.rs`
//! `prebuilt_runtime` uses one only when the user's `rustc -vV` is the same, and compiles the runtime otherwise.
//!
//! A compile that fails is not an error: the tool is then built without prebuilt runtimes (a cargo warning says
//! so) and every first run compiles the runtime, as before.

use std::path::{Path, PathBuf};
use std::process::Command;

/// `(name, dev profile)`: names are what `cargo.rs` asks for. The counting allocator is no variant: the copy
/// declares it in the executable's own crate.
const VARIANTS: &[(&str, bool)] = &[("dev", true), ("release", false)];

fn main() {
    let manifest_dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let sources = manifest_dir.join("../calltime-rt/src");
    println!("cargo:rerun-if-changed={}", sources.display());
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=CALLTIME_NO_PREBUILT_RUNTIME");
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let built = if std::env::var_os("CALLTIME_NO_PREBUILT_RUNTIME").is_some() {
        Err("CALLTIME_NO_PREBUILT_RUNTIME is set".to_owned())
    } else {
        prebuild(Path::new(&rustc), &sources, &out_dir)
    };
    let generated = match built {
        Ok((version, rlibs)) => {
            let entries: Vec<String> =
                rlibs.iter().map(|(name, path)| format!("    ({name:?}, include_bytes!({path:?})),\n")).collect();
            format!(
                "/// `rustc -vV` of the compiler that built the prebuilt runtimes.\n\
                 pub const PREBUILT_RUSTC: &str = {version:?};\n\
                 /// The runtime's rlib per variant (`dev`, `release`).\n\
                 pub const PREBUILT_RUNTIMES: &[(&str, &[u8])] = &[\n{}];\n",
                entries.concat()
            )
        }
        Err(why) => {
            println!("cargo:warning=no prebuilt runtime ({why}): every first run of the tool will compile it");
            "pub const PREBUILT_RUSTC: &str = \"\";\npub const PREBUILT_RUNTIMES: &[(&str, &[u8])] = &[];\n".to_owned()
        }
    };
    std::fs::write(out_dir.join("prebuilt_runtime.rs"), generated).expect("cannot write prebuilt_runtime.rs");
}

/// Compiles every variant (both at once) into `out_dir/prebuilt-<variant>/`; returns `rustc -vV` and the rlibs.
#[allow(clippy::type_complexity)]
fn prebuild(rustc: &Path, sources: &Path, out_dir: &Path) -> Result<(String, Vec<(&'static str, PathBuf)>), String> {
    let version = Command::new(rustc)
        .arg("-vV")
        .output()
        .map_err(|e| format!("cannot run {}: {e}", rustc.display()))
        .and_then(|out| String::from_utf8(out.stdout).map_err(|e| e.to_string()))?;
    // The tool runs where it is built for: a cross-built tool would embed runtimes of the wrong target.
    let host = version.lines().find_map(|l| l.strip_prefix("host: ")).unwrap_or_default();
    if std::env::var("TARGET").ok().as_deref() != Some(host) {
        return Err(format!("the tool is built for another target than rustc's host {host}"));
    }
    let compile = |&(name, dev): &(&'static str, bool)| -> Result<(&'static str, PathBuf), String> {
        let dir = out_dir.join(format!("prebuilt-{name}"));
        std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let mut cmd = Command::new(rustc);
        // What cargo passes for `[profile.<dev|release>.package.calltime-rt]` as the shadow manifest sets it
        // (opt-level 3, no debug info, one codegen unit), except `-C embed-bitcode=no`: the bitcode lets a user's
        // `lto = true` profile link it. A distinct `-C metadata` per variant, like cargo's hash.
        cmd.args(["--crate-name", "calltime_rt", "--edition", "2021", "--crate-type", "lib", "--emit=link"])
            .arg(sources.join("lib.rs"))
            .args(["-C", "opt-level=3", "-C", "codegen-units=1", "-C", "debuginfo=0", "--cap-lints", "allow"])
            .args(["-C", &format!("metadata=calltime-prebuilt-{name}")])
            .arg("--out-dir")
            .arg(&dir);
        if dev {
            cmd.args(["-C", "debug-assertions=on", "-C", "overflow-checks=on"]);
        }
        let out = cmd.output().map_err(|e| format!("cannot run {}: {e}", rustc.display()))?;
        if !out.status.success() {
            return Err(format!("compiling variant {name} failed: {}", String::from_utf8_lossy(&out.stderr)));
        }
        Ok((name, dir.join("libcalltime_rt.rlib")))
    };
    let (first, second) = VARIANTS.split_at(VARIANTS.len() / 2);
    let rlibs = std::thread::scope(|scope| {
        let other = scope.spawn(|| second.iter().map(compile).collect::<Result<Vec<_>, _>>());
        let mut rlibs = first.iter().map(compile).collect::<Result<Vec<_>, _>>()?;
        rlibs.extend(other.join().map_err(|_| "a compile thread panicked".to_owned())??);
        Ok::<_, String>(rlibs)
    })?;
    Ok((version, rlibs))
}
