//! A supervisor reports each action as soon as the transaction that made it
//! committed, not after the whole pass. Killed right after an orphan's
//! commit (failpoint `supervise.after_commit`), it has already written that
//! orphan's history line, so the chaos checker can order the orphan before
//! whatever the replaced worker does next (a residual `zombies` false
//! positive when the lines came only at the end of the pass).
use crate::common::*;
use dhp_core::envelope::{self, BuildOptions};
use dhp_core::{Config, Runner};
use serde_json::{json, Value};
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn the_orphans_history_line_exists_when_the_supervisor_dies_after_its_commit() {
    let dir = tempfile::tempdir().unwrap();
    // Leases of 1 s, claimed by a worker that never heartbeats.
    let cfg = Config { lease_interval_s: 0.5, lease_max_missed: 2, ..Config::default() };
    let r = Runner::open(dir.path(), "w", cfg).unwrap();
    let envs: Vec<_> = (0..2)
        .map(|i| envelope::build("t", json!({"inline": {"i": i}}), json!({}), BuildOptions::default()).unwrap())
        .collect();
    let hids: Vec<String> = r.dispatch_many(&envs).unwrap().into_iter().map(Result::unwrap).collect();
    for c in r.claim_many(&hids).unwrap() {
        c.unwrap();
    }
    std::thread::sleep(Duration::from_millis(1500));

    // Two expired leases: the pass dies right after orphaning the first.
    let hist = dir.path().join("sup.history");
    let mut sup = Command::new(dhp_bin())
        .args(["supervisor", dir.path().to_str().unwrap(), "sup", "30", "--history", hist.to_str().unwrap()])
        .env("DHP_FAILPOINTS", "supervise.after_commit=kill@1")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let end = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(st) = sup.try_wait().unwrap() {
            break st;
        }
        if Instant::now() > end {
            let _ = sup.kill();
            panic!("the supervisor did not reach the failpoint within 20 s");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    assert_eq!(status.signal(), Some(9), "killed by the failpoint: {status:?}");

    let statuses: Vec<String> = hids.iter().map(|h| r.status(h).unwrap()["status"].as_str().unwrap().into()).collect();
    let orphaned: Vec<&String> = hids.iter().zip(&statuses).filter(|(_, s)| *s == "orphaned").map(|(h, _)| h).collect();
    assert_eq!(orphaned.len(), 1, "one orphan committed before the kill: {statuses:?}");
    let lines: Vec<Value> = std::fs::read_to_string(&hist)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|v: &Value| v["op"] == "supervise")
        .collect();
    assert_eq!(lines.len(), 1, "the committed orphan's line, and only it: {lines:?}");
    assert_eq!(lines[0]["hid"], orphaned[0].as_str(), "{lines:?}");
    assert_eq!(lines[0]["action"], "orphaned");
    assert_eq!(lines[0]["reason"], "lease-expired");
    assert_eq!(lines[0]["previous_holder"], "w");
}
