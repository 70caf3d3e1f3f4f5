//! Descendants that outlive a round. Every child the harness starts
//! carries an environment marker ([`MARK_VAR`], [`mark`]): unique to this
//! harness process and the round's process directory. A worker's `setsid`
//! or double-forked helper leaves the harness's process groups but keeps
//! the environment it inherited, so a scan of `/proc` finds it where
//! `killpg` does not. What is found after the round's processes were ended
//! is killed and counted against the round (a survivor is a finding).
//!
//! A descendant that rewrites its own environment before exec escapes the
//! scan; the harness does not claim more than it can see.

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use std::path::Path;
use std::sync::OnceLock;

/// The environment variable every child of the harness is given.
pub const MARK_VAR: &str = "DHP_CHAOS_RUN";

/// One process found alive after its round ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Survivor {
    /// Its process id.
    pub pid: i32,
    /// Its command line (arguments joined by spaces), for people.
    pub cmdline: String,
}

/// This harness process's secret part of every marker.
fn token() -> &'static str {
    static TOKEN: OnceLock<String> = OnceLock::new();
    TOKEN.get_or_init(|| format!("{:032x}", rand::random::<u128>()))
}

/// The marker value for the children whose logs go to `logdir` (one per round).
pub fn mark(logdir: &Path) -> String {
    format!("{}:{}", token(), logdir.display())
}

/// Processes other than this one whose environment holds `MARK_VAR=value`
/// for a value `select` accepts (zombies excluded: they are already dead).
fn scan(select: &dyn Fn(&str) -> bool) -> Vec<Survivor> {
    let me = std::process::id() as i32;
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    let prefix = format!("{MARK_VAR}=");
    let mut out = Vec::new();
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else { continue };
        if pid == me || zombie(pid) {
            continue;
        }
        let Ok(env) = std::fs::read(format!("/proc/{pid}/environ")) else { continue };
        let marked = env
            .split(|b| *b == 0)
            .filter_map(|kv| std::str::from_utf8(kv).ok())
            .any(|kv| kv.strip_prefix(&prefix).is_some_and(select));
        if marked {
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let cmdline = String::from_utf8_lossy(&cmd).split('\0').collect::<Vec<_>>().join(" ").trim().to_string();
            out.push(Survivor { pid, cmdline });
        }
    }
    out
}

fn zombie(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit_once(')').map(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])))
        .unwrap_or(true)
}

/// Find and SIGKILL every process still carrying a marker `select` accepts,
/// again until none is left (one may fork while the scan runs; bounded).
fn sweep_where(select: &dyn Fn(&str) -> bool) -> Vec<Survivor> {
    let mut found: Vec<Survivor> = Vec::new();
    for _ in 0..20 {
        let now = scan(select);
        if now.is_empty() {
            break;
        }
        for s in now {
            let _ = kill(Pid::from_raw(s.pid), Signal::SIGCONT);
            let _ = kill(Pid::from_raw(s.pid), Signal::SIGKILL);
            if !found.iter().any(|f| f.pid == s.pid) {
                found.push(s);
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    found
}

/// End every process of the round whose children log to `logdir` that is
/// still alive (call after the round's own children were ended); returns them.
pub fn sweep(logdir: &Path) -> Vec<Survivor> {
    let want = mark(logdir);
    sweep_where(&|v| v == want)
}

/// End every marked process of this harness, any round (teardown).
pub fn sweep_all() {
    let prefix = format!("{}:", token());
    sweep_where(&|v| v.starts_with(&prefix));
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    #[test]
    fn a_setsid_grandchild_is_found_and_ended() {
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("pid");
        // the child leaves: new session, then exits; its grandchild lives on
        let script =
            format!("setsid -f sh -c 'echo $$ > {}; exec sleep 60' </dev/null >/dev/null 2>&1", pidfile.display());
        let st = Command::new("sh").arg("-c").arg(&script).env(MARK_VAR, mark(dir.path())).status().unwrap();
        assert!(st.success());
        let mut pid = None;
        for _ in 0..100 {
            pid = std::fs::read_to_string(&pidfile).ok().and_then(|s| s.trim().parse::<i32>().ok());
            if pid.is_some() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let pid = pid.expect("the grandchild wrote its pid");
        // another round's marker is not this round's
        assert!(sweep(&dir.path().join("other")).is_empty());
        let found = sweep(dir.path());
        assert_eq!(found.iter().map(|s| s.pid).collect::<Vec<_>>(), vec![pid], "{found:?}");
        assert!(found[0].cmdline.contains("sleep 60"), "{found:?}");
        std::thread::sleep(std::time::Duration::from_millis(100));
        assert!(zombie(pid), "pid {pid} still runs");
        assert!(sweep(dir.path()).is_empty());
    }
}
