//! The supervisor: leader election over the `leadership` row and a scan
//! loop that orphans expired leases (or dead-letters them at
//! `max_attempts`), fails over-budget work closed, orphans stalled work
//! (dead-lettering after `max_stall_retries`) and expires approvals.
//!
//! Each orphan is one transaction that re-checks the lease under the write
//! lock, so a worker that heartbeats between the scan's query and the
//! orphan keeps its handoff (the reference can orphan a just-renewed lease).
//!
//! Each scan also repairs torn states that other implementations leave
//! (see [`repair`]), and a row it cannot handle — an envelope that does not
//! parse, an unknown status — is quarantined: reported once as a
//! `quarantined` action, counted, skipped; the scan goes on with the rest.

mod actions;
mod consistency;
mod leadership;
#[cfg(test)]
mod led_tests;
mod live;
mod metrics;
mod orphan_outcome;
mod quarantine;
pub mod repair;
mod scan_action;
mod trace_death;
mod tracker;

use crate::config::{self, Config};
use crate::envelope::{self, check_worker_id, ORPHANED_HOLDER};
use crate::error::{Error, Result};
use crate::events::{self, DeadLetter};
use crate::id::WorkerId;
use crate::json;
use crate::liveness;
use crate::runner::{budget_violation, load, save};
use crate::status::{Op, Status};
use crate::store::{self, with_tx, Backend, Mode, StoreLocation, Tx};
use actions::Actions;
pub use actions::OnAction;
use metrics::bump;
pub use metrics::{Metrics, DLQ_REPAIR};
use quarantine::per_row;
use scan_action::Stamps;
pub use scan_action::{ActionKind, Orphaning, Repair, ScanAction};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Why a handoff is being orphaned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OrphanReason {
    /// The lease ran out (the worker is dead, paused or partitioned).
    LeaseExpired,
    /// The worker's liveness token dropped: the process is gone.
    WorkerDied,
    /// Alive but no progress.
    Stalled,
}

impl OrphanReason {
    /// Every reason, in the order of [`OrphanReason::index`].
    pub const ALL: [OrphanReason; 3] = [OrphanReason::LeaseExpired, OrphanReason::WorkerDied, OrphanReason::Stalled];

    /// Its slot in per-reason counters.
    pub fn index(self) -> usize {
        match self {
            OrphanReason::LeaseExpired => 0,
            OrphanReason::WorkerDied => 1,
            OrphanReason::Stalled => 2,
        }
    }

    /// The name the scan report and the history use.
    pub fn as_str(self) -> &'static str {
        match self {
            OrphanReason::LeaseExpired => "lease-expired",
            OrphanReason::WorkerDied => "worker-died",
            OrphanReason::Stalled => "stalled",
        }
    }
}

/// How much of its term a leader lets run out before it renews: a pass
/// that finds more than this share of the leader TTL left only reads the
/// `leadership` row (no write lock, no commit, no fsync).
pub const RENEW_WHEN_LEFT: f64 = 0.5;

/// What [`Supervisor::watch_events`] reports.
#[derive(Debug, Clone, Copy)]
pub enum Event<'a> {
    /// An action, reported as soon as the transaction that made it
    /// committed (before the pass goes on).
    Action(&'a ScanAction),
    /// A pass reached the store and finished: the `n`th of this watch;
    /// `leader` whether this supervisor led it.
    Pass {
        /// Passes finished so far in this watch, this one included.
        n: u64,
        /// Whether this supervisor was the leader at the end of the pass.
        leader: bool,
    },
}

/// A supervisor process's view of one store.
pub struct Supervisor {
    store: Arc<dyn Backend>,
    cfg: Config,
    id: WorkerId,
    root: Option<PathBuf>,
    is_leader: AtomicBool,
    /// Its counters (shared: a metrics endpoint reads them while it runs).
    pub metrics: Arc<Metrics>,
    started: Instant,
    /// Quarantined hid → reason, as last reported (reported again only
    /// when the reason changes or the row recovered in between).
    quarantine: Mutex<BTreeMap<String, String>>,
    /// When the consistency pass last ran, and what it left unsettled.
    last_pass: Mutex<Option<consistency::LastPass>>,
    /// What the scan checked, so the next one reads only what changed.
    tracker: Mutex<tracker::Tracker>,
    /// When the last liveness check began (ns since `started`; u64::MAX:
    /// none yet): a process found dead was alive at most this long ago.
    live_checked_ns: AtomicU64,
}

