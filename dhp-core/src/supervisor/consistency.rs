//! The consistency pass: handoffs' statuses beside their ownership rows,
//! classified by [`super::repair::classify`]; torn states repaired (one
//! transaction each), unreadable rows flagged for quarantine. Full passes
//! are rare; the others read only what was written (see
//! [`Supervisor::consistency_pass_due`]).

use super::actions::Actions;
use super::quarantine::per_row;
use super::repair::{classify, Finding, Torn};
use super::tracker::{FULL_EVERY, SLACK_S};
use super::{orphan_envelope, ActionKind, OrphanReason, Repair, ScanAction, Supervisor};
use crate::envelope::{self, ORPHANED_HOLDER};
use crate::error::{Error, Result};
use crate::id;
use crate::runner::{load, save};
use crate::status::Status;
use crate::store::{with_tx, Mode, Ownership, Pairing, Tx};
use crate::store_time::StoreTime;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// What the last consistency pass left: when it ran, for which leadership
/// term, and the rows that were not consistent (looked at again next time,
/// whether or not they are written: a `Wait` becomes torn as time passes).
#[derive(Debug, Clone)]
pub(super) struct LastPass {
    /// When it ran (wall clock: the cadence).
    at: Instant,
    /// When the last full pass ran.
    full_at: Instant,
    /// Store time at its start: the next pass reads rows written since.
    t: StoreTime,
    /// Leadership epoch it belongs to.
    epoch: u64,
    /// Quarantined rows, hid → reason.
    found: BTreeMap<String, String>,
    /// Rows that were not consistent (quarantined ones included).
    watch: BTreeSet<String>,
}

impl Supervisor {
    /// Run the consistency pass on the first scan and then at most once per
    /// lease TTL (its repairs wait a lease TTL anyway). In between, what it
    /// last quarantined stays quarantined.
    ///
    /// A full pass reads every row that can be inconsistent; it runs on a
    /// leader's first pass, after a leadership change and every
    /// [`FULL_EVERY`]. The passes in between read only the rows written
    /// since the previous one (re-read from [`SLACK_S`] before it, as the
    /// scan's tracker does) and the rows the previous one found not
    /// consistent: a consistent row becomes torn only through a write —
    /// every torn state another implementation leaves ends with one — so a
    /// pass with nothing written reads nothing per handoff.
    pub(super) fn consistency_pass_due(
        &self,
        flagged: &mut BTreeMap<String, String>,
        actions: &mut Actions<'_>,
    ) -> Result<()> {
        let ttl = self.cfg.lease_ttl_s();
        let every = Duration::from_secs_f64(ttl);
        let last = self.last_pass.lock().unwrap_or_else(|p| p.into_inner()).clone();
        // Due after a lease TTL of wall time or of protocol time (a manual
        // clock's, in tests).
        let now = self.cfg.clock.now();
        if let Some(l) = last.as_ref().filter(|l| l.at.elapsed() < every && now - l.t.secs() < ttl) {
            for (hid, reason) in &l.found {
                flagged.entry(hid.clone()).or_insert_with(|| reason.clone());
            }
            return Ok(());
        }
        let epoch = self.metrics.leadership_changes.load(Ordering::Relaxed);
        let prev = last.filter(|l| l.epoch == epoch && l.full_at.elapsed() < FULL_EVERY);
        let (t, pairs) = with_tx(self.store.as_ref(), Mode::Read, |tx| {
            let t = self.cfg.clock.now_in(tx)?;
            let Some(prev) = &prev else { return Ok((t, None)) };
            let Some(changes) = tx.changed_since(prev.t - SLACK_S)? else { return Ok((t, None)) };
            let mut hids: BTreeSet<String> = changes.into_iter().map(|(h, _)| h).collect();
            hids.extend(prev.watch.iter().cloned());
            let hids: Vec<String> = hids.into_iter().collect();
            Ok((t, Some(tx.pairings_of(&hids)?)))
        })?;
        let full = pairs.is_none();
        let pairs = match pairs {
            Some(p) => p,
            None => with_tx(self.store.as_ref(), Mode::Read, |tx| tx.pairings())?,
        };
        let mut found = BTreeMap::new();
        let mut watch = self.consistency_pass(pairs, &mut found, actions)?;
        watch.extend(found.keys().cloned());
        for (hid, reason) in &found {
            flagged.entry(hid.clone()).or_insert_with(|| reason.clone());
        }
        let now = Instant::now();
        let full_at = match (&prev, full) {
            (Some(p), false) => p.full_at,
            _ => now,
        };
        *self.last_pass.lock().unwrap_or_else(|p| p.into_inner()) =
            Some(LastPass { at: now, full_at, t, epoch, found, watch });
        Ok(())
    }

