//! Opening the store: a new file is created with the current tables; an older one is
//! migrated; a file that is not a store of runs (not SQLite, someone else's tables) or
//! one written by a newer host is refused with what to do, and left exactly as it was
//! (nothing is written to it before it has been recognised).
//!
//! Concurrent runs share the file: write-ahead logging lets readers go on while one
//! run writes, and a busy timeout makes a second writer wait for the first instead of
//! failing, so two runs that end at once are both recorded.

use anyhow::{bail, Context, Result};
use rusqlite::{Connection, OpenFlags, TransactionBehavior};
use std::path::Path;
use std::time::Duration;

/// The store format this host writes (SQLite's `user_version`).
pub(crate) const VERSION: i64 = 1;

/// How long a writer waits for another to finish before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(20);

/// What every SQLite file starts with.
const SQLITE_HEADER: &[u8; 16] = b"SQLite format 3\0";

/// The statements that bring a store from version `i` to `i + 1`, in order.
const MIGRATIONS: &[&str] = &[
    // 0 → 1: the first tables.
    "CREATE TABLE runs (
        id INTEGER PRIMARY KEY,
        folder TEXT NOT NULL UNIQUE,
        name TEXT NOT NULL,
        plugin TEXT NOT NULL,
        plugin_version TEXT NOT NULL,
        plugin_sha256 TEXT NOT NULL,
        config_hash TEXT NOT NULL,
        host_version TEXT NOT NULL,
        machine TEXT NOT NULL,
        machine_json TEXT NOT NULL,
        started_at TEXT NOT NULL,
        duration_s REAL NOT NULL,
        status TEXT NOT NULL,
        exit_code INTEGER,
        seconds INTEGER,
        summary TEXT NOT NULL,
        recorded_at TEXT NOT NULL
    );
    CREATE INDEX runs_by_plugin ON runs (plugin, started_at);
    CREATE TABLE scenarios (
        run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        executor TEXT NOT NULL,
        exec TEXT NOT NULL,
        PRIMARY KEY (run_id, name)
    );
    CREATE INDEX scenarios_by_name ON scenarios (name);
    CREATE TABLE tags (
        run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        key TEXT NOT NULL,
        value TEXT NOT NULL
    );
    CREATE INDEX tags_by_key ON tags (key, value);
    CREATE TABLE thresholds (
        run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        metric TEXT NOT NULL,
        threshold TEXT NOT NULL,
        ok INTEGER NOT NULL,
        observed REAL
    );
    CREATE TABLE figures (
        run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        metric TEXT NOT NULL,
        kind TEXT NOT NULL,
        stat TEXT NOT NULL,
        value REAL NOT NULL,
        PRIMARY KEY (run_id, metric, stat)
    );
    CREATE TABLE seconds (
        run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        metric TEXT NOT NULL,
        kind TEXT NOT NULL,
        per_second TEXT NOT NULL,
        PRIMARY KEY (run_id, metric)
    );
    CREATE TABLE intervals (
        run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        metric TEXT NOT NULL,
        start_ms REAL NOT NULL,
        length_ms REAL NOT NULL,
        histogram BLOB NOT NULL
    );
    CREATE INDEX intervals_by_run ON intervals (run_id, metric, start_ms);
    CREATE TABLE baselines (
        plugin TEXT NOT NULL,
        scenario TEXT NOT NULL,
        run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        set_at TEXT NOT NULL,
        PRIMARY KEY (plugin, scenario)
    );",
];

/// Opens the store at `path` for writing, creating it (and its folder) when absent.
pub(crate) fn open(path: &Path) -> Result<Connection> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot make the folder of {}", path.display()))?;
    }
    recognise(path)?;
    let conn = Connection::open(path)
        .with_context(|| format!("cannot open the store of runs {}", path.display()))?;
    prepare(conn, path)
}

/// Opens an existing store for reading; a missing one is said so.
pub(crate) fn open_existing(path: &Path) -> Result<Connection> {
    if !path.exists() {
        bail!(
            "no store of runs at {}: no run has been recorded there yet (runs are recorded \
             when they end; `host runs import DIR` indexes older results folders; --store \
             or {} names another store)",
            path.display(),
            super::ENV
        );
    }
    recognise(path)?;
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .with_context(|| format!("cannot open the store of runs {}", path.display()))?;
    prepare(conn, path)
}

/// Refuses a file that is not SQLite before SQLite touches it.
fn recognise(path: &Path) -> Result<()> {
    use std::io::Read;
    let Ok(mut file) = std::fs::File::open(path) else {
        return Ok(());
    };
    let mut head = [0u8; 16];
    let n = file.read(&mut head).unwrap_or(0);
    if n == 0 {
        return Ok(());
    }
    if n < head.len() || &head != SQLITE_HEADER {
        bail!(
            "{} is not a store of runs (not an SQLite database, or damaged); it was left as \
             it is: move it away, or give another file with --store",
            path.display()
        );
    }
    Ok(())
}

