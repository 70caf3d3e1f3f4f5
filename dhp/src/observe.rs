//! The program's observer of the library's event hooks: latencies and the
//! workers' counts for the Prometheus endpoint ([`crate::metrics`]), and
//! the attempt spans for OTLP export ([`crate::trace`]). The supervisor's
//! counts are its own counters, not events: each event is counted once.

use crate::{metrics, trace};
use dhp_core::events::{Event, Hooks, Observer};
use std::sync::Arc;

struct Program;

impl Observer for Program {
    fn on(&self, event: &Event<'_>) {
        match *event {
            Event::Orphaned { reason, detection } => {
                if let Some(d) = detection {
                    metrics::DETECTION[reason.index()].observe(d);
                }
            }
            Event::Pass { took } => metrics::SCAN_DURATION.observe(took),
            Event::LeaseRenewed => metrics::LEASE_RENEWALS.inc(),
            Event::Checkpointed { hid, fence, seq } => {
                metrics::CHECKPOINTS.inc();
                trace::checkpoint(hid, fence.get(), seq);
            }
            Event::AttemptStarted { hid, fence, holder, how, at_s } => {
                trace::attempt_started(hid, fence.get(), holder, how, at_s)
            }
            Event::AttemptEnded { hid, fence, how } => trace::attempt_ended(hid, fence.get(), how),
            Event::AttemptDied(d) => trace::attempt_died(d),
        }
    }

    /// Only while exporting traces: gathering a death reads the store.
    fn wants_deaths(&self) -> bool {
        trace::enabled()
    }
}

/// The hooks every command's [`dhp_core::Config`] carries.
pub fn hooks() -> Hooks {
    Hooks::new(Arc::new(Program))
}
