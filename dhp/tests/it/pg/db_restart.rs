//! The database crashes (`pg_ctl stop -m immediate`) and restarts while two
//! workers and a supervisor run. A worker whose lease outlives the outage
//! rides through it (dhp/src/ride.rs): it reconnects, retakes its liveness
//! lock, finds its lease and fence unchanged and completes, never orphaned,
//! with the same fence and attempt count. One whose lease ran out during
//! the outage cannot ride: it exits with the typed store error (11) as
//! before; the supervisor logs, reconnects and orphans its handoff; a new
//! worker recovers it and completes with the right result. No checkpoint
//! that was committed before the crash is lost.
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
    let (code, v, err) = dhp(&["dispatch", &url, "--census", "3000000,3100000,100"], &[]);
    assert_eq!(code, 0, "{err}");
    let long_hid = v["hid"].as_str().unwrap().to_string();
    // 1.5 s: shorter than the outage; 12 s: longer
    let lease = [("DHP_LEASE_INTERVAL_S", "0.5"), ("DHP_LEASE_MAX_MISSED", "3")];
    let long_lease = [("DHP_LEASE_INTERVAL_S", "2"), ("DHP_LEASE_MAX_MISSED", "6")];
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

    let rider = Command::new(dhp_bin())
        .args(["work", &url, "--runner", "rider", "claim", &long_hid, "--pace", "0.02", "--json"])
        .envs(long_lease)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();

    let observer = Runner::open(&url, "observer", Config::default()).unwrap();
    let checkpoints = |h: &str| observer.status(h).unwrap()["checkpoints"].as_i64().unwrap_or(0);
    assert!(wait_for(20.0, || checkpoints(&hid) >= 10 && checkpoints(&long_hid) >= 10));
    let before = observer.checkpoints(&hid).unwrap();
    let rider_before = observer.status(&long_hid).unwrap();
    cluster.crash();
    std::thread::sleep(Duration::from_millis(1500));
    cluster.restart();

    // The rider's lease outlived the outage: it goes on with the same
    // fence and attempt, and completes; never orphaned.
    let out = rider.wait_with_output().unwrap();
    let rerr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "the rider rides through the restart: {rerr}");
    assert!(rerr.contains("reconnected to the database"), "it did lose the server: {rerr}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let (count, sum) = census::chunk(3_000_000, 3_100_000);
    assert_eq!((v["prime_count"].as_u64(), v["prime_sum"].as_u64()), (Some(count), Some(sum)), "{v}");
    assert_eq!((v["resumed_from"].as_u64(), v["chunks_this_run"].as_u64()), (Some(3_000_000), Some(1000)), "{v}");
    let observer = Runner::open(&url, "observer", Config::default()).unwrap();
    let after = observer.status(&long_hid).unwrap();
    assert_eq!(after["status"], "completed", "{after}");
    assert_eq!(after["attempt"], rider_before["attempt"], "attempt unchanged: {rider_before} → {after}");
    // the ownership row is gone once completed: the fence is the envelope's
    let ex = &observer.envelope_bare(&long_hid).unwrap()["execution"];
    assert_eq!((&ex["fence"], &ex["runner_id"]), (&rider_before["fence"], &rider_before["owner"]), "{ex}");
    let rows = observer.checkpoints(&long_hid).unwrap();
    assert_eq!(rows.len(), 1000, "one checkpoint per chunk: none written twice, none skipped");
    assert!(rows.iter().enumerate().all(|(i, r)| r.seq == i as i64), "seqs contiguous");

    // The worker's next write finds the connection gone: a typed error.
    let out = worker.wait_with_output().unwrap();
    let werr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(11), "worker exits with the store error code: {werr}");
    assert!(werr.contains("StoreError"), "{werr}");

    // The supervisor survives, reconnects and orphans the dead worker's work.
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
