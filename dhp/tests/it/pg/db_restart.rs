//! The database crashes (`pg_ctl stop -m immediate`) and restarts while a
//! worker and a supervisor run: the worker gets a typed store error and
//! exits 11; the supervisor logs, reconnects and orphans the dead worker's
//! handoff; a new worker recovers it and completes with the right result.
//! No checkpoint that was committed before the crash is lost.
use crate::pg_support;

use crate::common::*;
use dhp_core::{Config, Runner};
use dhp_workload::census;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn wait_for(secs: f64, mut f: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + Duration::from_secs_f64(secs);
    while Instant::now() < end {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

#[test]
fn database_crash_mid_work_loses_no_committed_checkpoint() {
    // A private cluster: this test crashes it.
    let cluster = pg_support::Cluster::start();
    let url = pg_support::with_schema(&cluster.url, "restart");
    let (code, v, err) = dhp(&["dispatch", &url, "--census", "2000000,2100000,100"], &[]);
    assert_eq!(code, 0, "{err}");
    let hid = v["hid"].as_str().unwrap().to_string();
    let lease = [("DHP_LEASE_INTERVAL_S", "0.5"), ("DHP_LEASE_MAX_MISSED", "3")];
    // stderr to a file: an unread pipe would fill up and block the
    // supervisor's error logging while the database is down.
    let logs = tempfile::tempdir().unwrap();
    let sup_log = logs.path().join("sup.err");
    let mut sup = Command::new(dhp_bin())
        .args(["supervisor", &url, "sup", "120"])
        .envs(lease)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&sup_log).unwrap())
        .spawn()
        .unwrap();
    let worker = Command::new(dhp_bin())
        .args(["work", &url, "--runner", "w1", "claim", &hid, "--pace", "0.02", "--json"])
        .envs(lease)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();

    let observer = Runner::open(&url, "observer", Config::default()).unwrap();
    assert!(wait_for(20.0, || observer.status(&hid).unwrap()["checkpoints"].as_i64() >= Some(10)));
    let before = observer.checkpoints(&hid).unwrap();
    cluster.crash();
    std::thread::sleep(Duration::from_millis(1500));
    cluster.restart();

    // The worker's next write finds the connection gone: a typed error.
    let out = worker.wait_with_output().unwrap();
    let werr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(11), "worker exits with the store error code: {werr}");
    assert!(werr.contains("StoreError"), "{werr}");

    // The supervisor survives, reconnects and orphans the dead worker's work.
    let observer = Runner::open(&url, "observer", Config::default()).unwrap();
    assert!(
        wait_for(20.0, || observer.status(&hid).is_ok_and(|s| s["status"] == "orphaned")),
        "supervisor did not orphan after the restart: {} {}",
        observer.status(&hid).unwrap(),
        std::fs::read_to_string(&sup_log).unwrap_or_default()
    );
    let after = observer.checkpoints(&hid).unwrap();
    assert!(after.len() >= before.len(), "lost checkpoints: {} before, {} after", before.len(), after.len());
    assert_eq!(&after[..before.len()], &before[..], "committed checkpoints unchanged");
    assert!(after.iter().enumerate().all(|(i, r)| r.seq == i as i64), "seqs contiguous");

    // The supervisor's liveness lock died with the server; its keeper takes
    // it again, so a follower would not mistake the live leader for dead.
    let sup_dead = || {
        dhp_core::store::with_tx(observer.store().as_ref(), dhp_core::store::Mode::Read, |tx| {
            tx.dead_holders(&["sup".to_string()])
        })
        .unwrap()
    };
    assert!(wait_for(10.0, || sup_dead().is_empty()), "the supervisor's liveness lock was not taken again");

    let (code, v, err) = dhp(&["work", &url, "--runner", "w2", "recover", &hid], &lease);
    assert_eq!(code, 0, "{err}");
    let (count, sum) = census::chunk(2_000_000, 2_100_000);
    assert_eq!((v["prime_count"].as_u64(), v["prime_sum"].as_u64()), (Some(count), Some(sum)), "{v}");
    assert!(sup.try_wait().unwrap().is_none(), "the supervisor is still running");
    sup.kill().unwrap();
    sup.wait().unwrap();
    let log = std::fs::read_to_string(&sup_log).unwrap();
    assert!(log.contains("scan failed"), "the supervisor saw typed errors while the database was down: {log}");
}
