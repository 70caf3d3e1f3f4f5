//! Issue 21, group commit: dhp-rs commits with `synchronous=NORMAL` and
//! syncs the WAL itself after handing the writer lock on. An operation
//! that returned must still be on disk: when `checkpoint` (or any other
//! write) returns, the WAL has no dirty page left in the page cache.
//!
//! Read with the kernel's `cachestat` (Linux 6.5), which counts a file's
//! dirty pages. A plain SQLite connection committing at
//! `synchronous=NORMAL` without the sync leaves dirty WAL pages, so the
//! probe is shown to see them.

use dhp_core::envelope::{self, BuildOptions};
use dhp_core::{Config, Runner};
use serde_json::json;
use std::os::fd::AsRawFd;
use std::path::Path;

/// Dirty and under-writeback pages of the file at `path` (whole file).
#[allow(unsafe_code)]
fn unsynced_pages(path: &Path) -> u64 {
    #[repr(C)]
    struct Range {
        off: u64,
        len: u64,
    }
    #[repr(C)]
    #[derive(Default)]
    struct Stat {
        nr_cache: u64,
        nr_dirty: u64,
        nr_writeback: u64,
        nr_evicted: u64,
        nr_recently_evicted: u64,
    }
    const SYS_CACHESTAT: nix::libc::c_long = 451;
    let f = std::fs::File::open(path).unwrap();
    let range = Range { off: 0, len: 0 };
    let mut st = Stat::default();
    // SAFETY: cachestat(2) reads `range` and writes one `struct cachestat`
    // into `st`; both are live, `#[repr(C)]` and of the kernel's layout.
    let rc =
        unsafe { nix::libc::syscall(SYS_CACHESTAT, f.as_raw_fd(), &range as *const Range, &mut st as *mut Stat, 0) };
    assert_eq!(rc, 0, "cachestat(2) on {}: {} (needs Linux ≥ 6.5)", path.display(), std::io::Error::last_os_error());
    st.nr_dirty + st.nr_writeback
}

/// A scratch directory on the build's disk: a tmpfs /tmp has no writeback.
fn scratch() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

#[test]
fn every_write_is_synced_before_it_returns() {
    let dir = scratch();
    let r = Runner::open(dir.path(), "w", Config::default()).unwrap();
    let env = envelope::build("t", json!({"inline": {"n": 1}}), json!({}), BuildOptions::default()).unwrap();
    let hid = r.dispatch(&env).unwrap();
    let wal = dir.path().join("dhp.sqlite3-wal");
    assert_eq!(unsynced_pages(&wal), 0, "after dispatch");
    let mut ctx = r.claim(&hid).unwrap();
    assert_eq!(unsynced_pages(&wal), 0, "after claim");
    for k in 0..50 {
        ctx.checkpoint(&json!({"k": k})).unwrap();
        assert_eq!(unsynced_pages(&wal), 0, "after checkpoint {k}");
    }
    ctx.complete(&json!({"done": true})).unwrap();
    assert_eq!(unsynced_pages(&wal), 0, "after complete");
}

#[test]
fn the_probe_sees_a_commit_that_was_not_synced() {
    let dir = scratch();
    let db = dir.path().join("x.sqlite3");
    let c = rusqlite::Connection::open(&db).unwrap();
    c.query_row("PRAGMA journal_mode=WAL", [], |_| Ok(())).unwrap();
    c.execute_batch("PRAGMA synchronous=NORMAL; CREATE TABLE t (v TEXT);").unwrap();
    c.execute("INSERT INTO t VALUES (?1)", ["x".repeat(10_000)]).unwrap();
    let wal = dir.path().join("x.sqlite3-wal");
    assert!(unsynced_pages(&wal) > 0, "a commit at synchronous=NORMAL leaves dirty WAL pages");
}
