//! Real processes across implementations: a Python supervisor orphans a
//! SIGKILLed Rust worker's handoff, a Rust supervisor orphans a SIGKILLed
//! Python worker's; the other side recovers and the result is correct.
use crate::common::*;
use dhp_core::{Config, Runner};
use dhp_workload::census;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const LEASE: &[(&str, &str)] = &[
    ("DHP_LEASE_INTERVAL_S", "0.5"),
    ("DHP_LEASE_MAX_MISSED", "2"),
    ("DHP_SUPERVISOR_SCAN_S", "0.2"),
    ("DHP_LEADER_TTL_S", "1.0"),
];

/// The recovering worker's own lease. No supervisor runs any more, so its
/// length decides nothing but whether a late heartbeat on a loaded machine
/// loses it: the reference worker heartbeats between chunks, and a 1 s lease
/// (LEASE) ran out under load (LeaseLost, "supervisor owns this handoff now").
const RECOVER_LEASE: &[(&str, &str)] = &[("DHP_LEASE_INTERVAL_S", "5"), ("DHP_LEASE_MAX_MISSED", "3")];

fn wait_for(what: &str, secs: f64, mut f: impl FnMut() -> bool) {
    let end = Instant::now()
        + dhp_core::config::duration_from_secs("wait", secs, 600.0).expect("a test wait of at most 600 s");
    while Instant::now() < end {
        if f() {
            return;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    panic!("timed out waiting for {what}");
}

fn spawn(mut c: Command) -> Child {
    c.envs(LEASE.iter().copied()).stdout(Stdio::null()).stderr(Stdio::null()).spawn().expect("spawn")
}

fn kill9(c: &mut Child) {
    let _ = c.kill(); // SIGKILL
    let _ = c.wait();
}

fn checkpoints(r: &Runner, hid: &str) -> i64 {
    r.status(hid).map(|s| s["checkpoints"].as_i64().unwrap_or(0)).unwrap_or(0)
}

fn dispatch_census(root: &str) -> String {
    let (code, v, err) = dhp(&["dispatch", root, "--census", "1000,31000,100"], &[]);
    assert_eq!(code, 0, "{err}");
    v["hid"].as_str().unwrap().to_string()
}

fn assert_correct(r: &Runner, hid: &str) {
    let st = r.status(hid).unwrap();
    assert_eq!(st["status"], "completed", "{st}");
    let want = census::expected(1000, 31000, 100);
    assert_eq!(st["result"]["prime_count"], want["prime_count"]);
    assert_eq!(st["result"]["prime_sum"], want["prime_sum"]);
    let rows = r.checkpoints(hid).unwrap();
    assert!(rows.iter().enumerate().all(|(i, c)| c.seq == i as i64), "seqs not continuous");
}

#[test]
fn python_supervisor_orphans_a_killed_rust_worker() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_str().unwrap();
    let hid = dispatch_census(root);
    let r = Runner::open(root, "observer", Config::default()).unwrap();

    let mut w = Command::new(dhp_bin());
    w.args(["work", root, "--runner", "rs-w1", "claim", &hid, "--pace", "0.01", "--no-liveness"]);
    let mut w = spawn(w);
    wait_for("rust checkpoints", 20.0, || checkpoints(&r, &hid) >= 20);
    kill9(&mut w);
    let killed_at = Instant::now();

    let sup_bin = dhp_testkit::python().parent().unwrap().join("dhp-supervisor");
    let mut s = Command::new(sup_bin);
    s.args([root, "py-sup", "30"]);
    let mut s = spawn(s);
    wait_for("python orphan", 15.0, || r.status(&hid).unwrap()["status"] == "orphaned");
    let latency = killed_at.elapsed();
    kill9(&mut s);
    assert_eq!(r.ownership(&hid).unwrap().unwrap().holder, "__orphaned__");
    eprintln!("python supervisor orphaned the rust worker's handoff {latency:?} after the kill");

    let before = checkpoints(&r, &hid);
    let (code, v, err) = dhp(&["work", root, "--runner", "rs-w2", "recover", &hid], RECOVER_LEASE);
    assert_eq!(code, 0, "{err}");
    assert_eq!(v["resumed_from"].as_u64().unwrap(), 1000 + 100 * before as u64, "resumed at the last checkpoint");
    assert_correct(&r, &hid);
}

#[test]
fn rust_supervisor_orphans_a_killed_python_worker() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_str().unwrap();
    let hid = dispatch_census(root);
    let r = Runner::open(root, "observer", Config::default()).unwrap();

    let mut w = Command::new(dhp_testkit::python());
    w.arg(refctl_path())
        .args(["census", root, &hid, "--runner", "py-w1", "--mode", "claim", "--chunk", "100", "--pace", "0.01"]);
    // a 4 s lease: the reference worker heartbeats between chunks, and its
    // 1 s one ran out before 20 checkpoints at a load of 47 (it must still
    // run out well within the 15 s the orphan is waited for)
    let mut w = w
        .envs(LEASE.iter().copied())
        .envs([("DHP_LEASE_INTERVAL_S", "2"), ("DHP_LEASE_MAX_MISSED", "2")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    wait_for("python checkpoints", 30.0, || checkpoints(&r, &hid) >= 20);
    kill9(&mut w);

    let mut s = Command::new(dhp_bin());
    s.args(["supervisor", root, "rs-sup", "30"]);
    let mut s = spawn(s);
    wait_for("rust orphan", 15.0, || r.status(&hid).unwrap()["status"] == "orphaned");
    // SIGTERM: the supervisor finishes its scan and exits 0.
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(s.id() as i32), nix::sys::signal::Signal::SIGTERM).unwrap();
    assert!(s.wait().unwrap().success(), "supervisor exits 0 on SIGTERM");

    let before = checkpoints(&r, &hid);
    let v =
        refctl_ok(&["census", root, &hid, "--runner", "py-w2", "--mode", "recover", "--chunk", "100"], RECOVER_LEASE);
    assert_eq!(v["completed"], true, "{v}");
    assert!(v["checkpoints"].as_i64().unwrap() == 300 - before, "python resumed at the last checkpoint: {v}");
    assert_correct(&r, &hid);
}
