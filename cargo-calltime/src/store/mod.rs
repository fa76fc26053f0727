//! The run store: every run's plan, provenance, summary stats and per-call-path aggregates in an embedded SQLite
//! database (`<target>/calltime/runs.sqlite`), with the trace files kept beside it under `runs/` and referenced.
//!
//! Safe with several writers: the database is in WAL mode with a busy timeout, each run goes in within one
//! transaction, and SQLite's journal makes a writer killed mid-write leave the previous state. Trace files are
//! copied in before their row is committed, so a committed row never names a half-written file; a kill in between
//! leaves an unreferenced file that the next retention pass removes.

pub mod dates;
mod record;
mod schema;
mod select;

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};

use crate::error::UserError;

pub use record::{machine_description, GitInfo, PathRow, RootStat, RunRecord, Source};
pub use select::Selector;

/// How long a writer waits for another one before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// An unreferenced trace file this old is an orphan of a killed writer, not one about to be committed.
const ORPHAN_AGE: Duration = Duration::from_secs(600);

/// The store of `calltime_dir` (`<target>/calltime`).
pub fn store_path(calltime_dir: &Path) -> PathBuf {
    calltime_dir.join("runs.sqlite")
}

/// Where the store keeps the runs' trace files.
pub fn runs_dir(calltime_dir: &Path) -> PathBuf {
    calltime_dir.join("runs")
}

/// Which runs a query returns; every bound is optional and inclusive.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunFilter {
    pub label: Option<String>,
    /// ms since the Unix epoch, of the recording date.
    pub since_ms: Option<i64>,
    pub until_ms: Option<i64>,
    /// A root function's path, or its tail after `::` (`server::handle` matches `demo::server::handle`).
    pub root: Option<String>,
}

/// A run as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredRun {
    pub id: i64,
    pub record: RunRecord,
}

