//! A worker stopped inside its checkpoint transaction past its lease holds
//! the SQLite write lock, so nobody could orphan the handoff meanwhile — but
//! woken, it must not commit: its rows would carry times after its lease
//! ran out (the chaos model invariant caught exactly this, a steps
//! checkpoint committed 28 ms late). The write reads the clock again before
//! its commit and rolls back with `LeaseLost` (exit 5).
use crate::common::*;
use dhp_core::{Config, Runner};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Lease TTL 0.6 s (0.3 × 2).
const LEASE: [(&str, &str); 2] = [("DHP_LEASE_INTERVAL_S", "0.3"), ("DHP_LEASE_MAX_MISSED", "2")];

#[test]
fn a_checkpoint_woken_after_its_lease_ran_out_is_rolled_back() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_str().unwrap();
    let (code, a, err) = dhp(&["dispatch", root, "--create", "--census", "1000,31000,100"], &[]);
    assert_eq!(code, 0, "{err}");
    let hid = a["hid"].as_str().unwrap().to_string();
    // SIGSTOPped inside its 3rd checkpoint transaction, after every stamp.
    let mut w = Command::new(dhp_bin())
        .args(["work", root, "--runner", "w1", "claim", &hid])
        .envs(LEASE)
        .env("DHP_FAILPOINTS", "checkpoint.in_tx=stop@3")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let end = Instant::now() + Duration::from_secs(20);
    while !dhp_testkit::helpers::stopped(w.id()) {
        if Instant::now() > end {
            let _ = w.kill();
            panic!("the worker never stopped in its 3rd checkpoint");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let reader = Runner::open_existing(root, "reader", Config::default()).unwrap();
    let own = reader.ownership(hid.as_str()).unwrap().expect("claimed");
    // Woken well after its lease ran out.
    while dhp_core::envelope::now() < own.lease_expires_at + 0.5 {
        std::thread::sleep(Duration::from_millis(50));
    }
    kill(Pid::from_raw(w.id() as i32), Signal::SIGCONT).unwrap();
    let out = w.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "LeaseLost: {stderr}");
    assert!(stderr.contains("LeaseLost"), "{stderr}");
    let seqs: Vec<i64> = reader.checkpoints(hid.as_str()).unwrap().iter().map(|r| r.seq).collect();
    assert_eq!(seqs, [0, 1], "the 3rd checkpoint was rolled back");
    let after = reader.ownership(hid.as_str()).unwrap().expect("still owned until orphaned");
    assert_eq!(after.lease_expires_at, own.lease_expires_at, "nor did its lease extension commit");
}
