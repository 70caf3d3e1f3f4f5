//! Same-host death detection (liveness tokens): a SIGKILLed `dhp work`
//! process is orphaned as `worker-died` long before its lease could run
//! out; a SIGSTOPped one is not orphaned; a worker without a token (the
//! Python reference) keeps the lease-only path.
use crate::common::*;
use dhp_core::{Config, Runner};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn wait_for(secs: f64, mut f: impl FnMut() -> bool) -> bool {
    let end = Instant::now()
        + dhp_core::config::duration_from_secs("wait", secs, 600.0).expect("a test wait of at most 600 s");
    while Instant::now() < end {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    false
}

/// SIGSTOP a worker at a moment it holds no SQLite write lock: a process
/// paused inside `BEGIN IMMEDIATE` would block every writer of the store
/// (SQLite has one writer) until it resumes or dies. Nor the writer lock
/// dhp-rs writers queue on before `BEGIN IMMEDIATE`.
fn pause_outside_transaction(child: &Child, db: &std::path::Path) {
    let pid = Pid::from_raw(child.id() as i32);
    let probe = rusqlite::Connection::open(db).unwrap();
    let queue = db.with_file_name("dhp.sqlite3-writer");
    let queue_free = || {
        let f = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(&queue).unwrap();
        nix::fcntl::Flock::lock(f, nix::fcntl::FlockArg::LockExclusiveNonblock).is_ok()
    };
    for _ in 0..200 {
        kill(pid, Signal::SIGSTOP).unwrap();
        std::thread::sleep(Duration::from_millis(5));
        if queue_free() && probe.execute_batch("BEGIN IMMEDIATE; ROLLBACK;").is_ok() {
            return;
        }
        kill(pid, Signal::SIGCONT).unwrap();
        std::thread::sleep(Duration::from_millis(3));
    }
    panic!("could not pause the worker outside a transaction");
}

fn env_of(r: &Runner, hid: &str) -> serde_json::Value {
    r.envelope_bare(hid).unwrap()["execution"].clone()
}

fn start(args: &[&str], lease: &str) -> Child {
    Command::new(dhp_bin())
        .args(args)
        .env("DHP_LEASE_INTERVAL_S", lease)
        .env("DHP_LEASE_MAX_MISSED", "3")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

#[test]
fn killed_worker_is_orphaned_long_before_lease_expiry_and_paused_one_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_str().unwrap();
    let (_, a, _) = dhp(&["dispatch", root, "--census", "5000000,5100000,100"], &[]);
    let (_, b, _) = dhp(&["dispatch", root, "--census", "6000000,6010000,100"], &[]);
    let (ha, hb) = (a["hid"].as_str().unwrap().to_string(), b["hid"].as_str().unwrap().to_string());
    let r = Runner::open(root, "observer", Config::default()).unwrap();
    // Lease TTL 30 s: anything orphaned within the test is the token path.
    let hist = dir.path().join("sup.history");
    let mut sup = start(&["supervisor", root, "sup", "60", "--history", hist.to_str().unwrap()], "10");
    let mut wa = start(&["work", root, "--runner", "wa", "claim", &ha, "--pace", "0.01"], "10");
    let mut wb = start(&["work", root, "--runner", "wb", "claim", &hb, "--pace", "0.02"], "10");
    assert!(wait_for(20.0, || r.status(&ha).unwrap()["checkpoints"].as_i64() >= Some(5)
        && r.status(&hb).unwrap()["checkpoints"].as_i64() >= Some(5)));

    // Pause wb: it keeps its token and must not be orphaned.
    pause_outside_transaction(&wb, &dir.path().join("dhp.sqlite3"));
    wa.kill().unwrap();
    let t0 = Instant::now();
    wa.wait().unwrap();
    assert!(
        wait_for(10.0, || r.status(&ha).unwrap()["status"] == "orphaned"),
        "not orphaned within 10 s (lease is 30 s)"
    );
    eprintln!("kill -9 → orphaned in {:?}", t0.elapsed());
    assert_eq!(env_of(&r, &ha)["orphan_reason"], "worker-died");
    // Whole scans after the kill (not a fixed sleep): the paused worker
    // was looked at, and left running.
    wait_for_passes(&hist, "sup", 3, 10.0);
    assert_eq!(r.status(&hb).unwrap()["status"], "running", "a paused worker is not dead");
    kill(Pid::from_raw(wb.id() as i32), Signal::SIGCONT).unwrap();
    assert!(wb.wait().unwrap().success(), "the resumed worker completes");
    assert_eq!(r.status(&hb).unwrap()["status"], "completed");
    assert_eq!(r.status(&hb).unwrap()["attempt"], 0);
    kill(Pid::from_raw(sup.id() as i32), Signal::SIGTERM).unwrap();
    assert!(sup.wait().unwrap().success());
}

#[test]
fn worker_without_a_token_keeps_the_lease_path() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_str().unwrap();
    let (_, a, _) = dhp(&["dispatch", root, "--census", "1000,50000,100"], &[]);
    let hid = a["hid"].as_str().unwrap().to_string();
    let r = Runner::open(root, "observer", Config::default()).unwrap();
    let mut sup = start(&["supervisor", root, "sup", "60"], "0.5");
    let mut w = Command::new(dhp_testkit::python())
        .arg(refctl_path())
        .args(["census", root, &hid, "--runner", "py", "--mode", "claim", "--chunk", "100", "--pace", "0.02"])
        .env("DHP_LEASE_INTERVAL_S", "0.5")
        .env("DHP_LEASE_MAX_MISSED", "3")
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    assert!(wait_for(20.0, || r.status(&hid).unwrap()["checkpoints"].as_i64() >= Some(5)));
    w.kill().unwrap();
    w.wait().unwrap();
    assert!(wait_for(10.0, || r.status(&hid).unwrap()["status"] == "orphaned"));
    assert_eq!(env_of(&r, &hid)["orphan_reason"], "lease-expired");
    let _ = sup.kill();
    let _ = sup.wait();
}

