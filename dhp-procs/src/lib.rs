//! # dhp-procs — ending what the judged started
//!
//! The judges (dhp-conform, dhp-chaos) and the tests start programs that
//! may start others: a helper that leaves its process group (`setsid`), is
//! double-forked (reparented before anyone looks) or clears its
//! environment. One home for the three nets that catch them:
//!
//! - process groups and trees ([`tree`], [`kill_tree`], [`kill_group`],
//!   the test guard [`ProcessGroup`]), read from `/proc` with each
//!   process's start time, so a reused pid is never hit;
//! - a harness-owned cgroup ([`cgroup::Group`]), which no descendant can
//!   leave;
//! - an environment marker ([`marker`]), where no cgroup can be made.
//!
//! It links no implementation and nothing but `nix`.

pub mod cgroup;
mod group;
pub mod marker;

pub use group::ProcessGroup;

use nix::sys::signal::{kill, killpg, Signal};
use nix::unistd::Pid;

/// (parent id, start time in clock ticks) from `/proc/PID/stat`:
/// `PID (comm) STATE PPID …`, the start time the 22nd field; comm may hold
/// spaces and parentheses.
pub fn stat_of(pid: i32) -> Option<(i32, u64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    Some((rest.get(1)?.parse().ok()?, rest.get(19)?.parse().ok()?))
}

/// Is `pid` dead already (a zombie, or gone)?
pub fn zombie(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit_once(')').map(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])))
        .unwrap_or(true)
}

/// Is `pid` a live process (not a zombie)?
pub fn alive(pid: u32) -> bool {
    i32::try_from(pid).is_ok_and(|p| !zombie(p))
}

/// A process's command line, arguments joined by spaces (for people).
pub fn cmdline(pid: i32) -> String {
    let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let line = String::from_utf8_lossy(&cmd).split('\0').collect::<Vec<_>>().join(" ").trim().to_string();
    if !line.is_empty() {
        return line;
    }
    // empty while it execs: its name, as ps shows it
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
    format!("[{}]", comm.trim())
}

/// The processes descending from a live leader, each with its start time
/// (so that [`kill_tree`] never hits a reused id). Take it while the
/// leader runs: once it exits, its children belong to someone else.
pub fn tree(leader: u32) -> Vec<(i32, u64)> {
    let Ok(leader) = i32::try_from(leader) else { return Vec::new() };
    let mut all = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(p) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else { continue };
        if let Some((ppid, start)) = stat_of(p) {
            all.push((p, ppid, start));
        }
    }
    let mut out: Vec<(i32, u64)> = Vec::new();
    let mut frontier = vec![leader];
    while let Some(q) = frontier.pop() {
        for &(p, pp, start) in &all {
            if pp == q && !out.iter().any(|o| o.0 == p) {
                out.push((p, start));
                frontier.push(p);
            }
        }
    }
    out
}

/// SIGKILL what is left of a [`tree`] (a process whose id now belongs to
/// a process started later is left alone).
pub fn kill_tree(t: &[(i32, u64)]) {
    for &(p, start) in t {
        if stat_of(p).is_some_and(|(_, s)| s == start) {
            let _ = kill(Pid::from_raw(p), Signal::SIGKILL);
        }
    }
}

/// SIGKILL every process of the group `pgid`, and every descendant of its
/// leader that left the group (`setsid`, `setpgid`). A stopped member is
/// continued first, so the kill lands at once. Call it before reaping the
/// leader: until then the id cannot belong to anyone else.
pub fn kill_group(pgid: u32) {
    let Ok(id) = i32::try_from(pgid) else { return };
    // the tree first: once the leader dies its children are reparented
    let t = tree(pgid);
    let _ = killpg(Pid::from_raw(id), Signal::SIGCONT);
    let _ = killpg(Pid::from_raw(id), Signal::SIGKILL);
    kill_tree(&t);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;
    use std::time::Duration;

    fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
        for _ in 0..500 {
            if cond() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("timed out waiting until {what}");
    }

    #[test]
    fn kill_group_ends_a_grandchild_that_left_the_group() {
        use std::os::unix::process::CommandExt;
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("pid");
        // the grandchild leaves the group (setsid) but is still in the tree
        let script = format!("setsid sh -c 'echo $$ > {}; exec sleep 60' & wait", pidfile.display());
        let mut child = Command::new("sh").arg("-c").arg(script).process_group(0).spawn().unwrap();
        wait_for("the grandchild's pid", || std::fs::read_to_string(&pidfile).is_ok_and(|s| s.ends_with('\n')));
        let grandchild: i32 = std::fs::read_to_string(&pidfile).unwrap().trim().parse().unwrap();
        wait_for("the grandchild runs sleep", || cmdline(grandchild).contains("sleep 60"));
        kill_group(child.id());
        let _ = child.wait();
        wait_for("the grandchild is gone", || zombie(grandchild));
    }

    #[test]
    fn kill_tree_leaves_a_reused_pid_alone() {
        let mut c = Command::new("sleep").arg("60").spawn().unwrap();
        let pid = c.id() as i32;
        let (_, start) = stat_of(pid).unwrap();
        // a recorded start time that is not this process's: another process had the id
        kill_tree(&[(pid, start + 1)]);
        std::thread::sleep(Duration::from_millis(50));
        assert!(alive(c.id()));
        kill_tree(&[(pid, start)]);
        let st = c.wait().unwrap();
        assert!(!st.success());
    }

    #[test]
    fn stat_of_reads_a_comm_with_spaces_and_parentheses() {
        let dir = tempfile::tempdir().unwrap();
        let odd = dir.path().join("a (b) c");
        std::fs::copy("/bin/sleep", &odd).unwrap();
        let mut c = Command::new(&odd).arg("60").spawn().unwrap();
        let (ppid, _) = stat_of(c.id() as i32).unwrap();
        assert_eq!(ppid, std::process::id() as i32);
        c.kill().unwrap();
        c.wait().unwrap();
    }
}
