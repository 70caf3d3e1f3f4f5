//! After an orphan's transaction: its metrics and event; inside it, the
//! leader's term checked again just before the commit.

use super::{bump, DeadLetter, Supervisor};
use crate::config::Config;
use crate::error::{Error, Result};
use crate::events;
use crate::id;
use crate::store::Tx;
use crate::supervisor::{ActionKind, OrphanReason, ScanAction};
use std::time::{Duration, Instant};

/// As a worker's write (runner/live_lease.rs): a leader stopped inside its
/// orphan transaction past its term (`until`) must not commit an orphan
/// stamped after it. `Some(seconds)` the term ran out before now: the
/// caller rolls back ([`lapsed`]) and reports NotLeader.
pub(super) fn term_lapsed(tx: &mut dyn Tx, cfg: &Config, until: f64) -> Result<Option<f64>> {
    let now = cfg.clock.fresh_in(tx)?.secs();
    Ok((now > until).then_some(now - until))
}

/// The error that rolls back an orphan whose leader term ran out `late`
/// seconds before its commit.
pub(super) fn lapsed(hid: &str, late: f64) -> Error {
    Error::State {
        hid: hid.to_string(),
        op: "orphan",
        reason: format!("the leader's term ran out {late:.3} s before the commit"),
    }
}

impl Supervisor {
    /// Count what an orphan attempt did and emit its event; `late_s` and
    /// `died_after` give the detection latency.
    pub(super) fn count_orphan(
        &self,
        out: &ScanAction,
        hid: &str,
        reason: OrphanReason,
        late_s: Option<f64>,
        died_after: Option<Instant>,
    ) {
        match out.kind() {
            ActionKind::Dlq => {
                let stalls = matches!(&out, ScanAction::Orphan(o) if o.stall_count.is_some());
                let why = if stalls { DeadLetter::StallRetries } else { DeadLetter::MaxAttempts };
                bump(&self.metrics.dlq[why as usize]);
                tracing::warn!(hid = id::short(hid), reason = reason.as_str(), "dead-lettered");
            }
            ActionKind::Orphaned => {
                bump(&self.metrics.orphans[reason.index()]);
                let detection = match (late_s, died_after) {
                    // Negative or NaN (clock skew): zero; past Duration: the most.
                    (Some(s), _) => Some(Duration::try_from_secs_f64(s).unwrap_or(if s > 0.0 {
                        Duration::MAX
                    } else {
                        Duration::ZERO
                    })),
                    (None, Some(at)) => Some(at.elapsed()),
                    (None, None) => None,
                };
                self.cfg.hooks.emit(events::Event::Orphaned { reason, detection });
                tracing::info!(hid = id::short(hid), reason = reason.as_str(), "orphaned");
            }
            _ => {}
        }
    }
}
