//! Adapter process groups. Every adapter runs as the leader of its own
//! process group, so that the runner can end it together with anything it
//! started. The live groups are registered here, so that an interrupted
//! runner (Ctrl-C, SIGTERM, SIGHUP) kills them before it exits: in their
//! own groups they no longer receive the terminal's signals themselves.

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
/// that left the group ([`dhp_procs::kill_group`]). Call it before reaping
/// the leader: until then the id cannot belong to anyone else.
pub fn kill(pgid: u32) {
    dhp_procs::kill_group(pgid);
}

pub use dhp_procs::{kill_tree, tree};

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
    if let Ok(g) = crate::cgroup::group() {
        return crate::cgroup::kill_all(g);
    }
    let want = mark();
    dhp_procs::marker::sweep(MARK_VAR, &|v| v == want).len()
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
