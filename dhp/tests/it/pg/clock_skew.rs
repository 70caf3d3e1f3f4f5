//! Lease and leadership times come from the database server's clock, never
//! the client's. A supervisor an hour ahead of a live worker does not
//! orphan it; a dead worker an hour ahead is still orphaned once its lease
//! runs out. Each process runs with libfaketime preloaded (installed by
//! scripts/services.sh), so its wall clock really is an hour off.
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

/// libfaketime's shared object. Preloaded directly, not through the
/// `faketime` wrapper: the wrapper creates a named semaphore per pid
/// (`/dev/shm/sem.faketime_sem_PID`) and removes it only when it exits
/// normally, so every wrapper these tests SIGKILL left one behind, and a
/// later wrapper given the same pid refused to start ("sem_open: File
/// exists") — a supervisor that never ran, failing this test once in ~20
/// (dhp-kit's `faketime` module says more).
fn libfaketime() -> std::path::PathBuf {
    let lib = dhp_testkit::faketime::find_library();
    lib.expect("libfaketime is missing: scripts/services.sh installs it (Debian package faketime)")
}

/// `dhp ARGS` with its wall clock shifted by `offset` (e.g. "+1h"), or
/// unshifted for `None`. The monotonic clock stays real.
fn spawn(offset: Option<&str>, args: &[&str]) -> Group {
    let mut cmd = Command::new(dhp_bin());
    if let Some(off) = offset {
        cmd.env("LD_PRELOAD", libfaketime()).env("FAKETIME", off).env("DONT_FAKE_MONOTONIC", "1");
        dhp_testkit::faketime::clear_stale_on_exec(&mut cmd);
    }
    // Own process group, so kill -9 also reaches anything it started. Its
    // stderr is kept for a failure's message.
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

/// Where each thread of the child's process group sleeps (`wchan`), so a
/// hang inside a preloaded library is told from a slow start.
fn wait_points(c: &Child) -> String {
    let mut out = String::new();
    let Ok(procs) = std::fs::read_dir("/proc") else { return out };
    for p in procs.flatten() {
        let stat = std::fs::read_to_string(p.path().join("stat")).unwrap_or_default();
        // Field 5 (after the parenthesised name) is the process group.
        let pgrp = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(2));
        if pgrp != Some(&c.id().to_string()) {
            continue;
        }
        let Ok(tasks) = std::fs::read_dir(p.path().join("task")) else { continue };
        for t in tasks.flatten() {
            let w = std::fs::read_to_string(t.path().join("wchan")).unwrap_or_default();
            let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
            out.push_str(&format!(
                "{}/{}:{}={w}; ",
                p.file_name().to_string_lossy(),
                comm.trim(),
                t.file_name().to_string_lossy()
            ));
        }
    }
    out
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
    assert!(
        wait_for(20.0, || r.status(&hid).unwrap()["checkpoints"].as_i64() >= Some(3)),
        "worker: {}; its threads: {}",
        said(&mut w),
        wait_points(&w.0)
    );
    let tmp = tempfile::tempdir().unwrap();
    let hist = tmp.path().join("sup.history");
    let mut sup = spawn(Some("+1h"), &["supervisor", &url, "sup-ahead", "60", "--history", hist.to_str().unwrap()]);
    // 30 s: in one CI run it was not leader after 10 s, with nothing kept
    // to say why; now its state, stderr and threads' wait points are shown.
    assert!(
        wait_for(30.0, || dhp_testkit::store::leader(&r).unwrap().is_some_and(|l| l.holder == "sup-ahead")),
        "the skewed supervisor did not lead: leader {:?}; supervisor: {}; its threads: {}",
        dhp_testkit::store::leader(&r).map(|l| l.map(|l| l.holder)),
        said(&mut sup),
        wait_points(&sup.0)
    );
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
    assert!(
        wait_for(20.0, || r.status(&hid).unwrap()["checkpoints"].as_i64() >= Some(3)),
        "worker: {}; its threads: {}",
        said(&mut w),
        wait_points(&w.0)
    );
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
