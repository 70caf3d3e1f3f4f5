//! Lease and leadership times come from the database server's clock, never
//! the client's. A supervisor an hour ahead of a live worker does not
//! orphan it; a dead worker an hour ahead is still orphaned once its lease
//! runs out. Each process runs under `faketime` (installed by
//! scripts/pg.sh), so its wall clock really is an hour off.
use crate::pg_support;

use crate::common::*;
use dhp_core::{Config, Runner};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Lease TTL 1.5 s: a client clock an hour off would decide every lease.
const LEASE: [(&str, &str); 3] =
    [("DHP_LEASE_INTERVAL_S", "0.5"), ("DHP_LEASE_MAX_MISSED", "3"), ("DHP_SUPERVISOR_SCAN_S", "0.2")];

fn faketime_bin() -> String {
    let ok = Command::new("faketime").arg("--help").stdout(Stdio::null()).stderr(Stdio::null()).status();
    assert!(ok.is_ok(), "faketime is missing: scripts/pg.sh installs it (apt-get install faketime)");
    "faketime".into()
}

/// `dhp ARGS` with its wall clock shifted by `offset` (e.g. "+1h"), or
/// unshifted for `None`.
fn spawn(offset: Option<&str>, args: &[&str]) -> Group {
    let mut cmd = match offset {
        Some(off) => {
            let mut c = Command::new(faketime_bin());
            c.args(["-m", "--exclude-monotonic", "-f", off]).arg(dhp_bin());
            c
        }
        None => Command::new(dhp_bin()),
    };
    // Own process group: faketime runs dhp as its child, and kill -9 must
    // reach dhp itself. Its stderr is kept for a failure's message.
    let err = tempfile::NamedTempFile::new().unwrap();
    let child = cmd
        .args(args)
        .envs(LEASE)
        .process_group(0)
        .stdout(Stdio::null())
        .stderr(err.reopen().unwrap())
        .spawn()
        .unwrap();
    Group(child, err)
}

/// Whether the child still runs, and what it wrote to stderr.
fn said(g: &mut Group) -> String {
    let state = g.0.try_wait().map(|s| s.map_or("running".to_string(), |s| format!("exited: {s}")));
    format!("{state:?}; stderr: {}", std::fs::read_to_string(g.1.path()).unwrap_or_default())
}

/// SIGKILL the whole group of a spawned child and reap it.
fn kill9(c: &mut Child) {
    let _ = kill(Pid::from_raw(-(c.id() as i32)), Signal::SIGKILL);
    let _ = c.wait();
}

/// Kills its process group when dropped, so a failing assertion leaves no
/// process behind.
struct Group(Child, tempfile::NamedTempFile);

impl Drop for Group {
    fn drop(&mut self) {
        kill9(&mut self.0);
    }
}

fn census(url: &str, lo: u64) -> String {
    let (code, v, err) = dhp(&["dispatch", url, "--census", &format!("{lo},{},100", lo + 300_000)], &[]);
    assert_eq!(code, 0, "{err}");
    v["hid"].as_str().unwrap().to_string()
}

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

/// The hour of a checkpoint's `at` (written with the worker's own clock).
fn hour_of(at: &str) -> u32 {
    at[11..13].parse().unwrap()
}

#[test]
fn supervisor_an_hour_ahead_does_not_orphan_a_live_worker() {
    let url = pg_support::fresh_url("skew_sup");
    let hid = census(&url, 3_000_000);
    let r = Runner::open(&url, "observer", Config::default()).unwrap();
    // Lease-only (no liveness token): the lease times alone decide.
    let mut w = spawn(None, &["work", &url, "--runner", "w", "claim", &hid, "--pace", "0.05", "--no-liveness"]);
    // (failed once under load, the worker's stderr then discarded: now shown)
    assert!(wait_for(20.0, || r.status(&hid).unwrap()["checkpoints"].as_i64() >= Some(3)), "worker: {}", said(&mut w));
    let tmp = tempfile::tempdir().unwrap();
    let hist = tmp.path().join("sup.history");
    let sup = spawn(Some("+1h"), &["supervisor", &url, "sup-ahead", "60", "--history", hist.to_str().unwrap()]);
    assert!(wait_for(10.0, || dhp_testkit::store::leader(&r).unwrap().is_some_and(|l| l.holder == "sup-ahead")));
    // Thirty passes of the skewed leader (0.2 s apart: four lease TTLs),
    // counted rather than slept, so the check below is not vacuous.
    wait_for_passes(&hist, "sup-ahead", 30, 60.0);
    let st = r.status(&hid).unwrap();
    assert_ne!(st["status"], "orphaned", "a live worker was orphaned by a skewed supervisor: {st}");
    assert_eq!(st["attempt"], 0, "{st}");
    drop((w, sup));
}

#[test]
fn dead_worker_an_hour_ahead_is_orphaned_when_its_lease_runs_out() {
    let url = pg_support::fresh_url("skew_worker");
    let hid = census(&url, 4_000_000);
    let r = Runner::open(&url, "observer", Config::default()).unwrap();
    let mut w = spawn(Some("+1h"), &["work", &url, "--runner", "w", "claim", &hid, "--pace", "0.05", "--no-liveness"]);
    assert!(wait_for(20.0, || r.status(&hid).unwrap()["checkpoints"].as_i64() >= Some(3)), "worker: {}", said(&mut w));
    let at = r.last_checkpoint_row(&hid).unwrap().unwrap().at;
    let real_hour = chrono::Utc::now().format("%H").to_string().parse::<u32>().unwrap();
    assert_eq!(hour_of(&at), (real_hour + 1) % 24, "the worker's clock is an hour ahead ({at})");
    let sup = spawn(None, &["supervisor", &url, "sup", "60"]);
    kill9(&mut w.0);
    let t0 = Instant::now();
    assert!(
        wait_for(10.0, || r.status(&hid).unwrap()["status"] == "orphaned"),
        "a dead worker whose clock is an hour ahead kept its handoff: {}",
        r.status(&hid).unwrap()
    );
    eprintln!("skewed worker killed → orphaned by lease expiry in {:?}", t0.elapsed());
    assert_eq!(r.envelope_bare(&hid).unwrap()["execution"]["orphan_reason"], "lease-expired");
    drop(sup);
}