impl std::fmt::Debug for Supervisor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Supervisor").field("id", &self.id).finish()
    }
}

impl Supervisor {
    /// A supervisor over any backend. `root`, when given, is where worker
    /// liveness tokens are looked for (same-host fast detection).
    pub fn new(store: Arc<dyn Backend>, id: &str, cfg: Config, root: Option<PathBuf>) -> Result<Self> {
        let id = WorkerId::parse(id)?;
        cfg.validate()?;
        Ok(Supervisor {
            store,
            cfg,
            id,
            root,
            is_leader: AtomicBool::new(false),
            metrics: Arc::default(),
            started: Instant::now(),
            quarantine: Mutex::new(BTreeMap::new()),
            last_pass: Mutex::new(None),
            tracker: Mutex::new(tracker::Tracker::default()),
            live_checked_ns: AtomicU64::new(u64::MAX),
        })
    }

    /// Open the store at `root`: a directory (SQLite; liveness tokens under
    /// it) or a `postgres://` URL (liveness through the database).
    pub fn open(root: impl AsRef<Path>, id: &str, cfg: Config) -> Result<Self> {
        check_worker_id(id)?;
        cfg.validate()?;
        match StoreLocation::from_path(root.as_ref())? {
            StoreLocation::Dir(dir) => {
                let store = store::SqliteStore::open(dir)?;
                let root = store.root().to_path_buf();
                Self::new(Arc::new(store), id, cfg, Some(root))
            }
            loc => Self::new(store::open(&loc)?, id, cfg, None),
        }
    }

    /// Whether `holder` published a liveness token and lost it: a flock
    /// under the store directory, or the backend's own (PostgreSQL).
    fn holder_dead(&self, tx: &mut dyn Tx, holder: &str) -> Result<bool> {
        Ok(match self.root.as_deref() {
            Some(r) => liveness::is_dead(r, holder),
            None => !tx.dead_holders(&[holder.to_string()])?.is_empty(),
        })
    }

    /// This supervisor's id.
    pub fn id(&self) -> &WorkerId {
        &self.id
    }

    /// Whether this supervisor led at its last scan.
    pub fn is_leader(&self) -> bool {
        self.is_leader.load(Ordering::Relaxed)
    }

    fn write<R>(&self, f: impl FnMut(&mut dyn Tx) -> Result<R>) -> Result<R> {
        with_tx(self.store.as_ref(), Mode::Write, f)
    }

    /// Orphan one handoff. `expected` guards the CAS: the orphan happens
    /// only if the ownership row still has that (holder, fence) — and, for
    /// lease expiry, only if the lease is still expired under the lock.
    ///
    /// Returns the action's JSON ([`ScanAction::to_json`]), as the
    /// conformance adapter's mutants and the benchmarks' fixtures consume
    /// it; [`Supervisor::orphan_action`] returns it typed.
    pub fn orphan(
        &self,
        hid: &str,
        reason: OrphanReason,
        expected: Option<(&str, crate::lease::Fence)>,
    ) -> Result<Value> {
        self.orphan_action(hid, reason, expected).map(|a| a.to_json())
    }

    /// [`Supervisor::orphan`], typed.
    pub fn orphan_action(
        &self,
        hid: &str,
        reason: OrphanReason,
        expected: Option<(&str, crate::lease::Fence)>,
    ) -> Result<ScanAction> {
        self.orphan_in(self.store.as_ref(), hid, reason, expected)
    }

    /// [`Supervisor::orphan`] through `store` (the liveness poll's own
    /// connection, so that it never waits behind a scan's reads).
    fn orphan_in(
        &self,
        store: &dyn Backend,
        hid: &str,
        reason: OrphanReason,
        expected: Option<(&str, crate::lease::Fence)>,
    ) -> Result<ScanAction> {
        self.orphan_detected(store, hid, reason, expected, None, false)
    }

