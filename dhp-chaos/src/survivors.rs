//! Descendants that outlive a round. Every child the harness starts joins
//! the round's own cgroup before it execs ([`join`], [`crate::cgroup`]): a
//! worker's `setsid`, double-forked or `env -i` helper leaves the harness's
//! process groups, not the cgroup. What is in it after the round's
//! processes were ended is listed, killed and counted against the round (a
//! survivor is a finding).
//!
//! A second net, and the only one where no cgroup can be made (no cgroup2
//! hierarchy, not root; said on stderr once): an environment marker
//! ([`MARK_VAR`], [`mark`]) unique to this harness process and the round's
//! process directory, found by a scan of `/proc`. A descendant that clears
//! its environment escapes the marker; the harness does not claim more than
//! it can see.

use crate::cgroup::Group;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};

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

/// The groups of the rounds not swept yet, by process directory.
#[derive(Default)]
struct Groups {
    by_logdir: HashMap<PathBuf, Group>,
    /// Why no group could be made (then every round uses the marker only).
    none: Option<String>,
}

fn groups() -> MutexGuard<'static, Groups> {
    static G: OnceLock<Mutex<Groups>> = OnceLock::new();
    G.get_or_init(Mutex::default).lock().unwrap_or_else(PoisonError::into_inner)
}

/// This harness's directory in the cgroup hierarchy.
fn base() -> PathBuf {
    PathBuf::from("dhp-chaos").join(format!("{}-{}", std::process::id(), token()))
}

/// End what an earlier harness that did not finish (SIGKILLed, or
/// interrupted while its children were still zombies) left in its groups
/// under `root` (`<mount>/dhp-chaos`): a directory `<pid>-<token>` whose
/// pid no longer runs is killed and removed. A pid that runs (maybe
/// reused) is left alone. Returns the processes ended.
fn end_stale(root: &Path) -> Vec<Survivor> {
    let mut found = Vec::new();
    let Ok(dir) = std::fs::read_dir(root) else { return found };
    for e in dir.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = name.split_once('-').and_then(|(p, _)| p.parse::<u32>().ok()) else { continue };
        if pid == std::process::id() || Path::new(&format!("/proc/{pid}")).exists() || !e.path().is_dir() {
            continue;
        }
        let subs = std::fs::read_dir(e.path()).map(|d| d.flatten().map(|s| s.path()).collect::<Vec<_>>());
        for sub in subs.unwrap_or_default().into_iter().filter(|p| p.is_dir()) {
            if let Ok(c) = Group::open(&sub) {
                found.extend(sweep_group(&c));
            }
        }
        let _ = std::fs::remove_dir(e.path());
    }
    found
}

/// Make `cmd`'s child join the cgroup of the round whose children log to
/// `logdir` before it execs (the group is made on first use); false where
/// no cgroup can be made (the marker is all: said on stderr once).
pub fn join(cmd: &mut Command, logdir: &Path) -> bool {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let mut g = groups();
    if let Some(c) = g.by_logdir.get(logdir) {
        c.join_on_exec(cmd);
        return true;
    }
    if g.none.is_some() {
        return false;
    }
    let n = NEXT.fetch_add(1, Ordering::SeqCst);
    if n == 0 {
        if let Some(m) = crate::cgroup::unified_mount() {
            let stale = end_stale(&m.join("dhp-chaos"));
            if !stale.is_empty() {
                eprintln!(
                    "dhp-chaos: ended {} process(es) an earlier run that did not finish left behind: {}",
                    stale.len(),
                    stale.iter().map(|s| format!("{} ({})", s.pid, s.cmdline)).collect::<Vec<_>>().join(", ")
                );
            }
        }
    }
    match Group::create(&base().join(n.to_string())) {
        Ok(c) => {
            c.join_on_exec(cmd);
            g.by_logdir.insert(logdir.to_path_buf(), c);
            true
        }
        Err(why) => {
            eprintln!(
                "dhp-chaos: no cgroup for the round's processes ({why}): descendants are tracked by an environment \
                 marker only, and one that clears its environment escapes the survivor sweep"
            );
            g.none = Some(why);
            false
        }
    }
}

