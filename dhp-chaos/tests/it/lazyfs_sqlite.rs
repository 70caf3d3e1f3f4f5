//! The lazy store file system (`--lose-unsynced`) against real SQLite in
//! real processes that are SIGKILLed: a crash keeps exactly what was
//! fsynced. A commit at `synchronous=FULL` survives it; one at
//! `synchronous=OFF` (no fsync) is lost.

use dhp_chaos::lazyfs::LazyMount;
use rusqlite::Connection;
use std::path::Path;

/// Run `sql` in a python3 child on `dir/s.db`, print `SELECT COUNT(*)` from
/// a second connection, then SIGKILL itself (no close, no checkpoint).
fn child(dir: &Path, sql: &str) -> i64 {
    let py = "import os, sqlite3, sys\n\
              a = sqlite3.connect(sys.argv[1], isolation_level=None)\n\
              a.executescript(sys.argv[2])\n\
              b = sqlite3.connect(sys.argv[1])\n\
              print(b.execute('SELECT COUNT(*) FROM t').fetchone()[0], flush=True)\n\
              os.kill(os.getpid(), 9)\n";
    let out = std::process::Command::new("python3")
        .args(["-c", py])
        .arg(dir.join("s.db"))
        .arg(sql)
        .output()
        .expect("python3 runs");
    assert_eq!(out.status.code(), None, "killed by its own SIGKILL: {out:?}");
    String::from_utf8_lossy(&out.stdout).trim().parse().expect("a count")
}

fn rows(dir: &Path) -> i64 {
    let c = Connection::open(dir.join("s.db")).unwrap();
    c.query_row("SELECT COUNT(*) FROM t", [], |r| r.get(0)).unwrap()
}

#[test]
fn a_crash_loses_the_commits_that_were_not_fsynced() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("store");
    std::fs::create_dir(&dir).unwrap();
    let mut m = LazyMount::mount(&dir).unwrap();
    let seen = child(
        &dir,
        "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; CREATE TABLE t (x); INSERT INTO t VALUES (1);
         PRAGMA synchronous=OFF; INSERT INTO t VALUES (2); INSERT INTO t VALUES (3);",
    );
    assert_eq!(seen, 3, "a second connection saw the unsynced commits (one page cache)");
    assert!(m.fsyncs() > 0, "SQLite at synchronous=FULL fsyncs");
    let lost = m.crash().unwrap();
    assert!(lost.iter().any(|(f, l)| f == "s.db-wal" && l.unsynced_bytes > 0), "{lost:?}");
    assert_eq!(rows(&dir), 1, "the synced commit survives, the two unsynced ones are lost");
    let seen = child(&dir, "PRAGMA synchronous=FULL; INSERT INTO t VALUES (4);");
    assert_eq!(seen, 2);
    m.crash().unwrap();
    assert_eq!(rows(&dir), 2, "a commit at synchronous=FULL survives a crash");
    m.unmount().unwrap();
    assert!(!dhp_chaos::lazyfs::backing_of(&dir).exists());
    assert_eq!(rows(&dir), 2, "the files are back in the directory after unmounting");
}
