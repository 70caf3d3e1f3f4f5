//! Child processes of the demo: locating the binaries, spawning them (in
//! a network namespace when asked), and making sure none outlives the demo.

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// A child that is SIGKILLed and reaped on drop unless it already exited.
pub struct Proc {
    pub name: String,
    pub child: Child,
    pub pid: u32,
    status: Option<ExitStatus>,
}

impl Proc {
    pub fn spawn(name: &str, mut cmd: Command) -> anyhow::Result<Proc> {
        let child = cmd.spawn().map_err(|e| anyhow::anyhow!("starting {name} ({:?}): {e}", cmd.get_program()))?;
        let pid = child.id();
        Ok(Proc { name: name.to_string(), child, pid, status: None })
    }

    pub fn nix_pid(&self) -> Pid {
        Pid::from_raw(self.pid as i32)
    }

    /// Exit status if it has exited (non-blocking).
    pub fn try_status(&mut self) -> Option<ExitStatus> {
        if self.status.is_none() {
            self.status = self.child.try_wait().ok().flatten();
        }
        self.status
    }

    /// Wait up to `timeout`; `None` if still running.
    pub fn wait_for(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let end = Instant::now() + timeout;
        loop {
            if let Some(s) = self.try_status() {
                return Some(s);
            }
            if Instant::now() >= end {
                return None;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Send a signal (errors if the process is gone).
    pub fn signal(&self, sig: Signal) -> nix::Result<()> {
        kill(self.nix_pid(), sig)
    }

    /// SIGTERM, wait up to `grace`, then SIGKILL. Returns the exit status.
    pub fn stop(&mut self, grace: Duration) -> Option<ExitStatus> {
        if let Some(s) = self.try_status() {
            return Some(s);
        }
        let _ = self.signal(Signal::SIGTERM);
        if let Some(s) = self.wait_for(grace) {
            return Some(s);
        }
        let _ = self.signal(Signal::SIGKILL);
        self.wait_for(Duration::from_secs(5))
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if self.try_status().is_none() {
            let _ = self.signal(Signal::SIGKILL);
            let _ = self.child.wait();
        }
    }
}

/// Build a command, optionally prefixed (e.g. `ip netns exec NS`).
pub fn command(prefix: &[String], program: &Path, args: &[String]) -> Command {
    let mut cmd = match prefix.split_first() {
        Some((first, rest)) => {
            let mut c = Command::new(first);
            c.args(rest).arg(program);
            c
        }
        None => Command::new(program),
    };
    cmd.args(args).stdin(Stdio::null());
    cmd
}

/// Directory of the running executable.
pub fn exe_dir() -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe()?;
    Ok(exe.parent().ok_or_else(|| anyhow::anyhow!("executable has no directory"))?.to_path_buf())
}

/// The page worker binary: next to the demo executable.
pub fn page_worker_bin() -> anyhow::Result<PathBuf> {
    let p = exe_dir()?.join("demo-page-worker");
    anyhow::ensure!(
        p.is_file(),
        "{} is missing: build it with `cargo build -p demo` (it is a binary of the demo crate)",
        p.display()
    );
    Ok(p)
}

/// The `dhp` binary: `explicit` if given; else `target/<profile>/dhp` next
/// to this executable, (re)built with cargo under `cargo run` and built when
/// missing ([`dhp_testkit::locate::dhp`]). `log` reports what is done.
pub fn locate_dhp(explicit: Option<&Path>, log: &mut dyn FnMut(&str)) -> anyhow::Result<PathBuf> {
    Ok(dhp_testkit::locate::dhp(explicit, log)?)
}

/// A free TCP port on `host` right now (bind :0 and release it).
pub fn free_port(host: &str) -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind((host, 0))?.local_addr()?.port())
}