    /// An orphan by this supervisor's own pass: as [`Supervisor::orphan_action`],
    /// and only while this supervisor's leadership term is live in the store,
    /// checked in the orphan's own transaction (§7.1: only the leader acts; a
    /// pass that outlived its term must not orphan while another leads).
    pub(super) fn orphan_led(&self, hid: &str, reason: OrphanReason) -> Result<ScanAction> {
        self.orphan_detected(self.store.as_ref(), hid, reason, None, None, true)
    }

    /// The start of this liveness check, and when the previous one began
    /// (`None` for the first): a holder found dead now died after that.
    fn liveness_check_started(&self) -> Option<Instant> {
        let now = u64::try_from(self.started.elapsed().as_nanos()).unwrap_or(u64::MAX - 1);
        match self.live_checked_ns.swap(now, Ordering::Relaxed) {
            u64::MAX => None,
            prev => self.started.checked_add(Duration::from_nanos(prev)),
        }
    }

    /// [`Supervisor::orphan_in`]; `died_after` (a worker-died orphan) is
    /// when the holder was last possibly alive, for the detection latency;
    /// `led`: only under this supervisor's live leadership term.
    fn orphan_detected(
        &self,
        store: &dyn Backend,
        hid: &str,
        reason: OrphanReason,
        expected: Option<(&str, crate::lease::Fence)>,
        died_after: Option<Instant>,
        led: bool,
    ) -> Result<ScanAction> {
        envelope::check_hid(hid)?;
        // Seconds between what made the handoff orphanable and the orphan
        // (store time), measured inside the orphan's transaction.
        let mut late_s = None;
        let (traced, mut claimed_at, mut orphaned_at) = (self.cfg.hooks.wants_deaths(), None, None);
        let orphan_start_ns = if traced { crate::events::now_ns() } else { 0 };
        let cfg = &self.cfg;
        let untouched = || ScanAction::Untouched { hid: hid.to_string(), kind: ActionKind::AlreadyOrphanedOrReleased };
        // Set when the leader's term ran out inside the transaction (see below).
        let mut lapsed = false;
        let out = with_tx(store, Mode::Write, |tx| {
            lapsed = false;
            let Some(mut own) = tx.ownership(hid)? else {
                return Ok(untouched());
            };
            let at = self.cfg.clock.now_in(tx)?;
            let t = at.secs();
            let term = match led {
                true => match tx.leadership()? {
                    Some(l) if l.holder == self.id && l.expires_at >= t => Some(l.expires_at),
                    _ => return Ok(ScanAction::Untouched { hid: hid.to_string(), kind: ActionKind::NotLeader }),
                },
                false => None,
            };
            let stale = own.holder == ORPHANED_HOLDER
                || expected.is_some_and(|(h, f)| own.holder != h || own.fence != f)
                || (reason == OrphanReason::LeaseExpired && own.lease_expires_at >= t);
            if stale || tx.status(hid)?.as_deref() != Some(Status::Running.as_str()) {
                return Ok(untouched());
            }
            late_s = match reason {
                OrphanReason::LeaseExpired => Some(t - own.lease_expires_at),
                OrphanReason::Stalled => {
                    tx.progress(hid)?.and_then(|p| p.last_checkpoint_at).map(|at| t - (at + self.cfg.stall_timeout_s))
                }
                OrphanReason::WorkerDied => None,
            };
            let previous = (own.holder.clone(), own.fence);
            orphaned_at = Some(t);
            own.holder = ORPHANED_HOLDER.into();
            own.fence = own.fence.next();
            own.lease_expires_at = 0.0;
            tx.update_ownership(&own, at)?;
            let mut env = load(tx, hid)?;
            claimed_at = env.pointer("/execution/claimed_at").and_then(Value::as_f64);
            let checkpoints = tx.next_seq(hid)?;
            let verdict = orphan_envelope(&mut env, reason.as_str(), reason == OrphanReason::Stalled, t)?;
            if !verdict.dead_lettered {
                tx.announce_orphan(hid)?;
            }
            save(tx, hid, &env, cfg)?;
            crate::failpoint::hit("orphan.in_tx");
            // As a worker's write (runner/live_lease.rs): a leader stopped
            // inside this transaction past its term must not commit an
            // orphan stamped after it; rolled back, it is NotLeader.
            if let Some(late) = term.map(|until| orphan_outcome::term_lapsed(tx, cfg, until)).transpose()?.flatten() {
                lapsed = true;
                return Err(orphan_outcome::lapsed(hid, late));
            }
            Ok(ScanAction::Orphan(Orphaning {
                hid: hid.to_string(),
                checkpoints,
                reason,
                previous_holder: previous.0,
                previous_fence: previous.1,
                fence: own.fence,
                dead_lettered: verdict.dead_lettered,
                attempt: verdict.attempt,
                stall_count: verdict.stall_count,
            }))
        });
        let out = match out {
            Err(_) if lapsed => ScanAction::Untouched { hid: hid.to_string(), kind: ActionKind::NotLeader },
            r => r?,
        };
        self.count_orphan(&out, hid, reason, late_s, died_after);
        if let (true, ScanAction::Orphan(o)) = (traced, &out) {
            // Tests stop the supervisor here: the spans must not depend on
            // when, after the commit, they are emitted.
            crate::failpoint::hit("orphan.before_trace");
            let at = Stamps { claimed_at, orphaned_at, orphan_start_ns };
            self.trace_death(store, o, reason, at);
        }
        Ok(out)
    }

