//! The run's own cgroup (v1 freezer hierarchy): every adapter joins it
//! before it execs, and no helper leaves it by `setsid`, a double fork or
//! clearing its environment. At the end it is frozen (no fork races the
//! kill), every member SIGKILLed, thawed so the kills land, and removed.
//! (dhp-chaos has the same group per round, `dhp_chaos::cgroup`; one
//! process-group type for both is issue 46's step.)

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Where the runner makes its group.
pub const FREEZER: &str = "/sys/fs/cgroup/freezer";

/// This run's group directory, made on first use; `Err(why)` where no
/// cgroup v1 freezer hierarchy is writable (not root, no such mount).
pub fn group() -> Result<&'static Path, &'static str> {
    static G: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let g = G.get_or_init(|| {
        let dir = Path::new(FREEZER).join("dhp-conform").join(crate::pgroup::mark());
        std::fs::create_dir_all(&dir)
            .and_then(|()| std::fs::read_to_string(dir.join("cgroup.procs")).map(|_| ()))
            .map(|()| dir)
            .map_err(|e| format!("no writable cgroup v1 freezer at {FREEZER}: {e}"))
    });
    g.as_deref().map_err(String::as_str)
}

fn members(dir: &Path) -> Vec<i32> {
    let text = std::fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
    text.lines().filter_map(|l| l.trim().parse().ok()).collect()
}

fn set_state(dir: &Path, state: &str) {
    let _ = std::fs::write(dir.join("freezer.state"), state);
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(1) {
        if std::fs::read_to_string(dir.join("freezer.state")).unwrap_or_default().trim() == state {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Freeze the group, SIGKILL every member but `except`, thaw, until none
/// is left (bounded); how many were killed.
pub fn kill_all(dir: &Path, except: i32) -> usize {
    let mut killed: Vec<i32> = Vec::new();
    for _ in 0..20 {
        let now: Vec<i32> = members(dir).into_iter().filter(|p| *p != except).collect();
        if now.is_empty() {
            break;
        }
        set_state(dir, "FROZEN");
        for p in members(dir).into_iter().filter(|p| *p != except) {
            let _ = kill(Pid::from_raw(p), Signal::SIGKILL);
            if !killed.contains(&p) {
                killed.push(p);
            }
        }
        set_state(dir, "THAWED");
        let t = Instant::now();
        while members(dir).iter().any(|p| *p != except) && t.elapsed() < Duration::from_millis(500) {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    killed.len()
}
