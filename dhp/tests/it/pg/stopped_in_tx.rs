//! A worker SIGSTOPped inside its checkpoint transaction holds the
//! handoff's advisory lock and row locks, and nothing it does will release
//! them. Every session of a PostgreSQL store sets
//! `idle_in_transaction_session_timeout` to the lease TTL (at least 1 s), so
//! the server ends the stopped session and rolls its transaction back: the
//! supervisor orphans the handoff within that bound, and the rest of its
//! scan — which handles one handoff after another — is not held up either.
//! Woken, the worker's late write is refused and none of it is stored.
//! Without the timeout the orphan waited for the worker to be woken.
use crate::pg_support;

use crate::common::*;
use dhp_core::{Config, Runner};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Lease TTL 1 s (0.5 × 2): the bound is max(TTL, 1 s) = 1 s.
const ENV: [(&str, &str); 4] = [
    ("DHP_LEASE_INTERVAL_S", "0.5"),
    ("DHP_LEASE_MAX_MISSED", "2"),
    ("DHP_SUPERVISOR_SCAN_S", "0.1"),
    ("DHP_LEADER_TTL_S", "1.0"),
];
const BOUND: Duration = Duration::from_secs(1);
/// Scans, process start-up and a loaded machine, on top of the bound.
const SLACK: Duration = Duration::from_secs(5);

/// Children that are woken and killed however the test ends, so a failed
/// assertion leaves no stopped process behind.
struct Procs(Vec<Child>);

impl Drop for Procs {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = kill(Pid::from_raw(c.id() as i32), Signal::SIGCONT);
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Only the stopped worker's stderr is kept (read once it has exited);
/// the others' would fill an unread pipe.
fn start(args: &[&str], extra_env: &[(&str, &str)], stderr: Stdio) -> Child {
    Command::new(dhp_bin())
        .args(args)
        .envs(ENV)
        .envs(extra_env.iter().copied())
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .unwrap()
}

fn census(url: &str, lo: u64) -> String {
    let (code, v, err) = dhp(&["dispatch", url, "--census", &format!("{lo},{},100", lo + 500_000)], &[]);
    assert_eq!(code, 0, "{err}");
    v["hid"].as_str().unwrap().to_string()
}

fn wait_for(limit: Duration, mut f: impl FnMut() -> bool) -> Option<Duration> {
    let t0 = Instant::now();
    while t0.elapsed() < limit {
        if f() {
            return Some(t0.elapsed());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    None
}

#[test]
fn a_worker_stopped_inside_its_transaction_is_orphaned_within_the_bound_and_fenced() {
    let url = pg_support::fresh_url("stopped_tx");
    let (h1, h2) = (census(&url, 5_000_000), census(&url, 6_000_000));
    // The scan orphans expired leases in hid order: the stopped worker's
    // handoff comes first, so the other one waits behind it unless the
    // stopped session is ended.
    let (stalled, other) = if h1 < h2 { (h1, h2) } else { (h2, h1) };
    let r = Runner::open(&url, "observer", Config::default()).unwrap();
    let status = |h: &str| r.status(h).unwrap()["status"].as_str().unwrap_or_default().to_string();
    let mut procs = Procs(Vec::new());

    procs.0.push(start(
        &["work", &url, "--runner", "wa", "claim", &stalled, "--pace", "0.01"],
        &[("DHP_FAILPOINTS", "checkpoint.in_tx=stop@3")],
        Stdio::piped(),
    ));
    let wa = procs.0[0].id();
    assert!(
        wait_for(Duration::from_secs(30), || dhp_testkit::helpers::stopped(wa)).is_some(),
        "wa never stopped at its failpoint"
    );
    let t_stop = Instant::now();
    // A lease-only worker, killed: its lease runs out after wa's.
    procs.0.push(start(
        &["work", &url, "--runner", "wb", "claim", &other, "--pace", "0.01", "--no-liveness"],
        &[],
        Stdio::null(),
    ));
    let cps = |h: &str| r.status(h).unwrap()["checkpoints"].as_i64().unwrap_or(0);
    assert!(wait_for(Duration::from_secs(30), || cps(&other) >= 2).is_some(), "wb did not start");
    procs.0[1].kill().unwrap();
    procs.0[1].wait().unwrap();
    let t_kill = Instant::now();
    procs.0.push(start(&["supervisor", &url, "sup", "60"], &[], Stdio::null()));

    let left = (t_stop + BOUND + SLACK).saturating_duration_since(Instant::now());
    let took = wait_for(left, || status(&stalled) == "orphaned").map(|_| t_stop.elapsed());
    assert!(
        took.is_some(),
        "the stopped worker's handoff is still {} {:?} after the stop",
        status(&stalled),
        t_stop.elapsed()
    );
    eprintln!("stopped in a transaction → orphaned in {:?} (bound {BOUND:?})", took.unwrap_or_default());
    let left = (t_kill + BOUND + SLACK).saturating_duration_since(Instant::now());
    assert!(wait_for(left, || status(&other) == "orphaned").is_some(), "the scan did not go on: {}", status(&other));
    assert_eq!(r.envelope_bare(&stalled).unwrap()["execution"]["orphan_reason"], "lease-expired");

    // Woken, wa finds its transaction gone: the checkpoint it was writing
    // (seq 2) was rolled back, and it writes nothing after the orphan.
    let fence_at_orphan = r.status(&stalled).unwrap()["fence"].clone();
    kill(Pid::from_raw(wa as i32), Signal::SIGCONT).unwrap();
    let wa_child = &mut procs.0[0];
    assert!(wait_for(Duration::from_secs(20), || wa_child.try_wait().unwrap().is_some()).is_some(), "wa did not exit");
    let out = procs.0.remove(0).wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(11), "a store error: its session was ended\n{err}");
    eprintln!("woken worker: {}", err.trim());
    let seqs: Vec<i64> = r.checkpoints(&stalled).unwrap().iter().map(|c| c.seq).collect();
    assert_eq!(seqs, vec![0, 1], "the stopped transaction's checkpoint is not stored");
    assert_eq!(status(&stalled), "orphaned");
    assert_eq!(r.status(&stalled).unwrap()["fence"], fence_at_orphan, "wa took nothing back");
}