    /// Fail a running or orphaned handoff closed for an exhausted budget.
    pub fn kill_on_budget(&self, hid: &str) -> Result<ScanAction> {
        let cfg = &self.cfg;
        let untouched = |kind| ScanAction::Untouched { hid: hid.to_string(), kind };
        let out = self.write(|tx| {
            let mut env = load(tx, hid)?;
            let Some(next) = Status::of(&env).and_then(|s| s.after(Op::BudgetKill)) else {
                return Ok(untouched(ActionKind::AlreadyTerminal));
            };
            let t = self.cfg.clock.now_in(tx)?.secs();
            let Some(reason) = budget_violation(&env, t) else {
                return Ok(untouched(ActionKind::WithinBudget));
            };
            let ex = env
                .get_mut("execution")
                .and_then(Value::as_object_mut)
                .ok_or_else(|| Error::validation("envelope has no execution object"))?;
            ex.insert("status".into(), json!(next.as_str()));
            ex.insert("error".into(), json!(format!("budget exhausted: {reason}")));
            ex.insert("failed_at".into(), json::float(t));
            save(tx, hid, &env, cfg)?;
            // Fence the worker out so nothing keeps billing against it.
            tx.delete_ownership(hid)?;
            Ok(ScanAction::BudgetKilled { hid: hid.to_string(), reasons: vec![reason] })
        })?;
        if out.kind() == ActionKind::BudgetKilled {
            bump(&self.metrics.budget_kills);
            bump(&self.metrics.dlq[DeadLetter::Budget as usize]);
        }
        Ok(out)
    }

    /// One pass. Only the leader acts; followers return an empty list.
    pub fn scan(&self) -> Result<Vec<ScanAction>> {
        self.pass(None)
    }

    /// [`Supervisor::scan`], handing each action to `on_action` as soon as
    /// the transaction that made it committed, before the pass goes on (a
    /// supervisor killed mid-pass has reported everything it committed).
    pub fn scan_with(&self, on_action: &OnAction<'_>) -> Result<Vec<ScanAction>> {
        self.pass(Some(on_action))
    }

    fn pass(&self, on_action: Option<&OnAction<'_>>) -> Result<Vec<ScanAction>> {
        if !self.ensure_leadership()? {
            return Ok(Vec::new());
        }
        bump(&self.metrics.scans);
        let started = Instant::now();
        let out = self.led_pass(on_action);
        self.cfg.hooks.emit(events::Event::Pass { took: started.elapsed() });
        out
    }