/// How descendants are tracked, for the harness's record: `cgroup`, or
/// `environment marker only (<why no cgroup>)`.
pub fn tracked_by() -> String {
    match &groups().none {
        None => "cgroup".into(),
        Some(why) => format!("environment marker only ({why})"),
    }
}

/// Find and SIGKILL every process still carrying a marker `select` accepts.
fn sweep_where(select: &dyn Fn(&str) -> bool) -> Vec<Survivor> {
    dhp_procs::marker::sweep(MARK_VAR, select).into_iter().map(|(pid, cmdline)| Survivor { pid, cmdline }).collect()
}

/// Kill every member of `c` and remove it; the members.
fn sweep_group(c: &Group) -> Vec<Survivor> {
    let found = c.kill_all().into_iter().map(|(pid, cmdline)| Survivor { pid, cmdline }).collect();
    c.remove();
    found
}

/// End every process of the round whose children log to `logdir` that is
/// still alive — its cgroup's members, then any process still carrying its
/// marker (call after the round's own children were ended and reaped);
/// returns them.
pub fn sweep(logdir: &Path) -> Vec<Survivor> {
    let group = groups().by_logdir.remove(logdir);
    let mut found = group.as_ref().map(sweep_group).unwrap_or_default();
    if group.is_some() {
        let g = groups();
        // this harness's directory too, once its last group is gone (under
        // the lock that makes groups; it fails while another remains)
        if let (true, Some(m)) = (g.by_logdir.is_empty(), crate::cgroup::unified_mount()) {
            let _ = std::fs::remove_dir(m.join(base()));
        }
    }
    let want = mark(logdir);
    for s in sweep_where(&|v| v == want) {
        if !found.iter().any(|f| f.pid == s.pid) {
            found.push(s);
        }
    }
    found
}

/// End every tracked process of this harness, any round (teardown).
pub fn sweep_all() {
    let all: Vec<Group> = groups().by_logdir.drain().map(|(_, c)| c).collect();
    for c in &all {
        sweep_group(c);
    }
    if let Some(m) = crate::cgroup::unified_mount() {
        let _ = std::fs::remove_dir(m.join(base()));
    }
    let prefix = format!("{}:", token());
    sweep_where(&|v| v.starts_with(&prefix));
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    #[test]
    fn a_dead_harness_group_is_ended_and_removed() {
        let mnt = crate::cgroup::unified_mount().expect("a cgroup2 hierarchy");
        let root = mnt.join(format!("dhp-chaos-stale-unit-{}", std::process::id()));
        // a pid that ran and was reaped: its harness is gone
        let mut dead = Command::new("true").spawn().unwrap();
        let dead_pid = dead.id();
        dead.wait().unwrap();
        let stale = root.join(format!("{dead_pid}-x"));
        let g = Group::create(stale.join("0").strip_prefix(&mnt).unwrap()).unwrap();
        let mut cmd = Command::new("sleep");
        cmd.arg("60");
        g.join_on_exec(&mut cmd);
        let mut child = cmd.spawn().unwrap();
        // a live harness's group (this process) is left alone
        let mine = root.join(format!("{}-y", std::process::id()));
        std::fs::create_dir_all(&mine).unwrap();
        let found = end_stale(&root);
        let _ = child.wait();
        assert_eq!(found.iter().map(|s| s.pid as u32).collect::<Vec<_>>(), vec![child.id()], "{found:?}");
        assert!(!stale.exists() && mine.exists());
        std::fs::remove_dir(&mine).unwrap();
        std::fs::remove_dir(&root).unwrap();
    }

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
        assert!(dhp_procs::zombie(pid), "pid {pid} still runs");
        assert!(sweep(dir.path()).is_empty());
    }
}
