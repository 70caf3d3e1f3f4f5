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

/// SIGKILL every process of the group. Call it before reaping the leader:
/// until then the id cannot belong to anyone else.
pub fn kill(pgid: u32) {
    if let Ok(id) = i32::try_from(pgid) {
        let _ = killpg(Pid::from_raw(id), Signal::SIGKILL);
    }
}

/// On SIGINT, SIGTERM or SIGHUP: kill every live adapter group and exit
/// with 128 + the signal, as the default action would have.
pub fn kill_all_on_signal() -> std::io::Result<()> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])?;
    std::thread::spawn(move || {
        if let Some(sig) = signals.forever().next() {
            for pgid in live().iter() {
                kill(*pgid);
            }
            std::process::exit(128 + sig);
        }
    });
    Ok(())
}
