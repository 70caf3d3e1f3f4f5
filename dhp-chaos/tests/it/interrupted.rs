//! SIGINT or SIGTERM to a running `dhp-chaos` tears the run down before it
//! exits (130 / 143): no worker, supervisor or transport server of the run
//! survives — they run in process groups of their own, so a Ctrl-C at the
//! terminal never reached them — and with `--hosts` no network namespace,
//! bridge or veth of the run is left. On SQLite, on PostgreSQL, and with
//! `--hosts`.
use crate::common::*;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn histories(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() && !p.is_symlink() {
            histories(&p, out);
        } else if p.file_name().is_some_and(|n| n == "history.jsonl" || n.to_string_lossy().ends_with("harness.jsonl"))
        {
            out.push(p);
        }
    }
}

/// The pids of every process the run spawned, from its histories.
fn spawned(out: &Path) -> Vec<i32> {
    let mut files = Vec::new();
    histories(out, &mut files);
    let mut pids = Vec::new();
    for f in files {
        for line in std::fs::read_to_string(f).unwrap_or_default().lines() {
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(line) {
                if let Some(p) = v["spawned_pid"].as_i64() {
                    pids.push(p as i32);
                }
            }
        }
    }
    pids
}

/// Alive: in /proc and not a zombie.
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit_once(')').map(|(_, r)| !r.trim_start().starts_with('Z')))
        .unwrap_or(false)
}

/// Start a long round, wait until `want` processes were spawned, send
/// `sig`; the exit code and the pids the run had spawned.
fn interrupt(name: &str, args: &[&str], want: usize, sig: Signal) -> (i32, u32, Vec<i32>, PathBuf) {
    let out = std::env::temp_dir().join("dhp-chaos-tests").join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let mut child = std::process::Command::new(chaos_bin())
        .args(args)
        .args(["--seed", "11", "--chunks", "3000", "--fault-seconds", "120", "--quiet", "--dhp"])
        .arg(dhp_bin())
        .arg("--out")
        .arg(&out)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let end = Instant::now() + Duration::from_secs(120);
    while spawned(&out).len() < want {
        assert!(Instant::now() < end, "{name}: the round never got going");
        assert!(child.try_wait().unwrap().is_none(), "{name}: dhp-chaos ended before the signal");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    let harness = child.id();
    kill(Pid::from_raw(harness as i32), sig).unwrap();
    let end = Instant::now() + Duration::from_secs(60);
    let code = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st.code().unwrap_or(-1);
        }
        assert!(Instant::now() < end, "{name}: dhp-chaos did not exit after {sig}");
        std::thread::sleep(Duration::from_millis(20));
    };
    (code, harness, spawned(&out), out)
}

fn assert_none_alive(name: &str, pids: &[i32]) {
    // SIGKILLed before the exit; give init a moment to reap the orphans
    let end = Instant::now() + Duration::from_secs(3);
    loop {
        let left: Vec<i32> = pids.iter().copied().filter(|&p| alive(p)).collect();
        if left.is_empty() {
            return;
        }
        if Instant::now() > end {
            for &p in &left {
                let _ = kill(Pid::from_raw(p), Signal::SIGKILL);
            }
            panic!("{name}: children of the run survived it: {left:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn sigint_ends_every_child_of_a_sqlite_round() {
    let (code, _, pids, _) = interrupt("int-sqlite", &["--handoffs", "3"], 5, Signal::SIGINT);
    assert_eq!(code, 130);
    assert!(pids.len() >= 5, "{pids:?}");
    assert_none_alive("sqlite", &pids);
}

#[test]
fn sigterm_ends_every_child_of_a_postgres_round() {
    let url = dhp_kit::pg_url();
    let (code, _, pids, _) = interrupt("term-pg", &["--handoffs", "2", "--store", &url], 4, Signal::SIGTERM);
    assert_eq!(code, 143);
    assert_none_alive("postgres", &pids);
}

#[test]
fn sigterm_ends_every_child_namespace_and_link_of_a_hosts_round() {
    let args = ["--hosts", "2", "--handoffs", "2", "--nemesis", "kill,partition"];
    let (code, harness, pids, _) = interrupt("term-hosts", &args, 8, Signal::SIGTERM);
    assert_eq!(code, 143);
    assert_none_alive("hosts", &pids);
    let ns =
        String::from_utf8_lossy(&std::process::Command::new("ip").args(["netns", "list"]).output().unwrap().stdout)
            .into_owned();
    assert!(!ns.contains(&format!("dhpchaos-{harness}-")), "namespaces left:\n{ns}");
    let links =
        String::from_utf8_lossy(&std::process::Command::new("ip").args(["-o", "link"]).output().unwrap().stdout)
            .into_owned();
    for prefix in [format!("dhpc{harness}"), format!("dv{harness}")] {
        assert!(!links.contains(&prefix), "links {prefix}* left:\n{links}");
    }
}