    /// Classify `pairs` (see [`repair`]) and repair or quarantine the torn
    /// and unreadable ones; each repair is its own transaction that
    /// re-checks the combination under the write lock. Returns the hids
    /// that were not consistent.
    fn consistency_pass(
        &self,
        pairs: Vec<Pairing>,
        flagged: &mut BTreeMap<String, String>,
        actions: &mut Actions<'_>,
    ) -> Result<BTreeSet<String>> {
        let settle = self.cfg.lease_ttl_s();
        let mut unsettled = BTreeSet::new();
        for p in pairs {
            let status = match &p.status {
                Some(s) => s.clone(),
                // The backend could not read it: parse the envelope here.
                None => match with_tx(self.store.as_ref(), Mode::Read, |tx| status_text(tx, &p.hid)) {
                    Ok(s) => s,
                    Err(e) => {
                        unsettled.insert(p.hid.clone());
                        per_row(flagged, actions, &p.hid, Err(e))?;
                        continue;
                    }
                },
            };
            let finding = classify(&status, p.ownership.as_ref(), p.ownership_updated_at, self.cfg.clock.now(), settle);
            if finding != Finding::Consistent {
                unsettled.insert(p.hid.clone());
            }
            match finding {
                Finding::Consistent | Finding::Wait => {}
                Finding::Quarantine(reason) => {
                    flagged.insert(p.hid.clone(), reason);
                }
                // Reached only when the backend's own query could not read
                // the status (the expired-lease query then missed it too).
                Finding::LeaseExpired => {
                    per_row(flagged, actions, &p.hid, self.orphan_led(&p.hid, OrphanReason::LeaseExpired))?
                }
                Finding::Torn(kind) => per_row(flagged, actions, &p.hid, self.repair(&p, &status, kind))?,
            }
        }
        Ok(unsettled)
    }

    /// Repair one torn handoff in one transaction, only if its status and
    /// ownership row are still exactly what the scan saw.
    pub fn repair(&self, seen: &Pairing, seen_status: &str, kind: Torn) -> Result<ScanAction> {
        let hid = seen.hid.as_str();
        envelope::check_hid(hid)?;
        let cfg = &self.cfg;
        let skipped = || ScanAction::Untouched { hid: hid.to_string(), kind: ActionKind::RepairSkipped };
        let out = self.write(|tx| {
            let own = tx.ownership(hid)?;
            let mut env = load(tx, hid)?;
            let status = status_of_value(&env);
            if own != seen.ownership || status != seen_status {
                return Ok(skipped());
            }
            // A torn state is a combination of a known status (the others
            // are quarantined before a repair is chosen).
            let status_before: Status = status.parse()?;
            let at = self.cfg.clock.store_time();
            let t = at.secs();
            let mut orphan_env = false;
            match kind {
                Torn::Complete => tx.delete_ownership(hid)?,
                Torn::Claim | Torn::Orphan => {
                    // Take it from the (expired) holder: tombstone, fence+1.
                    let mut o = own.clone().ok_or_else(|| Error::validation("ownership row vanished"))?;
                    o.holder = ORPHANED_HOLDER.into();
                    o.fence = o.fence.next();
                    o.lease_expires_at = 0.0;
                    tx.update_ownership(&o, at)?;
                    orphan_env = kind == Torn::Claim;
                }
                Torn::Release | Torn::OrphanUnwritten => orphan_env = true,
                Torn::LostRow => {
                    // The row is gone, and its fence with it; the envelope
                    // records the last fence a claim or recover issued.
                    let last = env.pointer("/execution/fence").and_then(Value::as_i64).unwrap_or(0).max(0);
                    let o = Ownership {
                        hid: hid.to_string(),
                        holder: ORPHANED_HOLDER.into(),
                        fence: crate::lease::Fence::new(last).next(),
                        lease_expires_at: 0.0,
                        heartbeat_interval_s: cfg.lease_interval_s,
                        max_missed: cfg.lease_max_missed,
                    };
                    if !tx.insert_ownership(&o, at)? {
                        return Ok(skipped());
                    }
                    orphan_env = status_before == Status::Running;
                }
            }
            let (status, attempt) = if orphan_env {
                let verdict = orphan_envelope(&mut env, kind.as_str(), false, t)?;
                save(tx, hid, &env, cfg)?;
                (if verdict.dead_lettered { Status::Failed } else { Status::Orphaned }, Some(verdict.attempt))
            } else {
                (status_before, None)
            };
            let after = tx.ownership(hid)?;
            Ok(ScanAction::Repaired(Repair {
                hid: hid.to_string(),
                torn: kind,
                status_before,
                holder_before: own.as_ref().map(|o| o.holder.clone()),
                fence_before: own.as_ref().map(|o| o.fence),
                attempt,
                status,
                holder: after.as_ref().map(|o| o.holder.clone()),
                fence: after.as_ref().map(|o| o.fence),
            }))
        })?;
        if let ScanAction::Repaired(r) = &out {
            self.metrics.repairs.fetch_add(1, Ordering::Relaxed);
            if r.status == Status::Failed && r.status_before != Status::Failed {
                self.metrics.dlq[super::DLQ_REPAIR].fetch_add(1, Ordering::Relaxed);
            }
            tracing::warn!(hid = id::short(hid), torn = kind.as_str(), "repaired a torn state");
        }
        Ok(out)
    }
}

/// `execution.status` as text: the string, the JSON of a non-string value
/// (so that it classifies as unknown), or "" when absent.
fn status_of_value(env: &Value) -> String {
    match env.pointer("/execution/status") {
        None => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
    }
}

fn status_text(tx: &mut dyn Tx, hid: &str) -> Result<String> {
    Ok(status_of_value(&load(tx, hid)?))
}
