//! The spans of an orphan (an observer wants them): the dead attempt's, ended at the
//! orphan's commit, with the checkpoints it committed, and the orphan's own.

use super::scan_action::Stamps;
use super::{OrphanReason, Orphaning, Supervisor};
use crate::store::{with_tx, Backend, Mode};

impl Supervisor {
    /// Emit the spans of an orphan (an observer wants them): the dead attempt's, with
    /// the checkpoints it committed as events, and the orphan's own.
    pub(super) fn trace_death(&self, store: &dyn Backend, o: &Orphaning, reason: OrphanReason, at: Stamps) {
        let Stamps { claimed_at, orphaned_at, orphan_start_ns } = at;
        // The dead attempt ended when the orphan committed (its store time,
        // the clock the recoverer's start is read from), not when this
        // process got round to recording it: under load that is after the
        // recoverer started, and the two attempts would overlap.
        let orphan_end_ns = match orphaned_at.map(crate::events::secs_to_ns) {
            Some(t) if t > 0 => t,
            _ => crate::events::now_ns(),
        };
        let since_ns = claimed_at.map(crate::events::secs_to_ns).unwrap_or(0);
        let rows = with_tx(store, Mode::Read, |tx| tx.checkpoints(&o.hid)).unwrap_or_else(|e| {
            tracing::debug!(error = %e, "trace: cannot read the dead attempt's checkpoints");
            Vec::new()
        });
        let checkpoints = rows
            .iter()
            .filter(|r| r.seq < o.checkpoints)
            .filter_map(|r| {
                let at = chrono::DateTime::parse_from_rfc3339(&r.at).ok()?.timestamp_nanos_opt()?;
                let at = u64::try_from(at).ok()?;
                // `at` and the claim time come from two clocks of this
                // host: allow a millisecond between them.
                (at.saturating_add(1_000_000) >= since_ns).then_some((r.seq, at))
            })
            .collect();
        let death = crate::events::Death {
            hid: &o.hid,
            holder: &o.previous_holder,
            fence: o.previous_fence,
            tomb_fence: o.fence,
            reason: reason.as_str(),
            dead_lettered: o.dead_lettered,
            claimed_at,
            attempt: o.attempt,
            supervisor: self.id.as_str(),
            orphan_start_ns,
            orphan_end_ns,
            checkpoints,
        };
        self.cfg.hooks.emit(crate::events::Event::AttemptDied(&death));
    }
}
