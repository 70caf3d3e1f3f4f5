//! A harness-owned cgroup (v1 freezer hierarchy) per round: every child of
//! the round is put in it before it execs, and a process cannot leave its
//! cgroup by `setsid`, a double fork or clearing its environment (it would
//! need to write another cgroup's `cgroup.procs`). At the end the group is
//! frozen (no fork can race the kill), every member SIGKILLed, thawed so
//! the kills land, and removed.

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Where the harness makes its groups (cgroup v1, the freezer controller).
pub const FREEZER: &str = "/sys/fs/cgroup/freezer";

/// One harness-owned cgroup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cgroup {
    path: PathBuf,
}

impl Cgroup {
    /// Make (or reuse) the group `FREEZER/<rel>`.
    ///
    /// # Errors
    ///
    /// No freezer hierarchy, or it is not writable (not root).
    pub fn create(rel: &Path) -> std::io::Result<Cgroup> {
        let path = Path::new(FREEZER).join(rel);
        std::fs::create_dir_all(&path)?;
        // the group must be usable: a read of its members fails on a plain directory
        std::fs::read_to_string(path.join("cgroup.procs"))?;
        Ok(Cgroup { path })
    }

    /// Its directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file a process writes `0` to, to join the group.
    pub fn procs_file(&self) -> PathBuf {
        self.path.join("cgroup.procs")
    }

    /// Its members now (their pids; dead ones have left).
    pub fn members(&self) -> Vec<i32> {
        std::fs::read_to_string(self.procs_file())
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect()
    }

    fn set_state(&self, state: &str) {
        let _ = std::fs::write(self.path.join("freezer.state"), state);
    }

    fn wait_state(&self, state: &str, within: Duration) {
        let t = Instant::now();
        while t.elapsed() < within {
            let now = std::fs::read_to_string(self.path.join("freezer.state")).unwrap_or_default();
            if now.trim() == state {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Freeze, SIGKILL every member, thaw, until the group is empty
    /// (bounded); every member killed, with its command line (read while
    /// frozen, before the kill).
    pub fn kill_all(&self) -> Vec<(i32, String)> {
        let mut killed: Vec<(i32, String)> = Vec::new();
        for _ in 0..20 {
            if self.members().is_empty() {
                break;
            }
            self.set_state("FROZEN");
            self.wait_state("FROZEN", Duration::from_secs(1));
            for p in self.members() {
                let cmd = std::fs::read(format!("/proc/{p}/cmdline")).unwrap_or_default();
                let cmd = String::from_utf8_lossy(&cmd).split('\0').collect::<Vec<_>>().join(" ").trim().to_string();
                let _ = kill(Pid::from_raw(p), Signal::SIGKILL);
                if !killed.iter().any(|(k, _)| *k == p) {
                    killed.push((p, cmd));
                }
            }
            // a frozen task dies once thawed
            self.set_state("THAWED");
            self.wait_state("THAWED", Duration::from_secs(1));
            let t = Instant::now();
            while !self.members().is_empty() && t.elapsed() < Duration::from_millis(500) {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        killed
    }

    /// Remove the (empty) group; members left keep it (a failure is ignored).
    pub fn remove(&self) {
        let _ = std::fs::remove_dir(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    #[test]
    fn a_member_that_clears_its_environment_and_leaves_its_session_is_killed() {
        let rel = PathBuf::from(format!("dhp-chaos-unit-{}", std::process::id()));
        let g = Cgroup::create(&rel).expect("a cgroup v1 freezer hierarchy, as root");
        let pidfile = tempfile::NamedTempFile::new().unwrap();
        // join, then double-fork a setsid child with an empty environment
        let script = format!(
            "echo 0 > {} && (setsid env -i sh -c 'echo $$ > {}; exec sleep 60' </dev/null >/dev/null 2>&1 &)",
            g.procs_file().display(),
            pidfile.path().display()
        );
        assert!(Command::new("sh").arg("-c").arg(&script).status().unwrap().success());
        let mut pid = None;
        for _ in 0..100 {
            pid = std::fs::read_to_string(pidfile.path()).ok().and_then(|s| s.trim().parse::<i32>().ok());
            if pid.is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let pid = pid.expect("the grandchild wrote its pid");
        assert_eq!(g.members(), vec![pid]);
        let killed = g.kill_all();
        assert_eq!(killed.iter().map(|k| k.0).collect::<Vec<_>>(), vec![pid]);
        assert!(killed[0].1.contains("sleep 60"), "{killed:?}");
        assert!(g.members().is_empty());
        g.remove();
        assert!(!g.path().exists());
    }
}