    /// The leader's part of [`Supervisor::pass`].
    fn led_pass(&self, on_action: Option<&OnAction<'_>>) -> Result<Vec<ScanAction>> {
        let mut actions = Actions::new(on_action);
        // One read transaction gathers the work (no write lock held while
        // envelopes are read); each action is then its own CAS. Expired
        // leases come from an index; budgets and stalls are checked for
        // what changed or fell due since the last pass (see [`tracker`]).
        let epoch = self.metrics.leadership_changes.load(Ordering::Relaxed);
        let (t, plan, expired, running, stall_deadline, stalled, approvals_due) =
            with_tx(self.store.as_ref(), Mode::Read, |tx| {
                let t = self.cfg.clock.now_in(tx)?;
                let expired = tx.expired_leases(t)?;
                let plan = self.tracker.lock().unwrap_or_else(|p| p.into_inner()).plan(tx, t.secs(), epoch)?;
                let (cutoff, repeats) = (t - self.cfg.stall_timeout_s, self.cfg.stall_max_repeats);
                let (running, stalled) = match &plan {
                    tracker::Plan::Full => (tx.running_budgets()?, tx.stalled(t, cutoff, repeats)?),
                    tracker::Plan::Only { hids, .. } => {
                        (tx.running_budgets_of(hids)?, tx.stalled_of(hids, t, cutoff, repeats)?)
                    }
                };
                let mut stall_deadline = std::collections::HashMap::new();
                for u in &running {
                    if let Some(at) = tx.progress(&u.hid)?.and_then(|p| p.last_checkpoint_at) {
                        stall_deadline.insert(u.hid.clone(), at + self.cfg.stall_timeout_s);
                    }
                }
                let approvals_due = tx.approvals_to_expire(t)?;
                Ok((t.secs(), plan, expired, running, stall_deadline, stalled, approvals_due))
            })?;
        let over_budget: Vec<String> =
            running.iter().filter(|u| u.violation(t).is_some()).map(|u| u.hid.clone()).collect();
        let recheck: Vec<String> = over_budget.iter().chain(&stalled).cloned().collect();
        self.tracker.lock().unwrap_or_else(|p| p.into_inner()).commit(
            plan,
            t,
            epoch,
            &running,
            &stall_deadline,
            &recheck,
        );
        let expired_approvals = if approvals_due {
            with_tx(self.store.as_ref(), Mode::Write, |tx| {
                let t = self.cfg.clock.now_in(tx)?;
                tx.expire_approvals(t)
            })?
        } else {
            0
        };
        // A failure that belongs to one row quarantines that row; the scan
        // goes on. A store-level failure (locked, I/O) still fails the scan.
        let mut flagged = BTreeMap::new();
        for hid in &expired {
            per_row(&mut flagged, &mut actions, hid, self.orphan_led(hid, OrphanReason::LeaseExpired))?;
        }
        self.dead_workers_into(&mut flagged, &mut actions)?;
        for hid in &over_budget {
            per_row(&mut flagged, &mut actions, hid, self.kill_on_budget(hid))?;
        }
        for hid in &stalled {
            per_row(&mut flagged, &mut actions, hid, self.orphan_led(hid, OrphanReason::Stalled))?;
        }
        self.consistency_pass_due(&mut flagged, &mut actions)?;
        if expired_approvals > 0 {
            tracing::info!(n = expired_approvals, "expired stale approvals");
        }
        self.report_quarantine(flagged, &mut actions);
        Ok(actions.into_vec())
    }

    /// Scan every `supervisor_scan_s` until `duration` elapses or `stop` is
    /// set; the scan in flight finishes first. Between scans the leader
    /// polls liveness tokens every `liveness_poll` so a dead worker on this
    /// host is orphaned within milliseconds, and followers poll the leader's
    /// token so a dead leader is replaced as fast. The supervisor publishes
    /// its own token for as long as it watches. On return, leadership is
    /// resigned. Each action goes to `on_action` as soon as the transaction
    /// that made it committed (from the scan's thread or the liveness
    /// poll's); all of them are returned as well.
    pub fn watch(
        &self,
        duration: Option<Duration>,
        stop: &AtomicBool,
        on_action: impl Fn(&ScanAction) + Sync,
    ) -> Result<Vec<ScanAction>> {
        self.watch_events(duration, stop, |e| {
            if let Event::Action(a) = e {
                on_action(a)
            }
        })
    }