#[test]
fn a_killed_leader_is_replaced_long_before_its_ttl() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_str().unwrap();
    let r = Runner::open(root, "observer", Config::default()).unwrap();
    let hist = dir.path().join("sup.history");
    let sup = |id: &str| {
        Command::new(dhp_bin())
            .args(["supervisor", root, id, "60", "--history", hist.to_str().unwrap()])
            .env("DHP_LEADER_TTL_S", "30")
            .env("DHP_SUPERVISOR_SCAN_S", "1")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    };
    let mut a = sup("sup-a");
    assert!(wait_for(10.0, || dhp_testkit::store::leader(&r).unwrap().is_some_and(|l| l.holder == "sup-a")));
    let mut b = sup("sup-b");
    // Passes (1 s apart in both) rather than a fixed sleep: b has had its
    // turns to look at the live leader's row.
    wait_for_passes(&hist, "sup-b", 2, 10.0);
    assert_eq!(dhp_testkit::store::leader(&r).unwrap().unwrap().holder, "sup-a");
    a.kill().unwrap();
    let t0 = Instant::now();
    a.wait().unwrap();
    assert!(
        wait_for(10.0, || dhp_testkit::store::leader(&r).unwrap().is_some_and(|l| l.holder == "sup-b")),
        "the follower did not take over within 10 s (TTL is 30 s)"
    );
    eprintln!("leader kill -9 → new leader in {:?}", t0.elapsed());
    kill(Pid::from_raw(b.id() as i32), Signal::SIGTERM).unwrap();
    assert!(b.wait().unwrap().success());
}

#[test]
fn a_worker_stopped_inside_a_write_transaction_is_killed_and_the_store_recovers() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_str().unwrap();
    let (_, a, _) = dhp(&["dispatch", root, "--census", "1000,31000,100"], &[]);
    let hid = a["hid"].as_str().unwrap().to_string();
    let r = Runner::open(root, "observer", Config::default()).unwrap();
    let lease = [("DHP_LEASE_INTERVAL_S", "0.3"), ("DHP_LEASE_MAX_MISSED", "2")];
    // The worker SIGSTOPs itself inside its 5th checkpoint transaction.
    let mut w = Command::new(dhp_bin())
        .args(["work", root, "--runner", "paused", "claim", &hid])
        .envs(lease)
        .env("DHP_FAILPOINTS", "checkpoint.in_tx=stop@5")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let probe = rusqlite::Connection::open(dir.path().join("dhp.sqlite3")).unwrap();
    assert!(
        wait_for(20.0, || probe.execute_batch("BEGIN IMMEDIATE; ROLLBACK;").is_err()),
        "the stopped worker holds the write lock"
    );
    let mut sup = Command::new(dhp_bin())
        .args(["supervisor", root, "sup", "60"])
        .envs(lease)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    let status = w.wait().unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(9), "the supervisor SIGKILLs the stopped writer: {status:?}");
    eprintln!("stopped writer killed {:?} after the supervisor started", t0.elapsed());
    assert!(wait_for(10.0, || r.status(&hid).unwrap()["status"] == "orphaned"));
    assert_eq!(r.status(&hid).unwrap()["checkpoints"], 4, "the 5th checkpoint's transaction was rolled back");
    let (code, _, err) = dhp(&["work", root, "--runner", "w2", "recover", &hid], &lease);
    assert_eq!(code, 0, "{err}");
    assert_eq!(r.status(&hid).unwrap()["status"], "completed");
    kill(Pid::from_raw(sup.id() as i32), Signal::SIGTERM).unwrap();
    assert!(sup.wait().unwrap().success());
}