/// Runs `op` again, for up to [`BUSY_TIMEOUT`], while another connection holds the lock it needs.
fn retry_while_busy<T>(mut op: impl FnMut() -> rusqlite::Result<T>) -> rusqlite::Result<T> {
    let start = std::time::Instant::now();
    loop {
        match op() {
            Err(rusqlite::Error::SqliteFailure(e, _))
                if matches!(e.code, rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
                    && start.elapsed() < BUSY_TIMEOUT =>
            {
                std::thread::sleep(Duration::from_millis(10));
            }
            result => return result,
        }
    }
}

pub struct Store {
    conn: Connection,
    path: PathBuf,
}

impl Store {
    /// Opens (creating if needed) the store at `path` and brings its schema up to date.
    pub fn open(path: &Path) -> Result<Store> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).with_context(|| format!("cannot create directory {}", dir.display()))?;
        }
        let conn = Connection::open(path).with_context(|| format!("cannot open the run store {}", path.display()))?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        // WAL: readers never block the writer and a killed writer leaves only an uncommitted tail, ignored on open.
        // SQLite does not call the busy handler for this switch: two tools opening a new store at once retry here.
        let mode: String = retry_while_busy(|| conn.query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0)))?;
        if !mode.eq_ignore_ascii_case("wal") {
            tracing::debug!("run store journal mode is {mode}, not wal");
        }
        conn.execute_batch("PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;")?;
        let mut store = Store { conn, path: path.to_owned() };
        store.migrate().with_context(|| format!("cannot prepare the run store {}", path.display()))?;
        Ok(store)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Applies the migrations this store lacks, all in one write transaction (two tools opening a new store at once
    /// apply them once).
    fn migrate(&mut self) -> Result<()> {
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let applied: i64 = tx.query_row("PRAGMA user_version", [], |row| row.get(0))?;
        let known = schema::MIGRATIONS.len() as i64;
        if applied > known {
            return Err(UserError::new(format!(
                "the run store {} has schema version {applied}, newer than this cargo-calltime knows ({known})",
                self.path.display()
            ))
            .hint("update cargo-calltime, or move the store away to start a new history")
            .into());
        }
        for (version, sql) in schema::MIGRATIONS.iter().enumerate().skip(applied as usize) {
            tx.execute_batch(sql).with_context(|| format!("migration {} failed", version + 1))?;
            // PRAGMA takes no parameters; the value is an integer we produced.
            tx.execute_batch(&format!("PRAGMA user_version = {}", version + 1))?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Records a run with its roots' stats and its call paths; returns its id.
    pub fn insert(&mut self, run: &RunRecord) -> Result<i64> {
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute(
            "INSERT INTO runs (recorded_ms, stored_ms, label, git_commit, git_branch, source, roots, depth, filter,
                settings, machine, trace_path, invocations, seen, dropped, truncated, incomplete)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)",
            params![
                run.recorded_ms,
                run.stored_ms,
                run.label,
                run.git.commit,
                run.git.branch,
                run.source.as_str(),
                serde_json::to_string(&run.roots)?,
                run.depth,
                run.filter,
                serde_json::to_string(&run.settings)?,
                run.machine,
                run.trace_path.as_ref().map(|p| p.display().to_string()),
                run.invocations,
                run.seen,
                run.dropped,
                run.truncated,
                run.incomplete,
            ],
        )?;
        let id = tx.last_insert_rowid();
        {
            let mut root = tx.prepare(
                "INSERT INTO root_stats (run_id, root, invocations, mean_ns, p50_ns, p99_ns, calls_per_invocation)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )?;
            for r in &run.root_stats {
                root.execute(params![id, r.root, r.invocations, r.mean_ns, r.p50_ns, r.p99_ns, r.calls_per_invocation])
                    .with_context(|| format!("cannot store root `{}` in the run store", r.root))?;
            }
            let mut path = tx.prepare(
                "INSERT INTO path_stats (run_id, path, calls, total_ns, self_ns, invocations, mean_ns, p50_ns, p99_ns)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            )?;
            for p in &run.path_stats {
                path.execute(params![
                    id,
                    p.path,
                    p.calls,
                    p.total_ns,
                    p.self_ns,
                    p.invocations,
                    p.mean_ns,
                    p.p50_ns,
                    p.p99_ns
                ])
                .with_context(|| format!("cannot store call path `{}` in the run store", p.path))?;
            }
        }
        tx.commit().context("cannot commit the run to the store")?;
        Ok(id)
    }

    /// The runs that pass `filter`, oldest first (by recording date, then id).
    pub fn runs(&self, filter: &RunFilter) -> Result<Vec<StoredRun>> {
        let mut stmt = self.conn.prepare(&format!(
            "SELECT {RUN_COLUMNS} FROM runs
             WHERE (?1 IS NULL OR label = ?1)
               AND (?2 IS NULL OR recorded_ms >= ?2)
               AND (?3 IS NULL OR recorded_ms <= ?3)
               AND (?4 IS NULL OR EXISTS (SELECT 1 FROM root_stats r WHERE r.run_id = runs.id
                    AND (r.root = ?4 OR substr(r.root, -length(?4) - 2) = '::' || ?4)))
             ORDER BY recorded_ms, id"
        ))?;
        let rows =
            stmt.query_map(params![filter.label, filter.since_ms, filter.until_ms, filter.root], run_from_row)?;
        let mut runs = rows.collect::<rusqlite::Result<Vec<StoredRun>>>()?;
        for run in &mut runs {
            run.record.root_stats = self.root_stats(run.id)?;
        }
        Ok(runs)
    }

    /// One run by id, with its roots' stats (not its call paths: see [`Store::path_stats`]).
    pub fn run(&self, id: i64) -> Result<Option<StoredRun>> {
        let sql = format!("SELECT {RUN_COLUMNS} FROM runs WHERE id = ?1");
        let run = self.conn.query_row(&sql, [id], run_from_row).optional()?;
        run.map(|mut run| {
            run.record.root_stats = self.root_stats(id)?;
            Ok(run)
        })
        .transpose()
    }

    fn root_stats(&self, id: i64) -> Result<Vec<RootStat>> {
        let mut stmt = self.conn.prepare(
            "SELECT root, invocations, mean_ns, p50_ns, p99_ns, calls_per_invocation FROM root_stats
             WHERE run_id = ?1 ORDER BY rowid",
        )?;
        let rows = stmt.query_map([id], |row| {
            Ok(RootStat {
                root: row.get(0)?,
                invocations: row.get(1)?,
                mean_ns: row.get(2)?,
                p50_ns: row.get(3)?,
                p99_ns: row.get(4)?,
                calls_per_invocation: row.get(5)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<Vec<RootStat>>>()?)
    }

    /// A run's call paths, in path order.
    pub fn path_stats(&self, id: i64) -> Result<Vec<PathRow>> {
        let mut stmt = self.conn.prepare(
            "SELECT path, calls, total_ns, self_ns, invocations, mean_ns, p50_ns, p99_ns FROM path_stats
             WHERE run_id = ?1 ORDER BY path",
        )?;
        let rows = stmt.query_map([id], |row| {
            Ok(PathRow {
                path: row.get(0)?,
                calls: row.get(1)?,
                total_ns: row.get(2)?,
                self_ns: row.get(3)?,
                invocations: row.get(4)?,
                mean_ns: row.get(5)?,
                p50_ns: row.get(6)?,
                p99_ns: row.get(7)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<Vec<PathRow>>>()?)
    }

    /// Removes a run (dirty data) and its trace files; false when no run has that id.
    pub fn delete(&mut self, id: i64) -> Result<bool> {
        let trace: Option<Option<String>> =
            self.conn.query_row("SELECT trace_path FROM runs WHERE id = ?1", [id], |row| row.get(0)).optional()?;
        let Some(trace) = trace else { return Ok(false) };
        self.conn.execute("DELETE FROM runs WHERE id = ?1", [id])?;
        if let Some(trace) = trace {
            remove_trace_files(Path::new(&trace));
        }
        Ok(true)
    }

    /// Retention: keeps the trace files of the newest `keep` runs that still have one and removes the others' (their
    /// rows, stats and call paths stay, for history). Also removes files under `runs_dir` that no run references
    /// (left by a writer killed between copying a trace and committing its row). Returns the runs whose traces
    /// were removed.
    pub fn retain_traces(&mut self, keep: usize, runs_dir: &Path) -> Result<Vec<i64>> {
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let old: Vec<(i64, String)> = {
            let mut stmt = tx.prepare(
                "SELECT id, trace_path FROM runs WHERE trace_path IS NOT NULL
                 ORDER BY recorded_ms DESC, id DESC LIMIT -1 OFFSET ?1",
            )?;
            let rows = stmt.query_map([keep as i64], |row| Ok((row.get(0)?, row.get(1)?)))?;
            rows.collect::<rusqlite::Result<_>>()?
        };
        for (id, _) in &old {
            tx.execute("UPDATE runs SET trace_path = NULL WHERE id = ?1", [id])?;
        }
        let referenced: Vec<String> = {
            let mut stmt = tx.prepare("SELECT trace_path FROM runs WHERE trace_path IS NOT NULL")?;
            let rows = stmt.query_map([], |row| row.get(0))?;
            rows.collect::<rusqlite::Result<_>>()?
        };
        tx.commit()?;
        for (_, trace) in &old {
            remove_trace_files(Path::new(trace));
        }
        remove_unreferenced(runs_dir, &referenced);
        Ok(old.into_iter().map(|(id, _)| id).collect())
    }

    /// `PRAGMA integrity_check`: "ok" for a sound database.
    pub fn integrity_check(&self) -> Result<String> {
        Ok(self.conn.query_row("PRAGMA integrity_check", [], |row| row.get(0))?)
    }
}

const RUN_COLUMNS: &str = "id, recorded_ms, stored_ms, label, git_commit, git_branch, source, roots, depth, filter, \
                           settings, machine, trace_path, invocations, seen, dropped, truncated, incomplete";

fn run_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<StoredRun> {
    let json = |at: usize| -> rusqlite::Result<String> { row.get(at) };
    let bad_json = |at: usize, e: serde_json::Error| {
        rusqlite::Error::FromSqlConversionFailure(at, rusqlite::types::Type::Text, Box::new(e))
    };
    let source: String = row.get(6)?;
    Ok(StoredRun {
        id: row.get(0)?,
        record: RunRecord {
            recorded_ms: row.get(1)?,
            stored_ms: row.get(2)?,
            label: row.get(3)?,
            git: GitInfo { commit: row.get(4)?, branch: row.get(5)? },
            source: Source::parse(&source),
            roots: serde_json::from_str(&json(7)?).map_err(|e| bad_json(7, e))?,
            depth: row.get(8)?,
            filter: row.get(9)?,
            settings: serde_json::from_str(&json(10)?).map_err(|e| bad_json(10, e))?,
            machine: row.get(11)?,
            trace_path: row.get::<_, Option<String>>(12)?.map(PathBuf::from),
            invocations: row.get(13)?,
            seen: row.get(14)?,
            dropped: row.get(15)?,
            truncated: row.get(16)?,
            incomplete: row.get(17)?,
            root_stats: Vec::new(),
            path_stats: Vec::new(),
        },
    })
}

/// Copies a trace and its function table into `runs_dir` under a new name; returns the kept trace's path. Run before
/// the row is inserted (see the module docs).
pub fn keep_trace_file(runs_dir: &Path, trace: &Path, recorded_ms: i64) -> Result<PathBuf> {
    std::fs::create_dir_all(runs_dir).with_context(|| format!("cannot create directory {}", runs_dir.display()))?;
    let pid = std::process::id();
    for attempt in 0..1000u32 {
        let kept = runs_dir.join(format!("run-{recorded_ms}-{pid}-{attempt}.trace"));
        // Claiming the name with create_new keeps two writers of one process (or a reused pid) apart.
        match std::fs::OpenOptions::new().write(true).create_new(true).open(&kept) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e).with_context(|| format!("cannot create {}", kept.display())),
        }
        std::fs::copy(trace, &kept)
            .with_context(|| format!("cannot copy {} to {}", trace.display(), kept.display()))?;
        let table = crate::trace::functions_path_for(trace);
        if table.exists() {
            let kept_table = crate::trace::functions_path_for(&kept);
            std::fs::copy(&table, &kept_table)
                .with_context(|| format!("cannot copy {} to {}", table.display(), kept_table.display()))?;
        }
        return Ok(kept);
    }
    anyhow::bail!("cannot find a free file name for the trace in {}", runs_dir.display())
}

fn remove_trace_files(trace: &Path) {
    let _ = std::fs::remove_file(trace);
    let _ = std::fs::remove_file(crate::trace::functions_path_for(trace));
}

/// Removes `*.trace` files (and their tables) in `runs_dir` that no run references and that are older than
/// [`ORPHAN_AGE`]: a younger one may belong to a writer that has not committed its row yet.
fn remove_unreferenced(runs_dir: &Path, referenced: &[String]) {
    let Ok(entries) = std::fs::read_dir(runs_dir) else { return };
    let referenced: std::collections::HashSet<PathBuf> = referenced.iter().map(PathBuf::from).collect();
    let old = |path: &Path| {
        let modified = std::fs::metadata(path).and_then(|m| m.modified());
        modified.ok().and_then(|m| m.elapsed().ok()).is_some_and(|age| age > ORPHAN_AGE)
    };
    for path in entries.filter_map(|e| e.ok()).map(|e| e.path()) {
        if path.extension().is_some_and(|x| x == "trace") && !referenced.contains(&path) && old(&path) {
            remove_trace_files(&path);
        }
    }
}

/// One run's point on a chart across runs: one root's stats in that run.
#[derive(Debug, Clone, PartialEq)]
pub struct SeriesPoint {
    pub run_id: i64,
    pub recorded_ms: i64,
    pub label: Option<String>,
    pub stat: RootStat,
    /// Why the run looks dirty (its median root time is unlike the other runs'), as `diff` decides it.
    pub dirty: Option<String>,
}

/// The root functions of `runs`, in order of first appearance.
pub fn roots_of(runs: &[StoredRun]) -> Vec<String> {
    let mut roots: Vec<String> = Vec::new();
    for stat in runs.iter().flat_map(|r| &r.record.root_stats) {
        if !roots.contains(&stat.root) {
            roots.push(stat.root.clone());
        }
    }
    roots
}

/// `root`'s point in each run that called it, with dirty runs marked by the same rule as `diff`'s (median root
/// time an outlier among the runs; the mean stands in where the median is unknown).
pub fn series(runs: &[StoredRun], root: &str) -> Vec<SeriesPoint> {
    let mut points: Vec<SeriesPoint> = runs
        .iter()
        .filter_map(|run| {
            let stat = run.record.root_stats.iter().find(|s| s.root == root)?;
            Some(SeriesPoint {
                run_id: run.id,
                recorded_ms: run.record.recorded_ms,
                label: run.record.label.clone(),
                stat: stat.clone(),
                dirty: None,
            })
        })
        .collect();
    let typical_of = |p: &SeriesPoint| p.stat.p50_ns.unwrap_or(p.stat.mean_ns) as f64;
    let medians: Vec<f64> = points.iter().map(typical_of).collect();
    let flags = crate::diff::stats::outliers(&medians, crate::diff::OUTLIER_MADS, crate::diff::OUTLIER_MIN_RELATIVE);
    let mut clean: Vec<f64> = medians.iter().zip(&flags).filter(|(_, &out)| !out).map(|(&m, _)| m).collect();
    let typical = crate::diff::stats::median(&mut clean).unwrap_or(0.0);
    for (point, out) in points.iter_mut().zip(flags) {
        if out {
            point.dirty = Some(format!(
                "median root time {} is unlike the other runs' {}",
                crate::units::format_ns_f64(typical_of(point)),
                crate::units::format_ns_f64(typical)
            ));
        }
    }
    points
}

/// How a trace enters the store.
#[derive(Debug, Clone, PartialEq)]
pub struct StoreOptions {
    pub label: Option<String>,
    pub source: Source,
    /// Trace files kept (the newest runs'); older runs keep only their summaries.
    pub keep: usize,
    /// The workspace whose git commit and branch are recorded.
    pub workspace_root: Option<PathBuf>,
}

/// What recording a run did.
#[derive(Debug, Clone, PartialEq)]
pub struct Recorded {
    pub id: i64,
    pub trace_path: PathBuf,
    /// Runs whose trace files retention removed.
    pub released: Vec<i64>,
}

/// Records `trace` (loaded from `trace_file`) in the store of `calltime_dir`: its trace file copied under `runs/`,
/// its row and aggregates inserted, then retention. Walks the trees: call it on a big stack.
pub fn record_run(
    calltime_dir: &Path,
    trace: &crate::trace::Trace,
    trace_file: &Path,
    opts: &StoreOptions,
) -> Result<Recorded> {
    let mut run = RunRecord::from_trace(trace);
    run.label = opts.label.clone();
    run.source = opts.source;
    if let Some(root) = &opts.workspace_root {
        run.git = GitInfo::detect(root);
    }
    let runs_dir = runs_dir(calltime_dir);
    let kept = keep_trace_file(&runs_dir, trace_file, run.recorded_ms)?;
    run.trace_path = Some(kept.clone());
    let mut store = Store::open(&store_path(calltime_dir))?;
    let id = store.insert(&run)?;
    let released = store.retain_traces(opts.keep, &runs_dir)?;
    Ok(Recorded { id, trace_path: kept, released })
}
