//! Issue 21 item 3: dhp-rs writers queue on a `flock` of
//! `dhp.sqlite3-writer` before `BEGIN IMMEDIATE`. The kernel releases it
//! when its holder dies, and the stalled-writer watchdog treats a stopped
//! process holding it like one holding SQLite's write lock: a writer
//! SIGSTOPped while it holds only the queue lock (a Python stand-in that
//! also holds a liveness token of the store) is SIGKILLed and the store
//! accepts writes again.
use crate::common::*;
use nix::fcntl::{Flock, FlockArg};
use std::io::BufRead;
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn queue_lock_free(root: &std::path::Path) -> bool {
    let f = std::fs::OpenOptions::new().write(true).open(root.join("dhp.sqlite3-writer")).unwrap();
    Flock::lock(f, FlockArg::LockExclusiveNonblock).is_ok()
}

#[test]
fn the_writer_lock_is_released_when_its_holder_is_killed() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_str().unwrap();
    let (code, a, err) = dhp(&["dispatch", root, "--create", "--census", "1000,31000,100"], &[]);
    assert_eq!(code, 0, "{err}");
    let hid = a["hid"].as_str().unwrap().to_string();
    // Stopped inside its 3rd checkpoint transaction: it holds the lock.
    let mut w = Command::new(dhp_bin())
        .args(["work", root, "--runner", "w1", "claim", &hid])
        .env("DHP_FAILPOINTS", "checkpoint.in_tx=stop@3")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let end = Instant::now() + Duration::from_secs(20);
    while queue_lock_free(dir.path()) {
        assert!(Instant::now() < end, "the worker never held the writer lock");
        std::thread::sleep(Duration::from_millis(5));
    }
    w.kill().unwrap();
    w.wait().unwrap();
    assert!(queue_lock_free(dir.path()), "the kernel drops a dead holder's lock");
    let (code, _, err) = dhp(&["dispatch", root, "--census", "1000,2000,100"], &[]);
    assert_eq!(code, 0, "{err}");
}

#[test]
fn a_stopped_process_holding_only_the_writer_lock_is_killed() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_str().unwrap();
    let (code, _, err) = dhp(&["dispatch", root, "--create", "--census", "1000,2000,100"], &[]);
    assert_eq!(code, 0, "{err}");
    let script = r#"
import fcntl, os, signal, sys
root = sys.argv[1]
os.makedirs(os.path.join(root, "live"), exist_ok=True)
token = open(os.path.join(root, "live", "py-holder.lock"), "w")
fcntl.flock(token, fcntl.LOCK_EX | fcntl.LOCK_NB)
queue = open(os.path.join(root, "dhp.sqlite3-writer"), "w")
fcntl.flock(queue, fcntl.LOCK_EX)
print("locked", flush=True)
os.kill(os.getpid(), signal.SIGSTOP)
"#;
    let mut holder = Command::new(dhp_testkit::python())
        .args(["-c", script, root])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(holder.stdout.take().unwrap()).read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "locked");
    let lease = [("DHP_LEASE_INTERVAL_S", "0.3"), ("DHP_LEASE_MAX_MISSED", "2")];
    let mut sup = Command::new(dhp_bin())
        .args(["supervisor", root, "sup", "30"])
        .envs(lease)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let end = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(s) = holder.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > end {
            let _ = holder.kill();
            let _ = sup.kill();
            panic!("the stopped holder of the writer lock was not killed within 30 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.signal(), Some(9), "the watchdog SIGKILLs the stopped holder: {status:?}");
    let (code, _, err) = dhp(&["dispatch", root, "--census", "1000,3000,100"], &[]);
    assert_eq!(code, 0, "{err}");
    let _ = sup.kill();
    let _ = sup.wait();
}
