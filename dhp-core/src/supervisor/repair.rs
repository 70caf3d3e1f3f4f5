//! Torn states: an envelope status that contradicts the ownership row.
//!
//! Our runner and supervisor write the envelope and the ownership row in
//! one transaction, so they never leave such a state. The reference runs
//! its store in autocommit and writes the two in separate statements; a
//! crash or a race between them leaves a combination that no operation
//! accepts (`recover`: "not orphaned", `claim`: "status is orphaned") and
//! that no supervisor orphans, so the handoff is stuck for good.
//! [`classify`] names every combination of status × ownership row and the
//! supervisor repairs the torn ones ([`Torn`]) in one transaction each. The
//! full table, with the operation that produces each state, is in
//! `docs/torn-states.md`.
//!
//! Rules of every repair: the fence only ever goes up, and it goes up
//! whenever a holder loses the handoff; a row held by a live lease is never
//! touched while the lease lasts (its holder may be a reference process
//! between its two writes); a tombstone written moments ago is left alone
//! for a lease TTL (a reference supervisor may be between `force_orphan`
//! and its envelope write).

use crate::envelope::ORPHANED_HOLDER;
use crate::status::Status;
use crate::store::Ownership;

/// The ownership side of a combination.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowKind {
    /// No ownership row.
    None,
    /// A holder whose lease has not run out.
    Live,
    /// A holder whose lease ran out.
    Expired,
    /// The `__orphaned__` tombstone.
    Tombstone,
}

impl RowKind {
    /// The kind of `own` at store time `now`.
    pub fn of(own: Option<&Ownership>, now: f64) -> Self {
        match own {
            None => RowKind::None,
            Some(o) if o.holder == ORPHANED_HOLDER => RowKind::Tombstone,
            Some(o) if o.lease_expires_at < now => RowKind::Expired,
            Some(_) => RowKind::Live,
        }
    }

    /// The name the quarantine and repair reports use.
    pub fn as_str(self) -> &'static str {
        match self {
            RowKind::None => "none",
            RowKind::Live => "live-holder",
            RowKind::Expired => "expired-holder",
            RowKind::Tombstone => "tombstone",
        }
    }
}

/// A torn combination and, by its kind, its repair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Torn {
    /// pending + expired holder: a claim that inserted its row and never
    /// wrote `running` (or a release that wrote `pending` and never
    /// deleted its row). Repair: tombstone, fence+1, status orphaned (or
    /// DLQ at max_attempts), so `recover` continues.
    Claim,
    /// pending + tombstone: a release whose row delete missed because an
    /// orphan moved the row first. Repair: status orphaned (or DLQ).
    Release,
    /// running + tombstone: an orphan that moved the row and never wrote
    /// its envelope. Repair: finish it — status orphaned (or DLQ).
    OrphanUnwritten,
    /// orphaned + expired holder: a recover that took the row and never
    /// wrote `running`, or a late orphan write that overwrote a finished
    /// recover (issue 11). Repair: tombstone, fence+1; status stays
    /// orphaned, so `recover` continues.
    Orphan,
    /// running or orphaned + no row: a late envelope write after the row
    /// was deleted (budget kill, complete). Repair: a tombstone above the
    /// envelope's fence; status orphaned (running goes through the orphan
    /// rule, so it may DLQ).
    LostRow,
    /// completed or failed + a row: a complete (or fail) that wrote its
    /// envelope and never deleted its row. Repair: delete the row.
    Complete,
}

impl Torn {
    /// Every torn combination.
    pub const ALL: [Torn; 6] =
        [Torn::Claim, Torn::Release, Torn::OrphanUnwritten, Torn::Orphan, Torn::LostRow, Torn::Complete];

    /// The name the repair report uses.
    pub fn as_str(self) -> &'static str {
        match self {
            Torn::Claim => "torn-claim",
            Torn::Release => "torn-release",
            Torn::OrphanUnwritten => "torn-orphan-unwritten",
            Torn::Orphan => "torn-orphan",
            Torn::LostRow => "lost-ownership-row",
            Torn::Complete => "torn-complete",
        }
    }
}