    /// [`Supervisor::watch`], telling `on_event` of every action and of
    /// every finished pass (a signal to wait on: the leader no longer
    /// writes on every pass).
    pub fn watch_events(
        &self,
        duration: Option<Duration>,
        stop: &AtomicBool,
        on_event: impl Fn(Event<'_>) + Sync,
    ) -> Result<Vec<ScanAction>> {
        let on_action = |a: &ScanAction| on_event(Event::Action(a));
        let end = duration.and_then(|d| Instant::now().checked_add(d));
        let scan_every =
            config::positive_duration("DHP_SUPERVISOR_SCAN_S", self.cfg.supervisor_scan_s, config::MAX_KNOB_S)?;
        // Passes that reached the store, and the last failure: a watch in
        // which every pass failed returns that failure, not Ok.
        let (mut ok_passes, mut last_err) = (0u64, None);
        let poll = self.cfg.liveness_poll;
        let mut all = Vec::new();
        let mut next_scan = Instant::now();
        let _token: Option<Box<dyn std::any::Any>> = match &self.root {
            Some(root) => liveness::publish(root, &self.id)
                .map_err(|e| tracing::warn!(error = %e, "supervising without a liveness token (TTL-only failover)"))
                .ok()
                .map(|t| Box::new(t) as Box<dyn std::any::Any>),
            None => self
                .store
                .publish_liveness(&self.id)
                .map_err(|e| tracing::warn!(error = %e, "supervising without a liveness token (TTL-only failover)"))
                .ok()
                .flatten()
                .map(|t| t as Box<dyn std::any::Any>),
        };
        let done = AtomicBool::new(false);
        // The liveness poll runs on its own thread and connection, so a
        // long scan (a new leader's full pass) never holds it up; it
        // reports its orphans itself and hands them over through `found`.
        let live_store = self.liveness_store();
        let (found_tx, found) = std::sync::mpsc::channel::<Vec<ScanAction>>();
        std::thread::scope(|sc| {
            if let Some(root) = &self.root {
                let done = &done;
                sc.spawn(move || self.stalled_writer_watchdog(root, done));
            }
            {
                let (done, live_store, on_action) = (&done, live_store.as_ref(), &on_action);
                sc.spawn(move || self.liveness_loop(live_store, poll, done, found_tx, on_action));
            }
            while !stop.load(Ordering::SeqCst) && end.is_none_or(|e| Instant::now() < e) {
                let now_i = Instant::now();
                let due = now_i >= next_scan || (!self.is_leader() && self.leader_gone().unwrap_or(false));
                let res = if due {
                    next_scan = now_i + scan_every;
                    self.scan_with(&on_action)
                } else {
                    Ok(Vec::new())
                };
                all.extend(found.try_iter().flatten());
                match res {
                    Ok(acts) => {
                        if due {
                            ok_passes += 1;
                            on_event(Event::Pass { n: ok_passes, leader: self.is_leader() });
                        }
                        all.extend(acts);
                    }
                    Err(e) => {
                        bump(&self.metrics.errors);
                        tracing::error!(supervisor = %self.id, error = %e, "scan failed");
                        last_err = Some(e);
                        // The store is unreachable (a database restarting):
                        // retry ten times a second, not at the poll rate.
                        std::thread::sleep(Duration::from_millis(100));
                    }
                }
                std::thread::sleep(poll.min(scan_every));
            }
            done.store(true, Ordering::SeqCst);
        });
        // Orphans the poll made after the last drain.
        all.extend(found.try_iter().flatten());
        if let Err(e) = self.resign() {
            tracing::warn!(error = %e, "could not resign leadership");
        }
        match last_err {
            Some(e) if ok_passes == 0 => Err(e),
            _ => Ok(all),
        }
    }

    /// SIGKILL a stopped DHP process (it holds a liveness token of this
    /// store) that has held the store's write lock for a lease TTL: while
    /// it is paused nobody can commit, not even the orphan that would fence
    /// it out. Any supervisor does this, leader or not, since a stalled
    /// store also blocks leader election. See [`liveness::stalled_writer`].
    fn stalled_writer_watchdog(&self, root: &Path, done: &AtomicBool) {
        let Ok(limit) = config::duration_from_secs("lease TTL", self.cfg.lease_ttl_s(), f64::MAX) else {
            tracing::error!(ttl = self.cfg.lease_ttl_s(), "no stalled-writer watchdog: lease TTL out of range");
            return;
        };
        let me = std::process::id() as i32;
        let mut seen: Option<(i32, Instant)> = None;
        while !done.load(Ordering::SeqCst) {
            match liveness::stalled_writer(root) {
                Some((pid, who)) if pid != me => {
                    let since = match seen {
                        Some((p, t)) if p == pid => t,
                        _ => seen.insert((pid, Instant::now())).1,
                    };
                    if since.elapsed() >= limit {
                        tracing::warn!(pid, holder = %who, "killing a stopped process that holds the store's write lock");
                        let _ =
                            nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
                        self.metrics.stalled_writers_killed.fetch_add(1, Ordering::Relaxed);
                        seen = None;
                    }
                }
                _ => seen = None,
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Health snapshot for monitoring.
    pub fn health(&self) -> Result<Value> {
        let (leader, pending) = with_tx(self.store.as_ref(), Mode::Read, |tx| {
            let l = tx.leadership()?;
            let n = tx.hids_with_status(Status::Pending)?.len() + tx.hids_with_status(Status::Orphaned)?.len();
            Ok((l, n))
        })?;
        Ok(json!({
            "supervisor_id": self.id,
            "is_leader": self.is_leader(),
            "leader": leader.map(|l| json!({"holder": l.holder, "expires_at": json::float(l.expires_at)})),
            "metrics": self.metrics.snapshot(),
            "pending_work": pending,
            "uptime_s": self.started.elapsed().as_secs_f64(),
        }))
    }
}

/// What [`orphan_envelope`] decided.
pub(super) struct Verdict {
    /// Failed (DLQ) rather than orphaned.
    pub(super) dead_lettered: bool,
    /// The envelope's attempt count.
    pub(super) attempt: i64,
    /// The new stall count, when a stall dead-lettered.
    pub(super) stall_count: Option<i64>,
}

/// The envelope side of an orphan (the reference's `Supervisor3.orphan`):
/// status orphaned, or failed (DLQ) when attempts — or, for a stall, stall
/// retries — are exhausted.
pub(super) fn orphan_envelope(env: &mut Value, reason: &str, stalled: bool, t: f64) -> Result<Verdict> {
    let max_att = envelope::budget_f64(env, "max_attempts").unwrap_or(3.0) as i64;
    let max_stalls = env.pointer("/contract/max_stall_retries").and_then(Value::as_i64).unwrap_or(2);
    let ex = env
        .get_mut("execution")
        .and_then(Value::as_object_mut)
        .ok_or_else(|| Error::validation("envelope has no execution object"))?;
    let attempt = ex.get("attempt").and_then(Value::as_i64).unwrap_or(0);
    if attempt >= max_att {
        ex.insert("status".into(), json!(Status::Failed.as_str()));
        ex.insert("error".into(), json!(format!("{reason}; max_attempts={max_att} exhausted → DLQ")));
        return Ok(Verdict { dead_lettered: true, attempt, stall_count: None });
    }
    let stall_count = ex.get("stall_count").and_then(Value::as_i64).unwrap_or(0);
    if stalled && stall_count + 1 > max_stalls {
        ex.insert("stall_count".into(), json!(stall_count + 1));
        ex.insert("status".into(), json!(Status::Failed.as_str()));
        ex.insert(
            "error".into(),
            json!(format!("livelock: stalled {}x — bad plan, not transient → DLQ", stall_count + 1)),
        );
        return Ok(Verdict { dead_lettered: true, attempt, stall_count: Some(stall_count + 1) });
    }
    ex.insert("stall_count".into(), json!(if stalled { stall_count + 1 } else { 0 }));
    ex.insert("status".into(), json!(Status::Orphaned.as_str()));
    ex.insert("orphaned_at".into(), json::float(t));
    ex.insert("orphan_reason".into(), json!(reason));
    Ok(Verdict { dead_lettered: false, attempt, stall_count: None })
}
