//! Cross-host liveness on PostgreSQL: a worker holds a session advisory
//! lock; SIGKILL closes its connection, the server releases the lock and
//! the leader orphans its handoff (`worker-died`) in milliseconds, long
//! before the 30 s lease could run out. A SIGSTOPped worker keeps its lock
//! and is not orphaned; a worker without a token (`--no-liveness`) keeps
//! the lease-only path. A killed leader is replaced at once the same way.
use crate::pg_support;

use crate::common::*;
use dhp_core::{Config, Runner};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn wait_for(secs: f64, mut f: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + Duration::from_secs_f64(secs);
    while Instant::now() < end {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    false
}

/// Lease TTL 30 s (interval 10 × 3): anything orphaned within the test is
/// the liveness path.
fn start(args: &[&str]) -> Child {
    Command::new(dhp_bin())
        .args(args)
        .env("DHP_LEASE_INTERVAL_S", "10")
        .env("DHP_LEASE_MAX_MISSED", "3")
        .env("DHP_LEADER_TTL_S", "30")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

fn census(url: &str, lo: u64) -> String {
    let (code, v, err) = dhp(&["dispatch", url, "--census", &format!("{lo},{},100", lo + 200_000)], &[]);
    assert_eq!(code, 0, "{err}");
    v["hid"].as_str().unwrap().to_string()
}

#[test]
fn killed_worker_is_orphaned_in_milliseconds_paused_and_tokenless_ones_are_not() {
    let url = pg_support::fresh_url("live");
    let (ha, hb, hc) = (census(&url, 5_000_000), census(&url, 6_000_000), census(&url, 7_000_000));
    let r = Runner::open(&url, "observer", Config::default()).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let hist = tmp.path().join("sup.history");
    let mut sup = start(&["supervisor", &url, "sup", "60", "--history", hist.to_str().unwrap()]);
    let mut wa = start(&["work", &url, "--runner", "wa", "claim", &ha, "--pace", "0.01"]);
    let mut wb = start(&["work", &url, "--runner", "wb", "claim", &hb, "--pace", "0.01"]);
    let mut wc = start(&["work", &url, "--runner", "wc", "claim", &hc, "--pace", "0.01", "--no-liveness"]);
    let cps = |h: &str| r.status(h).unwrap()["checkpoints"].as_i64().unwrap_or(0);
    assert!(wait_for(20.0, || cps(&ha) >= 5 && cps(&hb) >= 5 && cps(&hc) >= 5), "workers did not start");

    // A paused worker keeps its connection and so its lock. (A PostgreSQL
    // store has no single writer lock a paused process could block.)
    kill(Pid::from_raw(wb.id() as i32), Signal::SIGSTOP).unwrap();
    wa.kill().unwrap();
    let t0 = Instant::now();
    wa.wait().unwrap();
    assert!(wait_for(10.0, || r.status(&ha).unwrap()["status"] == "orphaned"), "not orphaned within 10 s");
    let took = t0.elapsed();
    eprintln!("kill -9 → orphaned in {took:?}");
    assert!(took < Duration::from_secs(2), "liveness path, not the 30 s lease: {took:?}");
    assert_eq!(r.envelope_bare(&ha).unwrap()["execution"]["orphan_reason"], "worker-died");

    // Whole scans later (not a fixed sleep): the paused and the tokenless
    // workers stay running.
    wait_for_passes(&hist, "sup", 3, 10.0);
    assert_eq!(r.status(&hb).unwrap()["status"], "running", "paused worker is not dead");
    assert_eq!(r.status(&hc).unwrap()["status"], "running", "no token: lease-only");
    kill(Pid::from_raw(wb.id() as i32), Signal::SIGCONT).unwrap();
    for w in [&mut wb, &mut wc] {
        w.kill().unwrap();
        w.wait().unwrap();
    }
    sup.kill().unwrap();
    sup.wait().unwrap();
}

#[test]
fn killed_leader_is_replaced_at_once() {
    let url = pg_support::fresh_url("leader");
    let r = Runner::open(&url, "observer", Config::default()).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let hist = tmp.path().join("sup.history");
    let hist_arg = hist.to_str().unwrap();
    let mut s1 = start(&["supervisor", &url, "s1", "60", "--history", hist_arg]);
    assert!(wait_for(10.0, || dhp_testkit::store::leader(&r).unwrap().is_some_and(|l| l.holder == "s1")));
    let mut s2 = start(&["supervisor", &url, "s2", "60", "--history", hist_arg]);
    // Passes rather than a fixed sleep: s2 has had its turns to look at the
    // live leader's row.
    wait_for_passes(&hist, "s2", 2, 10.0);
    assert_eq!(dhp_testkit::store::leader(&r).unwrap().unwrap().holder, "s1", "a live leader keeps leading");
    s1.kill().unwrap();
    let t0 = Instant::now();
    s1.wait().unwrap();
    // Leader TTL 30 s: a takeover within 2 s is the liveness path.
    assert!(
        wait_for(2.0, || dhp_testkit::store::leader(&r).unwrap().is_some_and(|l| l.holder == "s2")),
        "s2 did not take over within 2 s"
    );
    eprintln!("leader kill -9 → new leader in {:?}", t0.elapsed());
    s2.kill().unwrap();
    s2.wait().unwrap();
}