/// What the consistency pass does with one combination.
#[derive(Debug, Clone, PartialEq)]
pub enum Finding {
    /// A state some operation leaves on purpose.
    Consistent,
    /// Possibly an operation between its two writes: look again later.
    Wait,
    /// Running with an expired lease: the ordinary orphan path.
    LeaseExpired,
    /// A torn combination: repair it.
    Torn(Torn),
    /// Not a state of DHP 1.3: report it, touch nothing.
    Quarantine(String),
}

/// Classify `status` (the envelope's text: anything but a [`Status`] of
/// DHP 1.3 is quarantined) × `own`. `owned_since` is when the row was last
/// written (if known); a tombstone younger than `settle_s` waits.
pub fn classify(status: &str, own: Option<&Ownership>, owned_since: Option<f64>, now: f64, settle_s: f64) -> Finding {
    use Finding::*;
    use RowKind as R;
    use Status::*;
    let Ok(status) = status.parse::<Status>() else {
        return Quarantine(if status.is_empty() {
            "envelope has no execution.status string".into()
        } else {
            format!("unknown status {status:?}")
        });
    };
    let row = RowKind::of(own, now);
    let settled = owned_since.is_none_or(|t| now - t >= settle_s);
    match (status, row) {
        (Suspended, _) => Consistent,
        (Pending, R::None) | (Completed, R::None) | (Failed, R::None) => Consistent,
        (Running, R::Live) | (Orphaned, R::Tombstone) | (Failed, R::Tombstone) => Consistent,
        (Running, R::Expired) => LeaseExpired,
        (Pending, R::Live) | (Orphaned, R::Live) => Wait,
        (Pending, R::Expired) => Torn(self::Torn::Claim),
        (Orphaned, R::Expired) => Torn(self::Torn::Orphan),
        (Pending, R::Tombstone) if settled => Torn(self::Torn::Release),
        (Running, R::Tombstone) if settled => Torn(self::Torn::OrphanUnwritten),
        (Pending, R::Tombstone) | (Running, R::Tombstone) => Wait,
        (Running, R::None) | (Orphaned, R::None) => Torn(self::Torn::LostRow),
        (Completed, _) | (Failed, _) => Torn(self::Torn::Complete),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(holder: &str, expires: f64) -> Ownership {
        Ownership {
            hid: "h".into(),
            holder: holder.into(),
            fence: crate::lease::Fence::new(3),
            lease_expires_at: expires,
            heartbeat_interval_s: 2.0,
            max_missed: 3,
        }
    }

    #[test]
    fn every_combination_has_a_verdict() {
        let now = 1000.0;
        let rows = [None, Some(row("w", 2000.0)), Some(row("w", 10.0)), Some(row(ORPHANED_HOLDER, 0.0))];
        let mut n = 0;
        for st in Status::ALL.iter().map(|s| s.as_str()).chain(["weird", "", "Running"]) {
            for r in &rows {
                let f = classify(st, r.as_ref(), Some(0.0), now, 6.0);
                let known = st.parse::<Status>().is_ok();
                assert_eq!(matches!(&f, Finding::Quarantine(_)), !known, "{st} {r:?}: {f:?}");
                n += 1;
            }
        }
        assert_eq!(n, 36);
    }

    #[test]
    fn fresh_tombstones_wait_and_live_leases_are_never_repaired() {
        let now = 1000.0;
        let tomb = row(ORPHANED_HOLDER, 0.0);
        let running = Status::Running.as_str();
        assert_eq!(classify(running, Some(&tomb), Some(now - 1.0), now, 6.0), Finding::Wait);
        assert_eq!(classify(running, Some(&tomb), Some(now - 7.0), now, 6.0), Finding::Torn(Torn::OrphanUnwritten));
        for st in [Status::Pending.as_str(), Status::Orphaned.as_str()] {
            assert_eq!(classify(st, Some(&row("w", now + 1.0)), None, now, 6.0), Finding::Wait);
        }
    }
}
