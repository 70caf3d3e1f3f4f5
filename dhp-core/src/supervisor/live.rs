//! The liveness poll: orphan the handoffs of worker processes that died.
//!
//! For a directory store the poll tests each token file under `live/`
//! once (one `flock` attempt per worker process) and touches the store
//! only when a token is free: then it reads that holder's ownership rows
//! (an index on `holder`), orphans them, and removes the token file, so a
//! poll with nobody dead costs the same at 100 or 100,000 running handoffs
//! (docs/scale.md). For PostgreSQL the backend's own tokens are tested for
//! every holder in one query.

use super::actions::{Actions, OnAction};
use super::quarantine::per_row;
use super::{OrphanReason, ScanAction, Supervisor};
use crate::envelope::ORPHANED_HOLDER;
use crate::error::Result;
use crate::failpoint;
use crate::liveness;
use crate::store::{with_tx, Backend, Mode, SqliteStore};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::Duration;

impl Supervisor {
    /// Orphan the handoffs whose holder's liveness token dropped (the
    /// process died: on this host for a directory store, anywhere for
    /// PostgreSQL). Holders without a token are left to lease expiry.
    pub fn dead_workers(&self) -> Result<Vec<ScanAction>> {
        // Rows that fail here are reported by the next scan.
        let mut acts = Actions::new(None);
        self.dead_workers_in(self.store.as_ref(), &mut BTreeMap::new(), &mut acts)?;
        Ok(acts.into_vec())
    }

    pub(super) fn dead_workers_into(
        &self,
        flagged: &mut BTreeMap<String, String>,
        acts: &mut Actions<'_>,
    ) -> Result<()> {
        self.dead_workers_in(self.store.as_ref(), flagged, acts)
    }

    fn dead_workers_in(
        &self,
        store: &dyn Backend,
        flagged: &mut BTreeMap<String, String>,
        acts: &mut Actions<'_>,
    ) -> Result<()> {
        match &self.root {
            Some(root) => self.dead_by_token(store, root, flagged, acts),
            None => self.dead_by_backend(store, flagged, acts),
        }
    }

    /// Token files: only dead holders cost a store read.
    fn dead_by_token(
        &self,
        store: &dyn Backend,
        root: &Path,
        flagged: &mut BTreeMap<String, String>,
        acts: &mut Actions<'_>,
    ) -> Result<()> {
        let died_after = self.liveness_check_started();
        for holder in liveness::dead_tokens(root) {
            if holder == ORPHANED_HOLDER {
                continue;
            }
            failpoint::hit("liveness.dead_token");
            let (owns, leader) =
                with_tx(store, Mode::Read, |tx| Ok((tx.ownerships_held_by(&holder)?, tx.leadership()?)))?;
            // A free token is not yet a dead process: `publish` creates
            // the file before it locks it, and a restarted process of the
            // same id locks a file its predecessor left. Such a process
            // takes its lock before it claims anything, so if the token is
            // still free after the read, every row read belongs to a
            // process that is gone; if it is held now, the read may hold
            // a live process's rows (chaos seed 3003 orphaned one 2 ms
            // after its recover).
            if !liveness::is_dead(root, &holder) {
                continue;
            }
            let mut settled = true;
            for o in owns {
                let before = flagged.len();
                let expected = Some((o.holder.as_str(), o.fence));
                let res = self.orphan_detected(store, &o.hid, OrphanReason::WorkerDied, expected, died_after, true);
                per_row(flagged, acts, &o.hid, res)?;
                settled &= flagged.len() == before;
            }
            // A dead process commits nothing more, and this read ended
            // before the token was found free again: every row it held was
            // seen. Its token is no longer needed (unless a row could not be
            // orphaned, or it is named as leader, where a follower still
            // looks for it).
            if settled && leader.is_none_or(|l| l.holder != holder) {
                liveness::reap(root, &holder);
            }
        }
        Ok(())
    }

    /// The backend's tokens (PostgreSQL): every holder in one query.
    fn dead_by_backend(
        &self,
        store: &dyn Backend,
        flagged: &mut BTreeMap<String, String>,
        acts: &mut Actions<'_>,
    ) -> Result<()> {
        let died_after = self.liveness_check_started();
        let (owns, dead, leader) = with_tx(store, Mode::Read, |tx| {
            let owns = tx.held_ownerships()?;
            let mut holders: Vec<String> = owns.iter().map(|o| o.holder.clone()).collect();
            holders.sort();
            holders.dedup();
            let dead = tx.dead_holders(&holders)?;
            Ok((owns, dead, tx.leadership()?))
        })?;
        let mut unsettled = std::collections::BTreeSet::new();
        for o in owns.into_iter().filter(|o| o.holder != ORPHANED_HOLDER && dead.contains(&o.holder)) {
            let before = flagged.len();
            let expected = Some((o.holder.as_str(), o.fence));
            let res = self.orphan_detected(store, &o.hid, OrphanReason::WorkerDied, expected, died_after, true);
            per_row(flagged, acts, &o.hid, res)?;
            if flagged.len() != before {
                unsettled.insert(o.holder);
            }
        }
        // As a token file is reaped: a dead holder whose rows are orphaned
        // is no longer listed, so a process reusing its id without a token
        // keeps the lease-only path (its claims are not a dead holder's);
        // one named as leader stays listed, where a follower looks for it.
        let leader = leader.map(|l| l.holder);
        for holder in dead.iter().filter(|h| !unsettled.contains(*h) && leader.as_ref() != Some(*h)) {
            with_tx(store, Mode::Write, |tx| tx.forget_dead_holder(holder))?;
        }
        Ok(())
    }

    /// The store the liveness poll writes through: its own SQLite
    /// connection for a directory store (a scan's long read holds the
    /// supervisor's), the shared backend otherwise.
    pub(super) fn liveness_store(&self) -> Arc<dyn Backend> {
        match self.root.as_deref().map(|r| SqliteStore::open_with(r, false)) {
            Some(Ok(s)) => Arc::new(s),
            _ => self.store.clone(),
        }
    }

    /// While leader, run [`Supervisor::dead_workers`] every `poll` until
    /// `done`; each orphan goes to `on_action` as soon as it committed, and
    /// the poll's actions to `found`.
    pub(super) fn liveness_loop(
        &self,
        store: &dyn Backend,
        poll: Duration,
        done: &AtomicBool,
        found: Sender<Vec<ScanAction>>,
        on_action: &OnAction<'_>,
    ) {
        while !done.load(Ordering::SeqCst) {
            if self.is_leader() {
                let mut acts = Actions::new(Some(on_action));
                let res = self.dead_workers_in(store, &mut BTreeMap::new(), &mut acts);
                let acts = acts.into_vec();
                if !acts.is_empty() {
                    let _ = found.send(acts);
                }
                if let Err(e) = res {
                    self.metrics.errors.fetch_add(1, Ordering::Relaxed);
                    tracing::error!(supervisor = %self.id, error = %e, "liveness poll failed");
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
            std::thread::sleep(poll);
        }
    }
}
