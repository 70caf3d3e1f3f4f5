//! A leader stopped inside its orphan transaction until its term ran out
//! must not commit that orphan when woken (no other supervisor could take
//! over meanwhile — the transaction holds the write lock — but the orphan
//! would be a supervisor write after its term, §7.1): it rolls back, takes
//! a term again, and only then orphans. Seen from the store audit (the
//! harness's own record): a leadership write after the old term's end comes
//! before the orphan. The mutant without dhp-core's commit-time re-check
//! commits the orphan first.
use crate::common::{chaos_bin, dhp_bin};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde_json::Value;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn run(program: &std::path::Path, args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String) {
    let o = Command::new(program).args(args).envs(env.iter().copied()).output().unwrap();
    (o.status.code(), String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr))
}

fn stopped(pid: u32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    stat.rsplit_once(") ").is_some_and(|(_, rest)| rest.starts_with('T'))
}

#[test]
fn a_leader_woken_after_its_term_retakes_it_before_the_orphan_commits() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let s = store.to_str().unwrap();
    let (code, out) = run(&dhp_bin(), &["--json", "dispatch", "--create", s, "--census", "1000,31000,100"], &[]);
    assert_eq!(code, Some(0), "{out}");
    let hid = serde_json::from_str::<Value>(out.lines().next().unwrap()).unwrap()["hid"].as_str().unwrap().to_string();
    let (code, out) = run(&chaos_bin(), &["audit", "install", s], &[]);
    assert_eq!(code, Some(0), "{out}");
    // One checkpoint, then the worker exits holding the handoff.
    let lease = [("DHP_LEASE_INTERVAL_S", "0.3"), ("DHP_LEASE_MAX_MISSED", "2")];
    let (code, out) = run(&dhp_bin(), &["work", s, "--runner", "w1", "claim", &hid, "--stop-after", "1"], &lease);
    assert_eq!(code, Some(3), "{out}");
    // The supervisor stops inside its first orphan transaction.
    let mut sup = Command::new(dhp_bin())
        .args(["supervisor", s, "sup", "60"])
        .envs(lease)
        .env("DHP_SUPERVISOR_SCAN_S", "0.1")
        .env("DHP_LEADER_TTL_S", "0.5")
        .env("DHP_FAILPOINTS", "orphan.in_tx=stop@1")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let guard = scopeguard(sup.id());
    let end = Instant::now() + Duration::from_secs(20);
    while !stopped(sup.id()) {
        assert!(Instant::now() < end, "the supervisor never stopped in its orphan transaction");
        std::thread::sleep(Duration::from_millis(5));
    }
    let db = rusqlite::Connection::open(store.join("dhp.sqlite3")).unwrap();
    let term_end: f64 = db.query_row("SELECT expires_at FROM leadership WHERE id=1", [], |r| r.get(0)).unwrap();
    while dhp_chaos::hist::now() < term_end + 0.3 {
        std::thread::sleep(Duration::from_millis(20));
    }
    kill(Pid::from_raw(sup.id() as i32), Signal::SIGCONT).unwrap();
    let orphaned = || {
        db.query_row("SELECT holder FROM ownership WHERE hid=?1", [&hid], |r| r.get::<_, String>(0))
            .is_ok_and(|h| h == "__orphaned__")
    };
    let end = Instant::now() + Duration::from_secs(20);
    while !orphaned() {
        assert!(Instant::now() < end, "never orphaned after the supervisor was woken");
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(guard);
    let _ = sup.kill();
    let _ = sup.wait();
    let (code, text) = run(&chaos_bin(), &["audit", "export", s], &[]);
    assert_eq!(code, Some(0), "{text}");
    let changes: Vec<Value> = text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let orphan_seq = changes
        .iter()
        .find(|c| c["table"] == "ownership" && c["new"]["holder"] == "__orphaned__")
        .and_then(|c| c["seq"].as_i64())
        .expect("the orphan in the audit");
    let retaken = changes.iter().any(|c| {
        c["table"] == "leadership" && c["seq"].as_i64() < Some(orphan_seq) && c["at"].as_f64() > Some(term_end)
    });
    assert!(retaken, "the orphan (audit seq {orphan_seq}) committed before a new term after {term_end}: {text}");
}

/// SIGCONT and SIGKILL the supervisor however the test ends.
fn scopeguard(pid: u32) -> impl Drop {
    struct G(i32);
    impl Drop for G {
        fn drop(&mut self) {
            let _ = kill(Pid::from_raw(self.0), Signal::SIGCONT);
            let _ = kill(Pid::from_raw(self.0), Signal::SIGKILL);
        }
    }
    G(pid as i32)
}
