//! A child in a process group of its own that dies with its guard.

use std::process::{Child, Command};

/// A child started in a process group of its own; dropping the guard
/// SIGKILLs the whole group and the leader's tree (grandchildren that left
/// the group included) and reaps the child, so a failing test leaves
/// nothing running.
#[derive(Debug)]
pub struct ProcessGroup {
    pub child: Child,
}

impl ProcessGroup {
    /// Start `cmd` leading a group of its own.
    ///
    /// # Errors
    ///
    /// The spawn's own error.
    pub fn try_spawn(mut cmd: Command) -> std::io::Result<ProcessGroup> {
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
        Ok(ProcessGroup { child: cmd.spawn()? })
    }

    /// [`ProcessGroup::try_spawn`] for tests: panics naming the command.
    pub fn spawn(cmd: Command) -> ProcessGroup {
        let what = format!("{cmd:?}");
        ProcessGroup::try_spawn(cmd).unwrap_or_else(|e| panic!("spawning {what}: {e}"))
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            // not reaped yet: the id is still this child's, and so is its tree
            crate::kill_group(self.child.id());
        } else if let Ok(pgid) = i32::try_from(self.child.id()) {
            // a group outlives its leader, and its id is not reused while it does
            let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pgid), nix::sys::signal::Signal::SIGKILL);
        }
        let _ = self.child.wait();
    }
}
