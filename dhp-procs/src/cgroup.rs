//! A harness-owned cgroup (the unified, v2 hierarchy): dhp-chaos makes one
//! per round, dhp-conform one per run. Every child joins it between fork
//! and exec ([`Group::join_on_exec`]), and a process cannot leave its
//! cgroup by `setsid`, a double fork or an empty environment (it would
//! have to write another group's `cgroup.procs`). At the end what is still
//! in it is listed, then ended at once by `cgroup.kill` (which also takes a
//! child forked while the kill runs), and the group removed.
//!
//! The group has no controllers: membership costs the judged nothing.

use crate::cmdline;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// Where the unified (v2) hierarchy is mounted (`/sys/fs/cgroup` on a
/// pure v2 system, `/sys/fs/cgroup/unified` on a hybrid one), from
/// `/proc/self/mountinfo`.
pub fn unified_mount() -> Option<PathBuf> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    text.lines().find_map(|l| {
        // ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS ... - FSTYPE SOURCE SUPER
        let (head, tail) = l.split_once(" - ")?;
        let mnt = head.split_whitespace().nth(4)?;
        (tail.split_whitespace().next() == Some("cgroup2")).then(|| PathBuf::from(mnt))
    })
}

/// One harness-owned cgroup.
#[derive(Debug)]
pub struct Group {
    path: PathBuf,
    /// `cgroup.procs`, ready for the child (no allocation after fork).
    procs: CString,
}

impl Group {
    /// Make (or reuse) the group `<unified mount>/<rel>`.
    ///
    /// # Errors
    ///
    /// No unified hierarchy, not writable (not root), or a kernel without
    /// `cgroup.kill` (before 5.14): then the caller falls back.
    pub fn create(rel: &Path) -> Result<Group, String> {
        let mnt = unified_mount().ok_or("no cgroup2 (unified) hierarchy mounted")?;
        let path = mnt.join(rel);
        std::fs::create_dir_all(&path).map_err(|e| format!("making {}: {e}", path.display()))?;
        Group::open(&path).inspect_err(|_| {
            let _ = std::fs::remove_dir(&path);
        })
    }

    /// An existing group at `path` (an absolute directory).
    ///
    /// # Errors
    ///
    /// Not a cgroup with `cgroup.kill` (a kernel before 5.14).
    pub fn open(path: &Path) -> Result<Group, String> {
        if !path.join("cgroup.kill").exists() {
            return Err(format!("{} is not a cgroup with cgroup.kill", path.display()));
        }
        let procs = CString::new(path.join("cgroup.procs").as_os_str().as_bytes())
            .map_err(|_| format!("{} holds a NUL byte", path.display()))?;
        Ok(Group { path: path.to_path_buf(), procs })
    }

    /// Its directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Its members now (their pids; a process that exited has left).
    pub fn members(&self) -> Vec<i32> {
        std::fs::read_to_string(self.path.join("cgroup.procs"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect()
    }

    /// The child `cmd` starts joins this group before it execs; if it
    /// cannot, it is not started (the spawn fails with the error).
    pub fn join_on_exec(&self, cmd: &mut Command) {
        join::on_exec(cmd, self.procs.clone());
    }

    /// End every member at once (`cgroup.kill`), again until the group is
    /// empty (bounded: 2 s); the members seen, with their command lines
    /// (read before the kill).
    pub fn kill_all(&self) -> Vec<(i32, String)> {
        let mut seen: Vec<(i32, String)> = Vec::new();
        let t = Instant::now();
        loop {
            let now = self.members();
            if now.is_empty() || t.elapsed() > Duration::from_secs(2) {
                break;
            }
            for p in now {
                if !seen.iter().any(|(s, _)| *s == p) {
                    seen.push((p, cmdline(p)));
                }
            }
            if std::fs::write(self.path.join("cgroup.kill"), "1").is_err() {
                // the group went away under us: end the members one by one
                for (p, _) in &seen {
                    let _ = kill(Pid::from_raw(*p), Signal::SIGKILL);
                }
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        seen
    }

    /// Remove the (empty) group; a failure (members left) is ignored.
    pub fn remove(&self) {
        let _ = std::fs::remove_dir(&self.path);
    }
}

#[allow(unsafe_code)]
mod join {
    use nix::libc;
    use std::ffi::CString;
    use std::os::unix::process::CommandExt;
    use std::process::Command;

    /// Between fork and exec the child writes `0` (itself) to `procs`.
    pub(super) fn on_exec(cmd: &mut Command, procs: CString) {
        // SAFETY: the closure runs in the forked child and makes only
        // async-signal-safe system calls (open, write, close) on memory
        // allocated before the fork; it allocates nothing.
        unsafe {
            cmd.pre_exec(move || {
                let fd = libc::open(procs.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                if fd < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                let n = libc::write(fd, b"0".as_ptr().cast(), 1);
                let err = std::io::Error::last_os_error();
                libc::close(fd);
                if n != 1 {
                    return Err(err);
                }
                Ok(())
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wait_pid(file: &Path) -> i32 {
        for _ in 0..200 {
            if let Some(p) = std::fs::read_to_string(file).ok().and_then(|s| s.trim().parse().ok()) {
                return p;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("no pid in {}", file.display());
    }

    /// Killed and removed however the test ends.
    struct Scoped(Group);

    impl Drop for Scoped {
        fn drop(&mut self) {
            self.0.kill_all();
            self.0.remove();
        }
    }

    #[test]
    fn a_member_that_clears_its_environment_and_leaves_its_session_is_killed() {
        let rel = PathBuf::from(format!("dhp-procs-unit-{}", std::process::id()));
        let scoped = Scoped(Group::create(&rel).expect("a writable cgroup2 hierarchy with cgroup.kill, as root"));
        let g = &scoped.0;
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("pid");
        // double fork: a setsid grandchild with an empty environment; the child exits
        let script = format!(
            "(setsid env -i /bin/sh -c 'echo $$ > {}; exec sleep 60' </dev/null >/dev/null 2>&1 &)",
            pidfile.display()
        );
        let mut cmd = Command::new("/bin/sh");
        cmd.arg("-c").arg(&script);
        g.join_on_exec(&mut cmd);
        assert!(cmd.status().unwrap().success());
        let pid = wait_pid(&pidfile);
        for _ in 0..200 {
            if cmdline(pid).contains("sleep 60") {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(g.members(), vec![pid]);
        let killed = g.kill_all();
        assert_eq!(killed.iter().map(|k| k.0).collect::<Vec<_>>(), vec![pid]);
        assert!(killed[0].1.contains("sleep 60"), "{killed:?}");
        assert!(g.members().is_empty());
        g.remove();
        assert!(!g.path().exists());
    }

    #[test]
    fn a_child_that_cannot_join_is_not_started() {
        let g =
            Group { path: PathBuf::from("/nonexistent"), procs: CString::new("/nonexistent/cgroup.procs").unwrap() };
        let mut cmd = Command::new("/bin/true");
        g.join_on_exec(&mut cmd);
        assert!(cmd.status().is_err());
    }
}
