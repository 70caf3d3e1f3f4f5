//! Event hooks: what the supervisor and the runner tell an observer the program installed ([`Config::hooks`]). The library
//! counts and exports nothing itself; the `dhp` program's observer feeds
//! its Prometheus metrics and OpenTelemetry traces from these events.
//!
//! Without an observer (the default) a hook is one branch on an `Option`.
//!
//! [`Config::hooks`]: crate::Config::hooks

use crate::lease::Fence;
use crate::supervisor::OrphanReason;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Unix time now, nanoseconds.
pub fn now_ns() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// Unix seconds (a store timestamp) as nanoseconds (0 when not a time).
pub fn secs_to_ns(s: f64) -> u64 {
    if s.is_finite() && s > 0.0 {
        (s * 1e9) as u64
    } else {
        0
    }
}

/// Why a handoff was dead-lettered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeadLetter {
    /// Its `max_attempts` ran out.
    MaxAttempts = 0,
    /// Its `max_stall_retries` ran out.
    StallRetries = 1,
    /// Its budget ran out (failed closed).
    Budget = 2,
}

/// How an attempt (a claim or a recover) started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// A claim (fence 0).
    Claim,
    /// A recover of an orphaned handoff.
    Recover,
}

impl Start {
    /// `claim` or `recover`.
    pub fn as_str(self) -> &'static str {
        match self {
            Start::Claim => "claim",
            Start::Recover => "recover",
        }
    }
}

/// How an attempt ended in its own process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// Completed with a valid result.
    Completed,
    /// Completed with a result that failed the schema (status failed).
    SchemaFailed,
    /// Released back to pending.
    Released,
}

/// What a supervisor knows of an attempt it ended by orphaning it: the
/// dead worker could not end its own span.
#[derive(Debug, Clone)]
pub struct Death<'a> {
    /// The handoff.
    pub hid: &'a str,
    /// The dead attempt's holder.
    pub holder: &'a str,
    /// The dead attempt's fence.
    pub fence: Fence,
    /// The tombstone's fence.
    pub tomb_fence: Fence,
    /// Why it was orphaned (`lease-expired`, ...).
    pub reason: &'static str,
    /// Whether it was dead-lettered instead of orphaned.
    pub dead_lettered: bool,
    /// The attempt's claim time (store seconds), if the envelope had it.
    pub claimed_at: Option<f64>,
    /// `execution.attempt` of the envelope.
    pub attempt: i64,
    /// The supervisor that orphaned it.
    pub supervisor: &'a str,
    /// The orphan transaction's start (unix ns).
    pub orphan_start_ns: u64,
    /// The orphan transaction's end (unix ns).
    pub orphan_end_ns: u64,
    /// The checkpoints committed under this attempt: (seq, unix ns).
    pub checkpoints: Vec<(i64, u64)>,
}

/// One event. Counts are not kept here: the supervisor's own counters
/// ([`crate::supervisor::Metrics`]) are its counts; these events carry
/// what those do not (latencies, traces) and the runner's events, which
/// it does not count.
#[derive(Debug)]
pub enum Event<'a> {
    /// A supervisor orphaned a handoff; `detection`: from what made it
    /// orphanable (lease expiry, last live poll, stall deadline) to the commit.
    Orphaned {
        /// Why.
        reason: OrphanReason,
        /// The detection latency, when known.
        detection: Option<Duration>,
    },
    /// A supervisor's leader pass ended after `took`.
    Pass {
        /// Wall time of the pass.
        took: Duration,
    },
    /// A lease renewal (heartbeat) extended a lease.
    LeaseRenewed,
    /// An attempt started: committed at store time `at_s`.
    AttemptStarted {
        /// The handoff.
        hid: &'a str,
        /// Its fence.
        fence: Fence,
        /// The worker.
        holder: &'a str,
        /// Claim or recover.
        how: Start,
        /// Store time of the claim or recover.
        at_s: f64,
    },
    /// A checkpoint committed under `(hid, fence)` by this process's workers.
    Checkpointed {
        /// The handoff.
        hid: &'a str,
        /// The attempt's fence.
        fence: Fence,
        /// The checkpoint's seq.
        seq: i64,
    },
    /// The attempt `(hid, fence)` ended in this process.
    AttemptEnded {
        /// The handoff.
        hid: &'a str,
        /// The attempt's fence.
        fence: Fence,
        /// How.
        how: Ended,
    },
    /// A supervisor orphaned or dead-lettered an attempt (only sent when
    /// the observer [`Observer::wants_deaths`]: gathering it reads the store).
    AttemptDied(&'a Death<'a>),
}

/// Receives [`Event`]s. Called on the thread that made the event, inside
/// no store transaction: keep it quick (a relaxed add, a short lock).
pub trait Observer: Send + Sync {
    /// One event.
    fn on(&self, event: &Event<'_>);

    /// Whether a supervisor should gather [`Event::AttemptDied`] (the dead
    /// attempt's checkpoints: one store read per orphan).
    fn wants_deaths(&self) -> bool {
        false
    }
}

/// The observer of a [`Config`](crate::Config), if any. Cloning shares it.
#[derive(Clone, Default)]
pub struct Hooks(Option<Arc<dyn Observer>>);

impl Hooks {
    /// Hooks that send every event to `observer`.
    pub fn new(observer: Arc<dyn Observer>) -> Self {
        Hooks(Some(observer))
    }

    /// Send `event` to the observer (none: nothing happens).
    #[inline]
    pub fn emit(&self, event: Event<'_>) {
        if let Some(o) = &self.0 {
            o.on(&event);
        }
    }

    /// Whether an observer is installed.
    #[inline]
    pub fn active(&self) -> bool {
        self.0.is_some()
    }

    /// Whether the observer wants [`Event::AttemptDied`].
    pub fn wants_deaths(&self) -> bool {
        self.0.as_ref().is_some_and(|o| o.wants_deaths())
    }
}

impl fmt::Debug for Hooks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_some() { "Hooks(observer)" } else { "Hooks(none)" })
    }
}

/// Two configs differ in their knobs, not in who observes them.
impl PartialEq for Hooks {
    fn eq(&self, _: &Hooks) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    struct Log(Mutex<Vec<String>>);
    impl Observer for Log {
        fn on(&self, e: &Event<'_>) {
            self.0.lock().unwrap().push(format!("{e:?}"));
        }
    }

    #[test]
    fn hooks_forward_events_only_when_installed() {
        Hooks::default().emit(Event::LeaseRenewed);
        let log = Arc::new(Log(Mutex::new(Vec::new())));
        let h = Hooks::new(log.clone());
        assert!(h.active() && !h.wants_deaths());
        h.clone().emit(Event::LeaseRenewed);
        assert_eq!(*log.0.lock().unwrap(), vec!["LeaseRenewed".to_string()]);
    }
}
