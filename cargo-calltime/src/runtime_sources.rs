//! The runtime's source files (`calltime-rt/src`), shipped inside the tool so that no network or registry is needed:
//! [`crate::shadow::write_runtime`] writes them into the runtime crate the probes link. The same sources compiled when
//! the tool was built (`build.rs`) are here too: `PREBUILT_RUNTIMES`, one rlib per variant, and `PREBUILT_RUSTC`, the
//! `rustc -vV` of the compiler that made them (empty when none could be made); `cargo::prebuilt_runtime` links one
//! when the user's rustc is that one.

include!(concat!(env!("OUT_DIR"), "/prebuilt_runtime.rs"));

/// Every source file of calltime-rt: its path relative to `src/` (with `/`) and its contents. A test checks this
/// list against the directory, so a new module cannot be left out.
pub const RUNTIME_SOURCES: &[(&str, &str)] = &[
    ("adopt.rs", include_str!("../../calltime-rt/src/adopt.rs")),
    ("aggregate.rs", include_str!("../../calltime-rt/src/aggregate.rs")),
    ("alloc.rs", include_str!("../../calltime-rt/src/alloc.rs")),
    ("calibrate.rs", include_str!("../../calltime-rt/src/calibrate.rs")),
    ("clock.rs", include_str!("../../calltime-rt/src/clock.rs")),
    ("control.rs", include_str!("../../calltime-rt/src/control.rs")),
    ("future.rs", include_str!("../../calltime-rt/src/future.rs")),
    ("invocation.rs", include_str!("../../calltime-rt/src/invocation.rs")),
    ("keep.rs", include_str!("../../calltime-rt/src/keep.rs")),
    ("lib.rs", include_str!("../../calltime-rt/src/lib.rs")),
    ("outbox.rs", include_str!("../../calltime-rt/src/outbox.rs")),
    ("outcome.rs", include_str!("../../calltime-rt/src/outcome.rs")),
    ("output.rs", include_str!("../../calltime-rt/src/output.rs")),
    ("probe.rs", include_str!("../../calltime-rt/src/probe.rs")),
    ("recorder.rs", include_str!("../../calltime-rt/src/recorder.rs")),
    ("recorder/allocs.rs", include_str!("../../calltime-rt/src/recorder/allocs.rs")),
    ("recorder/fold.rs", include_str!("../../calltime-rt/src/recorder/fold.rs")),
    ("recorder/outcome.rs", include_str!("../../calltime-rt/src/recorder/outcome.rs")),
    ("retire.rs", include_str!("../../calltime-rt/src/retire.rs")),
    ("retire/cluster.rs", include_str!("../../calltime-rt/src/retire/cluster.rs")),
    ("retire/spread.rs", include_str!("../../calltime-rt/src/retire/spread.rs")),
    ("sampler.rs", include_str!("../../calltime-rt/src/sampler.rs")),
    ("writer.rs", include_str!("../../calltime-rt/src/writer.rs")),
    ("writer/block.rs", include_str!("../../calltime-rt/src/writer/block.rs")),
];

#[cfg(test)]
mod tests {
    use super::RUNTIME_SOURCES;
    use std::path::Path;

    /// Paths of the files under `dir`, relative to `root`, with `/` separators.
    fn files_under(root: &Path, dir: &Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                files_under(root, &path, out);
            } else {
                let rel = path.strip_prefix(root).unwrap();
                out.push(rel.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/"));
            }
        }
    }

    #[test]
    fn every_runtime_source_is_embedded_once() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../calltime-rt/src");
        let mut on_disk = Vec::new();
        files_under(&src, &src, &mut on_disk);
        on_disk.sort();
        let embedded: Vec<String> = RUNTIME_SOURCES.iter().map(|(path, _)| path.to_string()).collect();
        let mut sorted = embedded.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted, embedded, "RUNTIME_SOURCES: sorted by path, each once");
        assert_eq!(embedded, on_disk, "embed every file of calltime-rt/src in RUNTIME_SOURCES, and nothing else");
        for (path, contents) in RUNTIME_SOURCES {
            assert_eq!(std::fs::read_to_string(src.join(path)).unwrap(), *contents, "{path}");
        }
    }

    #[test]
    fn write_runtime_writes_every_source_and_removes_stale_files() {
        let dir = tempfile::tempdir().unwrap();
        let stale = dir.path().join("calltime-rt/src/recorder/mod.rs");
        std::fs::create_dir_all(stale.parent().unwrap()).unwrap();
        std::fs::write(&stale, "// from an older tool").unwrap();
        let runtime = crate::shadow::write_runtime(dir.path()).unwrap();
        assert!(!stale.exists(), "a file that is not a runtime source is removed");
        let mut written = Vec::new();
        files_under(&runtime.join("src"), &runtime.join("src"), &mut written);
        written.sort();
        let embedded: Vec<String> = RUNTIME_SOURCES.iter().map(|(path, _)| path.to_string()).collect();
        assert_eq!(written, embedded);
        for (path, contents) in RUNTIME_SOURCES {
            assert_eq!(std::fs::read_to_string(runtime.join("src").join(path)).unwrap(), *contents, "{path}");
        }
        assert!(runtime.join("Cargo.toml").is_file());
    }
}
