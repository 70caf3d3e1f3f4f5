//! Processes that die as they start. A supervisor (or transport server, or
//! a handoff's workers) that exits on its own within [`EARLY_S`] of its
//! start, [`LIMIT`] times in a row, is not a fault the harness injected
//! but a harness error (a flag `dhp` refuses, a bad command, a store it
//! cannot open): the round ends with a message naming the process and its
//! log, instead of respawning it hundreds of times a second for ever.
//! While an environmental fault stands (a full disk, the database down or
//! its link cut) such deaths are expected and not counted.

use super::*;

/// A death this soon after the spawn counts as a death at start.
pub(super) const EARLY_S: f64 = 1.0;
/// This many deaths at start in a row end the round.
pub(super) const LIMIT: u32 = 10;

/// Consecutive deaths at start, by what keeps being respawned.
#[derive(Debug, Default)]
pub(super) struct StartDeaths {
    runs: HashMap<String, u32>,
}

impl StartDeaths {
    /// Note an exit of `key` (a role, or a handoff's workers); the number
    /// of deaths at start in a row so far (0 when this exit breaks the run).
    pub(super) fn note(&mut self, key: &str, early_own_failure: bool) -> u32 {
        let n = self.runs.entry(key.to_string()).or_insert(0);
        *n = if early_own_failure { *n + 1 } else { 0 };
        *n
    }
}

impl Driver<'_> {
    /// A fault that can make a healthy process die at start is standing.
    fn environment_faulted(&self) -> bool {
        self.disk_full.is_some()
            || self.store_disk.is_full()
            || self.db_down()
            || self.db_link_on.is_some()
            || self.link_on.is_some()
            || self.dead
    }

    /// Count the exit of child `i` (`e`); a harness error once its role (or
    /// its handoff's workers) died at start [`LIMIT`] times in a row.
    pub(super) fn check_start_death(&mut self, i: usize, e: &procs::ExitInfo, fired: bool) -> Result<()> {
        let p = &self.table.procs[i];
        let key = match (p.role, &p.hid) {
            (Role::Worker, Some(h)) => format!("workers of {h}"),
            (Role::Worker, None) => "workers".into(),
            (Role::Supervisor, _) => "supervisors".into(),
            (Role::Transport, _) => "the transport server".into(),
        };
        let lived = e.t - p.spawned;
        // exit 5 (OwnershipLost, LeaseLost, FencingError) is a worker losing
        // a race the protocol expects it to lose, not a failure to start
        let lost_race = p.role == Role::Worker && e.code == Some(5);
        let own_failure = !p.killed_by_harness && !fired && !e.stopped && e.code != Some(0) && !lost_race;
        let early = own_failure && lived < EARLY_S && !self.environment_faulted();
        let n = self.starts.note(&key, early);
        if n >= LIMIT {
            let tail = std::fs::read_to_string(&p.log)
                .map(|s| s.lines().rev().take(3).collect::<Vec<_>>().into_iter().rev().collect::<Vec<_>>().join(" | "))
                .unwrap_or_default();
            bail!(
                "{key} died at start {n} times in a row (the last, {}, {} {:.2}s after it started; not a fault the harness injected); see {}{}",
                p.name,
                exit_text(e),
                lived.max(0.0),
                p.log.display(),
                if tail.is_empty() { String::new() } else { format!(": {tail}") }
            );
        }
        Ok(())
    }
}
