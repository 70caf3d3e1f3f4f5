//! A worker rides through a planned switchover under a real failover
//! manager (scripts/pg-auto.sh: pg_auto_failover, a monitor and three nodes,
//! each in its own network namespace; the multi-host URL with
//! `target_session_attrs=read-write`). The old primary terminates its
//! connections and turns standby; `dhp work` reconnects to the new primary,
//! retakes its liveness lock, finds its lease and fence unchanged and goes
//! on: it is never orphaned, its fence and attempt stay the same, and the
//! acknowledged checkpoints pause for about as long as the switchover keeps
//! every host from taking writes (measured from the worker's history and
//! printed). The supervisor goes on too. Needs root (namespaces), as CI runs.
use crate::common::*;
use crate::pg_support::with_schema;
use dhp_core::{Config, Runner};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

fn script() -> PathBuf {
    dhp_testkit::checkout().join("scripts/pg-auto.sh")
}

/// Stops the formation (and every process in its namespaces) when dropped.
struct Formation(String);

impl Drop for Formation {
    fn drop(&mut self) {
        let _ = Command::new("bash").arg(script()).args(["stop", &self.0]).status();
    }
}

/// Kills a child when dropped (a failed assertion leaves none running).
struct Kill(Child);

impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn unix_now() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0)
}

fn history(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
}

/// When each acknowledged checkpoint was acknowledged (the worker's history).
fn acks(path: &Path) -> Vec<f64> {
    let h = history(path);
    h.iter().filter(|e| e["op"] == "checkpoint" && e["type"] == "ok").filter_map(|e| e["t"].as_f64()).collect()
}

fn wait_for(secs: f64, mut f: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + Duration::from_secs_f64(secs);
    while Instant::now() < end {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

#[test]
fn a_worker_rides_through_a_pg_auto_failover_switchover_without_being_orphaned() {
    let uid = Command::new("id").arg("-u").output().expect("id -u");
    assert_eq!(
        String::from_utf8_lossy(&uid.stdout).trim(),
        "0",
        "pg-auto.sh makes network namespaces: run as root (CI does)"
    );
    let me = std::process::id().to_string();
    let o = Command::new("bash").arg(script()).args(["start", "--watch", &me]).output().expect("running pg-auto.sh");
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.success(), "pg-auto.sh start failed:\n{text}\n{}", String::from_utf8_lossy(&o.stderr));
    let (dir, url) = text.lines().last().and_then(|l| l.split_once(' ')).expect("a `DIR URL` line");
    let formation = Formation(dir.to_string());
    let url = with_schema(url, "ride");

    let (code, v, err) = dhp(&["dispatch", &url, "--census", "2000000,2400000,100"], &[]);
    assert_eq!(code, 0, "{err}");
    let hid = v["hid"].as_str().unwrap().to_string();
    // a 5 s lease: longer than a switchover keeps writes away (about 2 s)
    let lease = [("DHP_LEASE_INTERVAL_S", "1"), ("DHP_LEASE_MAX_MISSED", "5")];
    let logs = tempfile::tempdir().unwrap();
    let (sup_hist, sup_err) = (logs.path().join("sup.hist"), logs.path().join("sup.err"));
    let (w_hist, w_err) = (logs.path().join("w.hist"), logs.path().join("w.err"));
    let file = |p: &Path| std::fs::File::create(p).unwrap();
    let mut sup = Kill(
        Command::new(dhp_bin())
            .args(["supervisor", &url, "sup", "300", "--history"])
            .arg(&sup_hist)
            .envs(lease)
            .stdout(Stdio::null())
            .stderr(file(&sup_err))
            .spawn()
            .unwrap(),
    );
    let mut worker = Kill(
        Command::new(dhp_bin())
            .args(["work", &url, "--runner", "w1", "claim", &hid, "--pace", "0.02", "--history"])
            .arg(&w_hist)
            .envs(lease)
            .stdout(Stdio::null())
            .stderr(file(&w_err))
            .spawn()
            .unwrap(),
    );
    let logs_of = || {
        let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
        format!("worker stderr:\n{}\nsupervisor stderr (tail):\n{}", read(&w_err), {
            let s = read(&sup_err);
            s.lines().rev().take(20).collect::<Vec<_>>().join("\n")
        })
    };
    assert!(wait_for(60.0, || acks(&w_hist).len() >= 50), "the worker checkpoints\n{}", logs_of());
    let before = Runner::open(&url, "observer", Config::default()).unwrap().status(&hid).unwrap();

    let switch_start = unix_now();
    let sw = Command::new("bash").arg(script()).args(["switchover", &formation.0]).output().expect("switchover");
    let switch_end = unix_now();
    assert!(sw.status.success(), "switchover failed: {}", String::from_utf8_lossy(&sw.stderr));

    // Still the same process, checkpointing on the new primary.
    let after_switch = |t: f64| acks(&w_hist).iter().filter(|&&a| a > t).count();
    assert!(
        wait_for(30.0, || after_switch(switch_end) >= 100 || worker.0.try_wait().ok().flatten().is_some()),
        "no progress after the switchover\n{}",
        logs_of()
    );
    assert!(worker.0.try_wait().unwrap().is_none(), "the worker rode through, it did not exit\n{}", logs_of());
    // The supervisor reconnected too (it keeps or retakes leadership by the usual rules).
    assert!(sup.0.try_wait().unwrap().is_none(), "the supervisor rode through too\n{}", logs_of());
    let werr = std::fs::read_to_string(&w_err).unwrap_or_default();
    assert!(werr.contains("reconnected to the database"), "the switchover did break its connection\n{werr}");

    let now = Runner::open(&url, "observer", Config::default()).unwrap().status(&hid).unwrap();
    assert_eq!(now["status"], "running", "{now}");
    for k in ["owner", "fence", "attempt"] {
        assert_eq!(now[k], before[k], "{k} unchanged: {before} → {now}");
    }
    let orphans: Vec<Value> = history(&sup_hist)
        .into_iter()
        .filter(|e| e["op"] == "supervise" && e["action"].as_str().is_some_and(|a| a.contains("orphan")))
        .collect();
    assert!(orphans.is_empty(), "the riding worker was orphaned: {orphans:?}");

    // The pause: the longest wait between two acknowledgements around the switchover.
    let t = acks(&w_hist);
    let pause =
        t.windows(2).filter(|w| w[1] > switch_start && w[0] < switch_end).map(|w| w[1] - w[0]).fold(0.0, f64::max);
    let switch_s = switch_end - switch_start;
    println!(
        "switchover (pg_autoctl perform switchover --wait) {switch_s:.2} s; acknowledged-checkpoint pause {pause:.2} s"
    );
    assert!(pause > 0.2, "the switchover paused the checkpoints ({pause:.2} s): it did happen under the worker");
    assert!(pause < switch_s + 1.0, "pause {pause:.2} s, switchover {switch_s:.2} s");
}
