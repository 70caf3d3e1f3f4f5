//! The bridge demo as a test: a client submits over HTTP, the worker is
//! SIGKILLed mid-task, a standby recovers it; the client (the official SDK,
//! polling GetTask) sees only WORKING → COMPLETED, the result is correct and
//! no committed chunk is redone (rework ≤ the one chunk in flight).
use crate::a2a_support::*;
use dhp_workload::census;
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

const LO: u64 = 0;
const HI: u64 = 300_000;
const CHUNK: u64 = 10_000;
/// The workers' own leases: 2 s, not SHORT's 0.6 s. Their death is noticed
/// through their liveness token, not the lease; a 0.6 s lease let one late
/// heartbeat on a loaded CI machine orphan a live agent-b (LeaseLost) and the
/// test wait for checkpoints that could never come.
const WORKER_LEASE: &[(&str, &str)] = &[("DHP_LEASE_INTERVAL_S", "0.5"), ("DHP_LEASE_MAX_MISSED", "4")];

#[test]
fn worker_killed_mid_task_is_invisible_to_the_a2a_client() {
    let dir = tempfile::tempdir().unwrap();
    let root = new_store(dir.path());
    // No pool: the workers are separate `dhp work` processes; the server's
    // supervisor orphans the dead one.
    let srv = Server::start(&root, &[], SHORT);
    let (tid, hid) = submit(&srv.url, &census_task(LO, HI, CHUNK));

    // The client watches from before the first claim to the end.
    let script = dhp_testkit::checkout().join("dhp/tests/py/a2a_client.py");
    let mut watcher = Command::new(dhp_testkit::python())
        .arg(&script)
        .args([srv.url.as_str(), "watch", &tid, "--interval", "0.05", "--timeout", "120", "--token", TEST_TOKEN])
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn watcher");

    // Its first poll lands before any worker starts (Python's start-up can
    // outlast the whole run on a loaded machine).
    let mut watch_out = BufReader::new(watcher.stdout.take().unwrap());
    let mut first = String::new();
    watch_out.read_line(&mut first).unwrap();
    let first: Value = serde_json::from_str(&first).unwrap_or_else(|e| panic!("watcher: {e}: {first:?}"));
    assert_eq!(first["state"], "TASK_STATE_WORKING", "{first}");

    let root_s = root.to_str().unwrap();
    let mut b = Command::new(dhp_bin())
        .args(["work", root_s, "--runner", "agent-b", "claim", &hid, "--pace", "0.2"])
        .envs(SHORT.iter().copied())
        .envs(WORKER_LEASE.iter().copied())
        .stdout(Stdio::null())
        .spawn()
        .expect("spawn agent-b");
    wait_status(&root, &hid, "3 checkpoints by agent-b", Duration::from_secs(60), |v| {
        v["checkpoints"].as_u64().unwrap_or(0) >= 3
    });
    b.kill().unwrap();
    b.wait().unwrap();
    let k = wait_status(&root, &hid, "status after the kill", Duration::from_secs(5), |v| v.is_object())["checkpoints"]
        .as_u64()
        .unwrap();
    assert!(k < (HI - LO) / CHUNK, "agent-b finished before the kill");

    // The supervisor inside `dhp a2a` orphans it; the client still sees WORKING.
    wait_status(&root, &hid, "orphaned", Duration::from_secs(30), |v| v["status"] == "orphaned");
    let during = &sdk_ok(&srv.url, &["get", &tid])[0];
    assert_eq!(during["status"]["state"], "TASK_STATE_WORKING", "{during}");
    assert_eq!(during["metadata"]["dhp_status"], "orphaned");

    // The standby recovers from the last checkpoint.
    let out = Command::new(dhp_bin())
        .args(["work", root_s, "--runner", "agent-c", "recover", &hid, "--json"])
        .envs(SHORT.iter().copied())
        .envs(WORKER_LEASE.iter().copied())
        .output()
        .unwrap();
    assert!(out.status.success(), "agent-c: {}", String::from_utf8_lossy(&out.stderr));
    let c: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(c["resumed_from"], LO + k * CHUNK, "{c}");
    assert_eq!(c["chunks_this_run"], (HI - LO) / CHUNK - k, "a committed chunk was redone: {c}");

    let mut lines = vec![first];
    lines.extend(watch_out.lines().map(|l| serde_json::from_str::<Value>(&l.unwrap()).unwrap()));
    assert!(watcher.wait().unwrap().success(), "watcher: {lines:?}");
    let states: Vec<&str> = lines.iter().map(|l| l["state"].as_str().unwrap_or("?")).collect();
    eprintln!("client saw: {states:?}");
    let (last, before) = states.split_last().unwrap();
    assert_eq!(*last, "TASK_STATE_COMPLETED", "{states:?}");
    assert!(before.iter().all(|s| *s == "TASK_STATE_SUBMITTED" || *s == "TASK_STATE_WORKING"), "{states:?}");
    let text = lines.last().unwrap()["task"]["artifacts"][0]["parts"][0]["text"].as_str().unwrap().to_string();
    assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), census::expected(LO, HI, CHUNK));
}
