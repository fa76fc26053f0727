//! The file side of the copy: which directories are left out, and writes that touch a file only when its content
//! changes (cargo decides what to rebuild from mtimes).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::normalize;
use crate::workspace::Workspace;

/// Directories never copied: version control metadata.
const VCS_DIRS: &[&str] = &[".git", ".hg", ".svn", ".jj", ".pijul", "_darcs", ".bzr"];

/// Directories left out of the copy: the user's target dir (wherever it is), any cargo target dir inside the
/// workspace (it holds a CACHEDIR.TAG), and version control metadata.
pub(super) fn skipped_dirs(ws: &Workspace) -> Vec<PathBuf> {
    let mut dirs = vec![normalize(&ws.target_dir)];
    if let Ok(canon) = ws.target_dir.canonicalize() {
        dirs.push(canon);
    }
    dirs
}

pub(super) fn is_skipped_dir(path: &Path, skip: &[PathBuf]) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if VCS_DIRS.contains(&name) {
        return true;
    }
    if name == "target" && path.join("CACHEDIR.TAG").exists() {
        return true;
    }
    let normalized = normalize(path);
    skip.contains(&normalized)
}

/// Writes `bytes` to `path` unless it already holds exactly them. Returns whether it wrote.
pub fn write_if_changed(path: &Path, bytes: &[u8]) -> Result<bool> {
    if let Ok(existing) = std::fs::read(path) {
        if existing == bytes {
            return Ok(false);
        }
    }
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).with_context(|| format!("cannot create {}", parent.display()))?;
    }
    std::fs::write(path, bytes).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(true)
}

/// Copies `src` to `dst` unless `dst` already has the same content. A new file keeps the source's mtime (so the next
/// run can skip it by size and mtime); a changed file gets a fresh mtime so cargo sees the change.
pub(super) fn copy_if_changed(src: &Path, dst: &Path) -> Result<bool> {
    let src_meta = std::fs::metadata(src).with_context(|| format!("cannot read {}", src.display()))?;
    match std::fs::metadata(dst) {
        Ok(dst_meta) if dst_meta.is_file() => {
            if dst_meta.len() == src_meta.len() {
                if dst_meta.modified().ok().is_some() && dst_meta.modified().ok() == src_meta.modified().ok() {
                    return Ok(false);
                }
                let a = std::fs::read(src).with_context(|| format!("cannot read {}", src.display()))?;
                let b = std::fs::read(dst).with_context(|| format!("cannot read {}", dst.display()))?;
                if a == b {
                    return Ok(false);
                }
            }
            std::fs::copy(src, dst).with_context(|| format!("cannot copy {} to {}", src.display(), dst.display()))?;
            Ok(true)
        }
        Ok(_) => {
            // A directory where a file now is.
            std::fs::remove_dir_all(dst).with_context(|| format!("cannot remove {}", dst.display()))?;
            copy_new(src, dst, &src_meta)
        }
        Err(_) => copy_new(src, dst, &src_meta),
    }
}

fn copy_new(src: &Path, dst: &Path, src_meta: &std::fs::Metadata) -> Result<bool> {
    if let Some(parent) = dst.parent() {
        std::fs::create_dir_all(parent).with_context(|| format!("cannot create {}", parent.display()))?;
    }
    std::fs::copy(src, dst).with_context(|| format!("cannot copy {} to {}", src.display(), dst.display()))?;
    if let Ok(mtime) = src_meta.modified() {
        if let Ok(file) = std::fs::File::options().write(true).open(dst) {
            let _ = file.set_modified(mtime);
        }
    }
    Ok(true)
}

/// Cargo.lock: the shadow build adds calltime-rt to the copy's lock. Copy the user's lock again only when the user's
/// changed since the last copy (remembered beside the copy), so the copy's lock is not re-resolved at every run.
pub(super) fn copy_lock_if_changed(src: &Path, dst: &Path) -> Result<bool> {
    let user = std::fs::read(src).with_context(|| format!("cannot read {}", src.display()))?;
    let memo = dst.with_file_name("Cargo.lock.calltime-source");
    let unchanged = std::fs::read(&memo).is_ok_and(|m| m == user) && dst.exists();
    if unchanged {
        return Ok(false);
    }
    write_if_changed(dst, &user)?;
    write_if_changed(&memo, &user)?;
    Ok(true)
}

/// Removes from `dir` every file and directory not in `kept` (paths relative to `dir`), returning how many files.
pub(super) fn remove_stale(dir: &Path, kept: &BTreeSet<PathBuf>) -> Result<usize> {
    let mut removed = 0;
    let mut stale_dirs = Vec::new();
    for entry in walkdir::WalkDir::new(dir).min_depth(1).contents_first(true).into_iter().flatten() {
        let Ok(rel) = entry.path().strip_prefix(dir) else { continue };
        // The copy's lock (with the calltime-rt entry) stays even when the user has none, so it is not re-resolved.
        if kept.contains(rel) || rel == Path::new("Cargo.lock.calltime-source") || rel == Path::new("Cargo.lock") {
            continue;
        }
        if entry.file_type().is_dir() {
            stale_dirs.push(entry.path().to_owned());
        } else {
            std::fs::remove_file(entry.path()).with_context(|| format!("cannot remove {}", entry.path().display()))?;
            removed += 1;
        }
    }
    for d in stale_dirs {
        let _ = std::fs::remove_dir(&d);
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_if_changed_keeps_identical_files() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("x/y.rs");
        assert!(write_if_changed(&f, b"a").unwrap());
        assert!(!write_if_changed(&f, b"a").unwrap());
        assert!(write_if_changed(&f, b"b").unwrap());
    }
}
