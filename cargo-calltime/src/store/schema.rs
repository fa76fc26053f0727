//! The store's schema, as a list of migrations. `PRAGMA user_version` holds how many have been applied; a store
//! written by a newer tool (more migrations than this one knows) is refused rather than guessed at.
//!
//! Never edit a migration that has shipped: add the next one.

pub const MIGRATIONS: &[&str] = &[
    // 1: runs, their roots' summary stats, and per-call-path aggregates.
    r#"
    CREATE TABLE runs (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        -- When the trace was recorded (the trace's wall-clock origin), ms since the Unix epoch.
        recorded_ms INTEGER NOT NULL,
        -- When the run entered the store.
        stored_ms INTEGER NOT NULL,
        label TEXT,
        git_commit TEXT,
        git_branch TEXT,
        -- 'run' (recorded by `cargo calltime`) or 'import' (`report --import`).
        source TEXT NOT NULL,
        -- The plan: JSON array of root paths, depth, --filter.
        roots TEXT NOT NULL,
        depth INTEGER NOT NULL,
        filter TEXT,
        -- The runtime's settings line, as a JSON object.
        settings TEXT NOT NULL,
        machine TEXT NOT NULL,
        -- The kept trace file (its function table beside it); NULL once retention removed it.
        trace_path TEXT,
        invocations INTEGER NOT NULL,
        seen INTEGER NOT NULL,
        dropped INTEGER NOT NULL,
        truncated INTEGER NOT NULL,
        incomplete INTEGER NOT NULL
    );
    CREATE INDEX runs_by_date ON runs (recorded_ms);
    CREATE INDEX runs_by_label ON runs (label);
    -- One row per root function that was called in the run.
    CREATE TABLE root_stats (
        run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        root TEXT NOT NULL,
        invocations INTEGER NOT NULL,
        mean_ns INTEGER NOT NULL,
        -- NULL when some calls were recorded folded (no per-call durations).
        p50_ns INTEGER,
        p99_ns INTEGER,
        -- Calls of instrumented functions (the root included) per invocation.
        calls_per_invocation REAL NOT NULL,
        PRIMARY KEY (run_id, root)
    );
    CREATE INDEX root_stats_by_root ON root_stats (root);
    -- The aggregate tree, one row per call path (function paths joined by ';', root first).
    CREATE TABLE path_stats (
        run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        path TEXT NOT NULL,
        calls INTEGER NOT NULL,
        total_ns INTEGER NOT NULL,
        self_ns INTEGER NOT NULL,
        invocations INTEGER NOT NULL,
        mean_ns INTEGER NOT NULL,
        p50_ns INTEGER,
        p99_ns INTEGER,
        PRIMARY KEY (run_id, path)
    );
    "#,
];
