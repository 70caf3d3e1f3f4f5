//! [`TaskContext`]: what a worker holds after claim or recover.

use super::{Runner, Step};
use crate::config;
use crate::error::Result;
use crate::id::HandoffId;
use crate::lease::Fence;
use crate::lease::Lease;
use serde_json::Value;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

/// What a worker holds after claim or recover: its runner and the
/// [`Lease`] granted. Every call re-validates the lease against the store.
pub struct TaskContext {
    runner: Runner,
    lease: Lease,
    heartbeat: Option<(mpsc::Sender<()>, JoinHandle<()>)>,
}

impl std::fmt::Debug for TaskContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskContext").field("hid", self.lease.hid()).field("fence", &self.lease.fence()).finish()
    }
}

impl TaskContext {
    pub(super) fn new(runner: Runner, lease: Lease) -> Self {
        TaskContext { runner, lease, heartbeat: None }
    }

    /// The handoff this context works on.
    pub fn hid(&self) -> &HandoffId {
        self.lease.hid()
    }

    /// The fencing token granted by the claim (0) or recovery (previous + 1).
    pub fn fence(&self) -> Fence {
        self.lease.fence()
    }

    /// The lease this context presents.
    pub fn lease(&self) -> &Lease {
        &self.lease
    }

    /// The runner (store, configuration, worker id) behind this context.
    pub fn runner(&self) -> &Runner {
        &self.runner
    }

    /// Heartbeat in a background thread every `interval` (default: half
    /// the lease interval) until complete, release, drop or a lost lease.
    /// When the OS refuses a thread it logs a warning and returns: the
    /// lease is then kept by explicit heartbeats and checkpoints only.
    pub fn start_heartbeat(&mut self, interval: Option<Duration>) {
        if self.heartbeat.is_some() {
            return;
        }
        // A validated config keeps the interval within (0, MAX_KNOB_S].
        let half = config::duration_from_secs(
            "DHP_LEASE_INTERVAL_S / 2",
            self.runner.cfg.lease_interval_s / 2.0,
            config::MAX_KNOB_S,
        );
        let interval = interval.or(half.ok()).unwrap_or(Duration::from_secs(1));
        let (tx, rx) = mpsc::channel::<()>();
        let (runner, lease) = (self.runner.clone(), self.lease.clone());
        let spawned = std::thread::Builder::new()
            .name(format!("dhp-hb-{}", lease.hid().as_str().get(..8).unwrap_or_default()))
            .spawn(move || {
                while let Err(mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(interval) {
                    if let Err(e) = runner.heartbeat(&lease) {
                        // The next explicit call surfaces the real error.
                        tracing::debug!(error = %e, "background heartbeat stopped");
                        break;
                    }
                }
            });
        match spawned {
            Ok(handle) => self.heartbeat = Some((tx, handle)),
            // Out of threads: no panic. The lease then lives on the worker's own
            // heartbeats and checkpoints; if it runs out, the next write is
            // refused with LeaseLost and the supervisor orphans the handoff.
            Err(e) => {
                tracing::warn!(error = %e, "cannot start the background heartbeat; relying on explicit heartbeats")
            }
        }
    }

    /// Stop the background heartbeat, if running.
    pub fn stop_heartbeat(&mut self) {
        if let Some((tx, handle)) = self.heartbeat.take() {
            drop(tx);
            let _ = handle.join();
        }
    }

    /// Append a checkpoint under this lease; returns its seq. See
    /// [`Runner::checkpoint`] (stale fence, lost lease, not running).
    pub fn checkpoint(&self, state: &Value) -> Result<i64> {
        self.runner.checkpoint(&self.lease, state)
    }

    /// Checkpoint, count steps and extend the lease in one transaction.
    pub fn checkpoint_step(&self, state: &Value, steps: i64) -> Result<Step> {
        self.runner.checkpoint_step(&self.lease, state, steps)
    }

    /// Extend the lease now; returns seconds until it expires. See
    /// [`Runner::heartbeat`].
    pub fn heartbeat(&self) -> Result<f64> {
        self.runner.heartbeat(&self.lease)
    }

    /// Count `n` steps against the budget. See [`Runner::note_step`].
    pub fn note_step(&self, n: i64) -> Result<()> {
        self.runner.note_step(&self.lease, n)
    }

    /// Record `usd` of spend against the budget. See [`Runner::note_spend`].
    pub fn note_spend(&self, usd: f64) -> Result<()> {
        self.runner.note_spend(&self.lease, usd)
    }

    /// The last checkpointed state of this handoff (a read: the lease is
    /// not checked), or `None` before the first checkpoint.
    pub fn last_checkpoint(&self) -> Result<Option<Value>> {
        self.runner.last_checkpoint(self.lease.hid())
    }

    /// Record a side effect's result once; `false` if `step_id` was already
    /// recorded. See [`Runner::record_effect`].
    pub fn record_effect(&self, step_id: &str, result: &Value) -> Result<bool> {
        self.runner.record_effect(&self.lease, step_id, result)
    }

    /// The recorded result of `step_id`, if it already ran: what a recovered
    /// worker checks before repeating an effect. See [`Runner::effect_done`].
    pub fn effect_done(&self, step_id: &str) -> Result<Option<Value>> {
        self.runner.effect_done(&self.lease, step_id)
    }

    /// Report an activity digest for stall detection; returns how many
    /// times in a row it repeated. See [`Runner::note_activity`].
    pub fn note_activity(&self, digest: &str) -> Result<i64> {
        self.runner.note_activity(&self.lease, digest)
    }

    /// Gate an action on approval; [`Error::ApprovalRequired`] for
    /// `financial` and `destructive`. See [`Runner::request_approval`].
    ///
    /// [`Error::ApprovalRequired`]: crate::Error::ApprovalRequired
    pub fn request_approval(&self, action_class: &str, details: &Value, timeout_s: f64) -> Result<()> {
        self.runner.request_approval(&self.lease, action_class, details, timeout_s)
    }

    /// Wait, polling every `poll`, until the approval is decided. See
    /// [`Runner::await_approval`].
    pub fn await_approval(&self, approval_id: &str, poll: Duration) -> Result<()> {
        self.runner.await_approval(&self.lease, approval_id, poll)
    }

    /// Fail-closed, audited capability check. See
    /// [`Runner::require_capability`].
    pub fn require_capability(&self, domain: &str, resource: &str) -> Result<()> {
        self.runner.require_capability(&self.lease, domain, resource)
    }

    /// Stop the background heartbeat and complete with `result`: running →
    /// completed, or failed when the result violates the output schema. See
    /// [`Runner::complete`].
    pub fn complete(&mut self, result: &Value) -> Result<()> {
        self.stop_heartbeat();
        self.runner.complete(&self.lease, result)
    }

    /// Stop the background heartbeat and hand the handoff back: running →
    /// pending, ownership deleted. See [`Runner::release`].
    pub fn release(&mut self, reason: &str) -> Result<()> {
        self.stop_heartbeat();
        self.runner.release(&self.lease, reason)
    }
}

impl Drop for TaskContext {
    fn drop(&mut self) {
        self.stop_heartbeat();
    }
}
