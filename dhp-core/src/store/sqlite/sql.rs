//! The SQL the transactions run more than once or that the plan tests
//! check, and the row mappers.

use crate::store::{Approval, CheckpointRow, Ownership, Pairing};

pub(super) fn ownership_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Ownership> {
    Ok(Ownership {
        hid: r.get(0)?,
        holder: r.get(1)?,
        fence: crate::lease::Fence::new(r.get(2)?),
        lease_expires_at: r.get(3)?,
        heartbeat_interval_s: r.get(4)?,
        max_missed: r.get(5)?,
    })
}

pub(super) fn checkpoint_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<CheckpointRow> {
    Ok(CheckpointRow { seq: r.get(0)?, state_json: r.get(1)?, state_hash: r.get(2)?, at: r.get(3)? })
}

pub(super) fn approval_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Approval> {
    Ok(Approval {
        approval_id: r.get(0)?,
        hid: r.get(1)?,
        action_class: r.get(2)?,
        details_json: r.get(3)?,
        status: {
            let text: String = r.get(4)?;
            text.parse()
                .map_err(|e| rusqlite::Error::FromSqlConversionFailure(4, rusqlite::types::Type::Text, Box::new(e)))?
        },
        created_at: r.get(5)?,
        expires_at: r.get(6)?,
        decided_at: r.get(7)?,
    })
}

pub(super) const OWNERSHIP_COLS: &str = "hid, holder, fence, lease_expires_at, heartbeat_interval_s, max_missed";

/// `execution.status` of `handoffs h`, NULL for a row SQLite cannot read
/// (`json_extract` alone raises "malformed JSON" and would fail a whole
/// query over one bad row). Spelled exactly as the expression of the
/// `dhprs_handoffs_status` index ([`super::ddl::EXTRA_INDEXES_SQL`]), so that queries
/// on it read the index instead of parsing envelopes.
pub(super) const STATUS: &str =
    "(CASE WHEN json_valid(h.envelope_json) THEN json_extract(h.envelope_json, '$.execution.status') END)";

/// The stall condition over `ownership o` and `progress p` (?1 now,
/// ?2 the checkpoint cutoff, ?3 the digest repeats), as the reference's.
pub(super) const STALLED: &str =
    "o.lease_expires_at >= ?1 AND ((p.last_checkpoint_at IS NOT NULL AND p.last_checkpoint_at < ?2) \
                       OR p.digest_repeat_count >= ?3)";
/// One handoff beside its ownership row (?1 the hid), as
/// [`pairing_row`] reads it.
pub(super) const PAIRING_OF: &str = "SELECT h.hid, (CASE WHEN json_valid(h.envelope_json) THEN \
                          json_extract(h.envelope_json, '$.execution.status') END), o.holder, o.fence, \
                          o.lease_expires_at, o.heartbeat_interval_s, o.max_missed, o.updated_at \
                          FROM handoffs h LEFT JOIN ownership o ON o.hid = h.hid WHERE h.hid = ?1";

/// Running handoffs whose lease expired before ?1, through the partial
/// lease index `dhprs_ownership_lease` (CROSS JOIN keeps ownership
/// outermost): leases that have not expired are never read. Rows held by
/// the orphan tombstone are left out; orphaning them again changes
/// nothing. The holder test is spelled as the index's WHERE, which is
/// what lets SQLite use the partial index. No ORDER BY: with one, SQLite
/// walked the whole ownership table in hid order to save a sort (the
/// caller sorts the few rows found).
pub(super) const EXPIRED_LEASES: &str = "SELECT o.hid FROM ownership o \
                              CROSS JOIN handoffs h ON h.hid = o.hid \
                              WHERE o.holder != '__orphaned__' AND o.lease_expires_at < ?1 \
                              AND (CASE WHEN json_valid(h.envelope_json) THEN \
                              json_extract(h.envelope_json, '$.execution.status') END) = 'running'";

/// Rows written at or after ?1 (?2: the same time as the reference's ISO
/// text), four covering index ranges, no table reads: handoffs and
/// ownership rows; progress rows with a repeated digest (the writes that
/// bring a stall closer); and first checkpoints (seq 0, `at` compared as
/// text: one format, UTC, fixed width up to the seconds), which give a
/// handoff its first stall deadline. A later checkpoint only moves that
/// deadline later: the deadline already tracked falls due early, the
/// handoff is checked and not stalled, and its new deadline is read then
/// (`supervisor/tracker.rs`). Leaving those out of the indexes is what
/// keeps a checkpoint from rewriting an index page (docs/scale.md).
pub(super) const CHANGED_SINCE: &str = "SELECT hid, updated_at FROM handoffs WHERE updated_at >= ?1 \
                             UNION ALL SELECT hid, updated_at FROM ownership WHERE updated_at >= ?1 \
                             UNION ALL SELECT hid, updated_at FROM progress \
                             WHERE digest_repeat_count > 0 AND updated_at >= ?1 \
                             UNION ALL SELECT hid, (julianday(at) - 2440587.5) * 86400.0 FROM checkpoints \
                             WHERE seq = 0 AND at >= ?2";

/// Whether a pending approval expired before ?1 (the pending index).
pub(super) const APPROVALS_TO_EXPIRE: &str =
    "SELECT 1 FROM approvals WHERE status='pending' AND expires_at < ?1 LIMIT 1";

pub(super) const APPROVAL_COLS: &str =
    "approval_id, hid, action_class, details_json, status, created_at, expires_at, decided_at";

/// A [`Pairing`] from `hid, status, holder, fence, lease_expires_at,
/// heartbeat_interval_s, max_missed, ownership updated_at` (the ownership
/// columns NULL when there is no row).
pub(super) fn pairing_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Pairing> {
    let status = match r.get::<_, rusqlite::types::Value>(1)? {
        rusqlite::types::Value::Text(s) if !s.is_empty() => Some(s),
        _ => None,
    };
    let holder: Option<String> = r.get(2)?;
    let ownership = match holder {
        None => None,
        Some(holder) => Some(Ownership {
            hid: r.get(0)?,
            holder,
            fence: crate::lease::Fence::new(r.get(3)?),
            lease_expires_at: r.get(4)?,
            heartbeat_interval_s: r.get(5)?,
            max_missed: r.get(6)?,
        }),
    };
    Ok(Pairing { hid: r.get(0)?, status, ownership, ownership_updated_at: r.get(7)? })
}
