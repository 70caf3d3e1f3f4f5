//! Adapter process groups. Every adapter runs as the leader of its own
//! process group, so that the runner can end it together with anything it
//! started. The live groups are registered here, so that an interrupted
//! runner (Ctrl-C, SIGTERM, SIGHUP) kills them before it exits: in their
//! own groups they no longer receive the terminal's signals themselves.

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use std::collections::BTreeSet;
use std::sync::Mutex;

static LIVE: Mutex<BTreeSet<u32>> = Mutex::new(BTreeSet::new());

fn live() -> std::sync::MutexGuard<'static, BTreeSet<u32>> {
    LIVE.lock().unwrap_or_else(|e| e.into_inner())
}

/// A group just started (its id is the leader's pid).
pub fn register(pgid: u32) {
    live().insert(pgid);
}

/// A group whose leader was reaped.
pub fn unregister(pgid: u32) {
    live().remove(&pgid);
}

/// SIGKILL every process of the group, and every descendant of its leader
/// that left the group (`setsid`, `setpgid`: a helper the adapter
/// started). Call it before reaping the leader: until then the id cannot
/// belong to anyone else.
pub fn kill(pgid: u32) {
    if let Ok(id) = i32::try_from(pgid) {
        // the tree first: once the leader dies its children are reparented
        let t = tree(pgid);
        let _ = killpg(Pid::from_raw(id), Signal::SIGKILL);
        kill_tree(&t);
    }
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
            let _ = nix::sys::signal::kill(Pid::from_raw(p), Signal::SIGKILL);
        }
    }
}

/// (parent id, start time) from `/proc/PID/stat`: `PID (comm) STATE PPID …`,
/// the start time the 22nd field; comm may hold spaces and parentheses.
fn stat_of(pid: i32) -> Option<(i32, u64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    Some((rest.get(1)?.parse().ok()?, rest.get(19)?.parse().ok()?))
}

/// The environment variable every adapter is started with: [`mark`].
/// A helper that double-forks leaves the adapter's group and tree (it is
/// reparented before the runner looks) but keeps the environment it
/// inherited; [`sweep`] finds it by that.
pub const MARK_VAR: &str = "DHP_CONFORM_RUN";

/// This runner's marker value (its pid and start time: no other runner's).
pub fn mark() -> &'static str {
    static MARK: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    MARK.get_or_init(|| {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        format!("{}-{nanos}", std::process::id())
    })
}

/// SIGKILL every process left in this run's cgroup ([`crate::cgroup`]),
/// and remove it; where no cgroup could be made, every process but this
/// one whose environment carries this runner's [`mark`] (a helper that
/// cleared its environment escapes that fallback), again until none is
/// left (bounded); how many.
pub fn sweep() -> usize {
    if let Ok(dir) = crate::cgroup::group() {
        let n = crate::cgroup::kill_all(dir, std::process::id() as i32);
        let _ = std::fs::remove_dir(dir);
        return n;
    }
    let want = format!("{MARK_VAR}={}", mark());
    let me = std::process::id() as i32;
    let mut killed: BTreeSet<i32> = BTreeSet::new();
    for _ in 0..20 {
        let mut found = false;
        for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
            let Some(p) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else { continue };
            if p == me {
                continue;
            }
            let Ok(env) = std::fs::read(format!("/proc/{p}/environ")) else { continue };
            if env.split(|b| *b == 0).any(|kv| kv == want.as_bytes()) && !zombie(p) {
                let _ = nix::sys::signal::kill(Pid::from_raw(p), Signal::SIGKILL);
                killed.insert(p);
                found = true;
            }
        }
        if !found {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    killed.len()
}

fn zombie(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit_once(')').map(|(_, r)| r.trim_start().starts_with(['Z', 'X'])))
        .unwrap_or(true)
}

/// On SIGINT, SIGTERM or SIGHUP: kill every live adapter group (and the
/// helpers that left it) and exit with 128 + the signal, as the default
/// action would have.
pub fn kill_all_on_signal() -> std::io::Result<()> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])?;
    std::thread::spawn(move || {
        if let Some(sig) = signals.forever().next() {
            for pgid in live().iter() {
                kill(*pgid);
            }
            sweep();
            std::process::exit(128 + sig);
        }
    });
    Ok(())
}