/// Checks the format, then creates or migrates the tables and turns on WAL.
fn prepare(mut conn: Connection, path: &Path) -> Result<Connection> {
    let damaged = |e: rusqlite::Error| {
        anyhow::anyhow!(
            "{} cannot be read as a store of runs ({e}); it was left as it is: move it away, \
             or give another file with --store",
            path.display()
        )
    };
    conn.busy_timeout(BUSY_TIMEOUT).map_err(damaged)?;
    // The version and the tables read in one snapshot: read apart, another process could
    // create the store between the two reads, and a fresh store looked like another
    // program's database (version 0 with tables) to a run recording beside it.
    let (version, foreign) = {
        let snapshot = conn.transaction().map_err(damaged)?;
        let version = user_version(&snapshot).map_err(damaged)?;
        let foreign = version == 0 && has_foreign_tables(&snapshot).map_err(damaged)?;
        (version, foreign)
    };
    check_version(version, path)?;
    if version < VERSION {
        if foreign {
            bail!(
                "{} is an SQLite database of something else (it has tables, but is no store \
                 of runs); it was left as it is: give another file with --store",
                path.display()
            );
        }
        // WAL first (it persists in the file), so later writers share it.
        let _ = conn.query_row("PRAGMA journal_mode = WAL", [], |_| Ok(()));
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(damaged)?;
        // Another process may have created or migrated it while this one waited.
        let now = user_version(&tx).map_err(damaged)?;
        check_version(now, path)?;
        for (from, sql) in MIGRATIONS.iter().enumerate().skip(now as usize) {
            tx.execute_batch(sql)
                .with_context(|| format!("migrating {} from version {from}", path.display()))?;
        }
        tx.pragma_update(None, "user_version", VERSION)
            .map_err(damaged)?;
        tx.commit().map_err(damaged)?;
    }
    conn.pragma_update(None, "foreign_keys", true)
        .map_err(damaged)?;
    Ok(conn)
}

/// An error met while using a store whose header looked right: damage SQLite found
/// inside the file (a page cut off or overwritten) is said as damage found on opening
/// is, with what to do; any other error is returned as it is. Every write is one
/// transaction, so the failed one was rolled back and the file is as it was.
pub(crate) fn explain(error: anyhow::Error, path: &Path) -> anyhow::Error {
    let damaged = error.chain().any(|e| {
        e.downcast_ref::<rusqlite::Error>()
            .and_then(rusqlite::Error::sqlite_error_code)
            .is_some_and(|code| {
                matches!(
                    code,
                    rusqlite::ErrorCode::DatabaseCorrupt | rusqlite::ErrorCode::NotADatabase
                )
            })
    });
    if !damaged {
        return error;
    }
    anyhow::anyhow!(
        "{} is damaged ({error:#}); nothing was written to it and it was left as it is: move \
         it away (`host runs import DIR` indexes the results folders again into a new \
         store), or give another file with --store",
        path.display()
    )
}

fn user_version(conn: &Connection) -> rusqlite::Result<i64> {
    conn.query_row("PRAGMA user_version", [], |r| r.get(0))
}

fn check_version(version: i64, path: &Path) -> Result<()> {
    if version > VERSION {
        bail!(
            "{} was written by a newer host (store format {version}; this host reads formats \
             up to {VERSION}); it was left as it is: use a newer host, or give another file \
             with --store",
            path.display()
        );
    }
    Ok(())
}

fn has_foreign_tables(conn: &Connection) -> rusqlite::Result<bool> {
    conn.query_row(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table'",
        [],
        |r| r.get::<_, i64>(0),
    )
    .map(|n| n > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_store_is_created_and_reopened() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("deep/runs.db");
        drop(open(&path).unwrap());
        let conn = open(&path).unwrap();
        assert_eq!(user_version(&conn).unwrap(), VERSION);
        let mode: String = conn
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
    }

    #[test]
    fn foreign_newer_and_damaged_files_are_refused_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let garbage = dir.path().join("garbage.db");
        std::fs::write(&garbage, b"this is not a database at all, just text").unwrap();
        let e = open(&garbage).unwrap_err().to_string();
        assert!(e.contains("is not a store of runs"), "{e}");
        assert_eq!(
            std::fs::read(&garbage).unwrap(),
            b"this is not a database at all, just text"
        );

        let newer = dir.path().join("newer.db");
        {
            let c = Connection::open(&newer).unwrap();
            c.pragma_update(None, "user_version", 7).unwrap();
            c.execute_batch("CREATE TABLE x (a)").unwrap();
        }
        let before = std::fs::read(&newer).unwrap();
        let e = open(&newer).unwrap_err().to_string();
        assert!(e.contains("written by a newer host (store format 7"), "{e}");
        assert_eq!(std::fs::read(&newer).unwrap(), before);

        let foreign = dir.path().join("foreign.db");
        Connection::open(&foreign)
            .unwrap()
            .execute_batch("CREATE TABLE notes (a)")
            .unwrap();
        let e = open(&foreign).unwrap_err().to_string();
        assert!(e.contains("database of something else"), "{e}");

        let missing = dir.path().join("missing.db");
        let e = open_existing(&missing).unwrap_err().to_string();
        assert!(e.contains("no run has been recorded there yet"), "{e}");
        assert!(!missing.exists());
    }
}
