//! A token that is free when the liveness poll tests it, but held by a
//! live process by the time the poll reads that holder's rows, orphans
//! nothing: the poll found the token between `publish`'s create and lock
//! (or a restarted process of the same id had not locked it yet), and the
//! rows it then reads are the live process's. Chaos seed 3003 orphaned a
//! worker this way 2 ms after its recover.
//!
//! The supervisor stops (failpoint `liveness.dead_token=stop@1`) right
//! after it found w1's token free; the test then takes the token and
//! claims as w1, and lets the supervisor go on.
use crate::common::*;
use dhp_core::{liveness, Config, Runner};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn a_token_taken_between_poll_and_read_is_not_orphaned() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_str().unwrap();
    let (_, a, _) = dhp(&["dispatch", root, "--census", "1000,2000,100"], &[]);
    let hid = a["hid"].as_str().unwrap().to_string();
    // w1's token file exists and nobody holds it: what `publish` leaves
    // for a moment between creating the file and locking it.
    std::fs::create_dir_all(dir.path().join(liveness::DIR)).unwrap();
    std::fs::write(dir.path().join(liveness::DIR).join("w1.lock"), b"").unwrap();
    let mut sup = Command::new(dhp_bin())
        .args(["supervisor", root, "sup", "60"])
        .env("DHP_LEASE_INTERVAL_S", "10")
        .env("DHP_FAILPOINTS", "liveness.dead_token=stop@1")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let end = Instant::now() + Duration::from_secs(20);
    while !dhp_testkit::helpers::stopped(sup.id()) {
        assert!(Instant::now() < end, "the supervisor never reached liveness.dead_token");
        assert!(sup.try_wait().unwrap().is_none(), "the supervisor exited");
        std::thread::sleep(Duration::from_millis(5));
    }
    let _token = liveness::publish(dir.path(), &dhp_core::WorkerId::parse("w1").unwrap()).unwrap();
    let w1 = Runner::open(root, "w1", Config::default()).unwrap();
    let ctx = w1.claim(&hid).unwrap();
    kill(Pid::from_raw(sup.id() as i32), Signal::SIGCONT).unwrap();
    // Many liveness polls (every 10 ms) and at least one scan.
    std::thread::sleep(Duration::from_millis(1500));
    let st = w1.status(&hid).unwrap();
    assert_eq!(st["status"], "running", "a live worker's handoff was orphaned: {st}");
    ctx.checkpoint(&serde_json::json!({"still": "mine"})).unwrap();
    assert!(dir.path().join(liveness::DIR).join("w1.lock").exists(), "a held token was reaped");
    let _ = sup.kill();
    let _ = sup.wait();
}
