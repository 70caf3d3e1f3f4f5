//! Issue 33 item 18: a `dhp ingest` stopped (SIGSTOP) inside its write
//! transaction held the SQLite write lock forever: it published no liveness
//! token, so the supervisor's stalled-writer watchdog would not touch it and
//! every worker of the store waited on the lock. Now ingest holds a token
//! while it runs; the watchdog SIGKILLs it, the store takes writes again, and
//! the ingest (idempotent) succeeds when run again. A supervisor started
//! after the ingest stopped must be able to open the store at all: opening
//! an up-to-date SQLite store takes no write lock.
use crate::common::*;
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn a_stopped_ingest_is_killed_and_the_store_writes_again() {
    let src = tempfile::tempdir().unwrap();
    let dst = tempfile::tempdir().unwrap();
    let (s, d) = (src.path().to_str().unwrap(), dst.path().to_str().unwrap());
    let log = src.path().join("ship.log");
    let log = log.to_str().unwrap();
    let (code, a, err) = dhp(&["dispatch", s, "--create", "--census", "1000,3000,100"], &[]);
    assert_eq!(code, 0, "{err}");
    let hid = a["hid"].as_str().unwrap().to_string();
    let (code, _, err) = dhp(&["work", s, "--runner", "w1", "--ship", log, "claim", &hid], &[]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = dhp(&["dispatch", d, "--create", "--census", "1000,2000,100"], &[]);
    assert_eq!(code, 0, "{err}");

    let mut ingest = Command::new(dhp_bin())
        .args(["ingest", d, log])
        .env("DHP_FAILPOINTS", "ingest.in_tx=stop@1")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // The supervisor starts only once the ingest is stopped inside its
    // transaction: opening the store must not wait for the write lock.
    let end = Instant::now() + Duration::from_secs(20);
    while !dhp_core::liveness::is_stopped(ingest.id() as i32) {
        assert!(ingest.try_wait().unwrap().is_none(), "the ingest ended before its failpoint");
        assert!(Instant::now() < end, "the ingest never stopped at ingest.in_tx");
        std::thread::sleep(Duration::from_millis(5));
    }
    let lease = [("DHP_LEASE_INTERVAL_S", "0.3"), ("DHP_LEASE_MAX_MISSED", "2")];
    let mut sup = Command::new(dhp_bin())
        .args(["supervisor", d, "sup", "30"])
        .envs(lease)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let end = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(s) = ingest.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > end {
            let _ = ingest.kill();
            let _ = sup.kill();
            let _ = sup.wait();
            panic!("the stopped ingest still holds the write lock after 30 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let _ = sup.kill();
    let _ = sup.wait();
    assert_eq!(status.signal(), Some(9), "the watchdog SIGKILLs the stopped ingest: {status:?}");
    let (code, _, err) = dhp(&["dispatch", d, "--census", "1000,4000,100"], &[]);
    assert_eq!(code, 0, "the store takes writes again: {err}");
    let (code, out, err) = dhp(&["ingest", d, log], &[]);
    assert_eq!(code, 0, "the ingest runs again: {err}");
    assert!(out["reports"][0]["checkpoints_ingested"].as_u64().unwrap() > 0, "{out}");
}
