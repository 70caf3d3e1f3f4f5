//! The [`Tx`] implementation: storage primitives over one SQLite
//! transaction.

use super::sql::*;
use crate::envelope::{self, ORPHANED_HOLDER};
use crate::error::Result;
use crate::status::{ApprovalOp, Status};
use crate::store::{
    Approval, BudgetUsage, CapabilityAudit, CheckpointRow, Leadership, Ownership, Pairing, Progress, Tx,
};
use crate::store_time::StoreTime;
use rusqlite::{params, Connection, OptionalExtension};
use serde_json::Value;

pub(super) struct SqliteTx<'a> {
    pub(super) c: &'a Connection,
}

impl SqliteTx<'_> {
    fn strings(&self, sql: &str, args: impl rusqlite::Params) -> Result<Vec<String>> {
        let mut st = self.c.prepare_cached(sql)?;
        let rows = st.query_map(args, |r| r.get(0))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Budget usage of the handoffs matching `filter` (SQL over `h`).
    fn budgets(&self, filter: &str, args: impl rusqlite::Params) -> Result<Vec<BudgetUsage>> {
        let mut st = self.c.prepare_cached(&format!(
            "SELECT h.hid, json_extract(h.envelope_json, '$.execution.steps'), \
             json_extract(h.envelope_json, '$.execution.spend_usd'), json_extract(h.envelope_json, '$.execution.claimed_at'), \
             json_extract(h.envelope_json, '$.contract.budget.max_steps'), \
             json_extract(h.envelope_json, '$.contract.budget.max_spend_usd'), \
             json_extract(h.envelope_json, '$.contract.budget.max_wallclock_s') \
             FROM handoffs h WHERE {filter} ORDER BY h.hid"
        ))?;
        // Non-numeric JSON (a string where a number belongs) reads as None,
        // as the envelope path's as_f64 does.
        let num = |r: &rusqlite::Row<'_>, i: usize| -> rusqlite::Result<Option<f64>> {
            Ok(match r.get_ref(i)? {
                rusqlite::types::ValueRef::Integer(n) => Some(n as f64),
                rusqlite::types::ValueRef::Real(f) => Some(f),
                _ => None,
            })
        };
        let rows = st.query_map(args, |r| {
            Ok(BudgetUsage {
                hid: r.get(0)?,
                steps: num(r, 1)?,
                spend_usd: num(r, 2)?,
                claimed_at: num(r, 3)?,
                max_steps: num(r, 4)?,
                max_spend_usd: num(r, 5)?,
                max_wallclock_s: num(r, 6)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    fn pairings_with(&self, status: &str) -> Result<Vec<Pairing>> {
        // Leaves out only the combinations that are consistent whatever
        // the lease says; the supervisor classifies the rest.
        // The status is extracted once per row (a materialized CTE), not
        // once per use in the filter.
        // Candidates: rows with an ownership row, and rows whose status is
        // not one that is consistent without one — the second read from
        // the (status, hid) index alone, so the envelopes of a million
        // completed handoffs are not parsed.
        let mut st = self.c.prepare_cached(&format!(
            "WITH s AS MATERIALIZED ( \
               SELECT h.hid, {status} AS st FROM ownership o0 CROSS JOIN handoffs h ON h.hid = o0.hid \
               UNION SELECT h.hid, {status} AS st FROM handoffs h \
               WHERE NOT COALESCE({status} IN ('pending', 'completed', 'failed', 'suspended'), 0)) \
             SELECT s.hid, s.st, o.holder, o.fence, o.lease_expires_at, o.heartbeat_interval_s, o.max_missed, \
             o.updated_at FROM s LEFT JOIN ownership o ON o.hid = s.hid \
             WHERE NOT COALESCE( \
               (s.st IN ('pending', 'completed', 'failed', 'suspended') AND o.hid IS NULL) \
               OR (s.st = 'running' AND o.holder != '{ORPHANED_HOLDER}') \
               OR (s.st IN ('orphaned', 'failed') AND o.holder = '{ORPHANED_HOLDER}') \
               OR s.st = 'suspended', 0) \
             ORDER BY s.hid"
        ))?;
        let rows = st.query_map([], pairing_row)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }
}

impl Tx for SqliteTx<'_> {
    fn envelope(&mut self, hid: &str) -> Result<Option<Value>> {
        let text: Option<String> = self
            .c
            .prepare_cached("SELECT envelope_json FROM handoffs WHERE hid=?1")?
            .query_row([hid], |r| r.get(0))
            .optional()?;
        text.map(|t| crate::store::deep::parse(&t)).transpose()
    }

    fn status(&mut self, hid: &str) -> Result<Option<String>> {
        let row: Option<(bool, Option<rusqlite::types::Value>)> = self
            .c
            .prepare_cached(&format!("SELECT json_valid(h.envelope_json), {STATUS} FROM handoffs h WHERE h.hid=?1"))?
            .query_row([hid], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?;
        match row {
            None => Ok(None),
            Some((true, Some(rusqlite::types::Value::Text(s)))) => Ok(Some(s)),
            Some((true, _)) => Ok(Some(String::new())),
            // Deeper than SQLite's JSON parser goes, or corrupt: parse it
            // here (a corrupt row is a typed Json error).
            Some((false, _)) => Ok(self.envelope(hid)?.map(|e| envelope::status(&e).to_string())),
        }
    }

    fn insert_envelope(&mut self, hid: &str, envelope_json: &str, now: StoreTime) -> Result<bool> {
        let now = now.secs();
        let n = self
            .c
            .prepare_cached("INSERT OR IGNORE INTO handoffs (hid, envelope_json, updated_at) VALUES (?1, ?2, ?3)")?
            .execute(params![hid, envelope_json, now])?;
        Ok(n > 0)
    }

    fn update_envelope(&mut self, hid: &str, envelope_json: &str, now: StoreTime) -> Result<bool> {
        let now = now.secs();
        let n = self
            .c
            .prepare_cached("UPDATE handoffs SET envelope_json=?1, updated_at=?2 WHERE hid=?3")?
            .execute(params![envelope_json, now, hid])?;
        Ok(n > 0)
    }

    fn all_hids(&mut self) -> Result<Vec<String>> {
        self.strings("SELECT hid FROM handoffs ORDER BY hid", [])
    }

    fn hids_with_status(&mut self, status: Status) -> Result<Vec<String>> {
        // Through the status index (an unreadable row is NULL there).
        self.strings(&format!("SELECT h.hid FROM handoffs h WHERE {STATUS}=?1 ORDER BY h.hid"), [status.as_str()])
    }

    fn running_budgets(&mut self) -> Result<Vec<BudgetUsage>> {
        self.budgets(&format!("{STATUS}='running'"), params![])
    }

    fn running_budgets_of(&mut self, hids: &[String]) -> Result<Vec<BudgetUsage>> {
        let mut out = Vec::new();
        for hid in hids {
            out.extend(self.budgets(&format!("h.hid=?1 AND {STATUS}='running'"), [hid])?);
        }
        Ok(out)
    }

    fn hids_page(&mut self, after: Option<&str>, limit: usize) -> Result<Vec<String>> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.strings(
            "SELECT hid FROM handoffs WHERE hid > ?1 ORDER BY hid LIMIT ?2",
            params![after.unwrap_or(""), limit],
        )
    }

    fn changed_since(&mut self, since: StoreTime) -> Result<Option<Vec<(String, f64)>>> {
        let since = since.secs();
        let mut st = self.c.prepare_cached(CHANGED_SINCE)?;
        let iso = envelope::iso_of(since);
        let rows =
            st.query_map(params![since, iso], |r| Ok((r.get(0)?, r.get::<_, Option<f64>>(1)?.unwrap_or(since))))?;
        Ok(Some(rows.collect::<rusqlite::Result<_>>()?))
    }

    fn pairings(&mut self) -> Result<Vec<Pairing>> {
        // The indexed, tolerant expression: an unreadable row's status is
        // NULL here and the caller parses that envelope itself.
        self.pairings_with(STATUS)
    }

    fn pairings_of(&mut self, hids: &[String]) -> Result<Vec<Pairing>> {
        // One primary-key lookup per hid, consistent rows included.
        let mut st = self.c.prepare_cached(PAIRING_OF)?;
        let mut out = Vec::with_capacity(hids.len());
        for hid in hids {
            if let Some(p) = st.query_row([hid], pairing_row).optional()? {
                out.push(p);
            }
        }
        Ok(out)
    }

    fn next_seq(&mut self, hid: &str) -> Result<i64> {
        // MAX over the (hid, seq) primary key is one index seek, not a scan.
        Ok(self
            .c
            .prepare_cached("SELECT COALESCE(MAX(seq), -1) + 1 FROM checkpoints WHERE hid=?1")?
            .query_row([hid], |r| r.get(0))?)
    }

    fn insert_checkpoint(&mut self, hid: &str, row: &CheckpointRow) -> Result<bool> {
        let n = self
            .c
            .prepare_cached(
                "INSERT OR IGNORE INTO checkpoints (hid, seq, state_json, state_hash, at) VALUES (?1, ?2, ?3, ?4, ?5)",
            )?
            .execute(params![hid, row.seq, row.state_json, row.state_hash, row.at])?;
        Ok(n > 0)
    }

    fn last_checkpoint(&mut self, hid: &str) -> Result<Option<CheckpointRow>> {
        Ok(self
            .c
            .prepare_cached(
                "SELECT seq, state_json, state_hash, at FROM checkpoints WHERE hid=?1 ORDER BY seq DESC LIMIT 1",
            )?
            .query_row([hid], checkpoint_row)
            .optional()?)
    }

    fn checkpoints(&mut self, hid: &str) -> Result<Vec<CheckpointRow>> {
        let mut st = self
            .c
            .prepare_cached("SELECT seq, state_json, state_hash, at FROM checkpoints WHERE hid=?1 ORDER BY seq")?;
        let rows = st.query_map([hid], checkpoint_row)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    fn checkpoint_count(&mut self, hid: &str) -> Result<i64> {
        Ok(self.c.prepare_cached("SELECT COUNT(*) FROM checkpoints WHERE hid=?1")?.query_row([hid], |r| r.get(0))?)
    }

    fn ownership(&mut self, hid: &str) -> Result<Option<Ownership>> {
        Ok(self
            .c
            .prepare_cached(&format!("SELECT {OWNERSHIP_COLS} FROM ownership WHERE hid=?1"))?
            .query_row([hid], ownership_row)
            .optional()?)
    }

    fn insert_ownership(&mut self, o: &Ownership, now: StoreTime) -> Result<bool> {
        let now = now.secs();
        let n = self
            .c
            .prepare_cached(
                "INSERT OR IGNORE INTO ownership (hid, holder, fence, lease_expires_at, heartbeat_interval_s, \
                 max_missed, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )?
            .execute(params![
                o.hid,
                o.holder,
                o.fence.get(),
                o.lease_expires_at,
                o.heartbeat_interval_s,
                o.max_missed,
                now
            ])?;
        Ok(n > 0)
    }

    fn update_ownership(&mut self, o: &Ownership, now: StoreTime) -> Result<bool> {
        let now = now.secs();
        let n = self
            .c
            .prepare_cached(
                "UPDATE ownership SET holder=?2, fence=?3, lease_expires_at=?4, heartbeat_interval_s=?5, \
                 max_missed=?6, updated_at=?7 WHERE hid=?1",
            )?
            .execute(params![
                o.hid,
                o.holder,
                o.fence.get(),
                o.lease_expires_at,
                o.heartbeat_interval_s,
                o.max_missed,
                now
            ])?;
        Ok(n > 0)
    }

    fn delete_ownership(&mut self, hid: &str) -> Result<()> {
        self.c.prepare_cached("DELETE FROM ownership WHERE hid=?1")?.execute([hid])?;
        Ok(())
    }

    fn expired_leases(&mut self, now: StoreTime) -> Result<Vec<String>> {
        let now = now.secs();
        let mut hids = self.strings(EXPIRED_LEASES, [now])?;
        hids.sort();
        Ok(hids)
    }

    fn ownerships_held_by(&mut self, holder: &str) -> Result<Vec<Ownership>> {
        let mut st =
            self.c.prepare_cached(&format!("SELECT {OWNERSHIP_COLS} FROM ownership WHERE holder=?1 ORDER BY hid"))?;
        let rows = st.query_map([holder], ownership_row)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    fn held_ownerships(&mut self) -> Result<Vec<Ownership>> {
        // No JSON join: polled every few milliseconds by the leader.
        let mut st = self.c.prepare_cached(&format!(
            "SELECT {OWNERSHIP_COLS} FROM ownership WHERE holder != '{ORPHANED_HOLDER}' ORDER BY hid"
        ))?;
        let rows = st.query_map([], ownership_row)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    fn leadership(&mut self) -> Result<Option<Leadership>> {
        Ok(self
            .c
            .prepare_cached("SELECT holder, expires_at FROM leadership WHERE id=1")?
            .query_row([], |r| Ok(Leadership { holder: r.get(0)?, expires_at: r.get(1)? }))
            .optional()?)
    }

    fn put_leadership(&mut self, l: &Leadership, now: StoreTime) -> Result<()> {
        let now = now.secs();
        self.c
            .prepare_cached(
                "INSERT INTO leadership (id, holder, expires_at, updated_at) VALUES (1, ?1, ?2, ?3) \
                 ON CONFLICT(id) DO UPDATE SET holder=excluded.holder, expires_at=excluded.expires_at, \
                 updated_at=excluded.updated_at",
            )?
            .execute(params![l.holder, l.expires_at, now])?;
        Ok(())
    }

    fn insert_effect(&mut self, hid: &str, step_id: &str, result_json: &str, now: StoreTime) -> Result<bool> {
        let now = now.secs();
        let n = self
            .c
            .prepare_cached("INSERT OR IGNORE INTO effects (hid, step_id, result_json, at) VALUES (?1, ?2, ?3, ?4)")?
            .execute(params![hid, step_id, result_json, now])?;
        Ok(n > 0)
    }

    fn effect(&mut self, hid: &str, step_id: &str) -> Result<Option<String>> {
        Ok(self
            .c
            .prepare_cached("SELECT result_json FROM effects WHERE hid=?1 AND step_id=?2")?
            .query_row([hid, step_id], |r| r.get(0))
            .optional()?)
    }

    fn effect_count(&mut self, hid: &str) -> Result<i64> {
        Ok(self.c.prepare_cached("SELECT COUNT(*) FROM effects WHERE hid=?1")?.query_row([hid], |r| r.get(0))?)
    }

    fn insert_approval(&mut self, a: &Approval) -> Result<()> {
        self.c
            .prepare_cached(&format!(
                "INSERT INTO approvals ({APPROVAL_COLS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"
            ))?
            .execute(params![
                a.approval_id,
                a.hid,
                a.action_class,
                a.details_json,
                a.status.as_str(),
                a.created_at,
                a.expires_at,
                a.decided_at
            ])?;
        Ok(())
    }

    fn approval(&mut self, approval_id: &str) -> Result<Option<Approval>> {
        Ok(self
            .c
            .prepare_cached(&format!("SELECT {APPROVAL_COLS} FROM approvals WHERE approval_id=?1"))?
            .query_row([approval_id], approval_row)
            .optional()?)
    }

    fn decide_approval(&mut self, approval_id: &str, op: ApprovalOp, now: StoreTime) -> Result<bool> {
        let now = now.secs();
        let n = self
            .c
            .prepare_cached("UPDATE approvals SET status=?1, decided_at=?2 WHERE approval_id=?3 AND status='pending'")?
            .execute(params![op.outcome().as_str(), now, approval_id])?;
        Ok(n > 0)
    }

    fn expire_approvals(&mut self, now: StoreTime) -> Result<usize> {
        let now = now.secs();
        Ok(self
            .c
            .prepare_cached(
                "UPDATE approvals SET status='expired', decided_at=?1 WHERE status='pending' AND expires_at < ?1",
            )?
            .execute([now])?)
    }

    fn approvals_to_expire(&mut self, now: StoreTime) -> Result<bool> {
        let now = now.secs();
        Ok(self.c.prepare_cached(APPROVALS_TO_EXPIRE)?.query_row([now], |_| Ok(())).optional()?.is_some())
    }

    fn approvals_for(&mut self, hid: &str) -> Result<Vec<Approval>> {
        let mut st = self
            .c
            .prepare_cached(&format!("SELECT {APPROVAL_COLS} FROM approvals WHERE hid=?1 ORDER BY created_at"))?;
        let rows = st.query_map([hid], approval_row)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    fn progress(&mut self, hid: &str) -> Result<Option<Progress>> {
        Ok(self
            .c
            .prepare_cached("SELECT last_checkpoint_at, last_digest, digest_repeat_count FROM progress WHERE hid=?1")?
            .query_row([hid], |r| {
                Ok(Progress { last_checkpoint_at: r.get(0)?, last_digest: r.get(1)?, digest_repeat_count: r.get(2)? })
            })
            .optional()?)
    }

    fn put_progress(&mut self, hid: &str, p: &Progress, now: StoreTime) -> Result<()> {
        let now = now.secs();
        self.c
            .prepare_cached(
                "INSERT INTO progress (hid, last_checkpoint_at, last_digest, digest_repeat_count, updated_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT(hid) DO UPDATE SET \
                 last_checkpoint_at=excluded.last_checkpoint_at, last_digest=excluded.last_digest, \
                 digest_repeat_count=excluded.digest_repeat_count, updated_at=excluded.updated_at",
            )?
            .execute(params![hid, p.last_checkpoint_at, p.last_digest, p.digest_repeat_count, now])?;
        Ok(())
    }

    fn progress_checkpointed(&mut self, hid: &str, t: StoreTime) -> Result<()> {
        let t = t.secs();
        // One upsert, no read: the last digest stays as it is.
        self.c
            .prepare_cached(
                "INSERT INTO progress (hid, last_checkpoint_at, last_digest, digest_repeat_count, updated_at) \
                 VALUES (?1, ?2, NULL, 0, ?2) ON CONFLICT(hid) DO UPDATE SET \
                 last_checkpoint_at=excluded.last_checkpoint_at, digest_repeat_count=0, updated_at=excluded.updated_at",
            )?
            .execute(params![hid, t])?;
        Ok(())
    }

    fn stalled(&mut self, now: StoreTime, cutoff: StoreTime, max_repeats: i64) -> Result<Vec<String>> {
        let now = now.secs();
        let cutoff = cutoff.secs();
        // Running handoffs first (status index), not every progress row
        // ever written (completed handoffs keep theirs).
        self.strings(
            &format!(
                "SELECT h.hid FROM handoffs h CROSS JOIN ownership o ON o.hid = h.hid \
                 CROSS JOIN progress p ON p.hid = h.hid WHERE {STATUS} = 'running' AND {STALLED} ORDER BY h.hid"
            ),
            params![now, cutoff, max_repeats],
        )
    }

    fn stalled_of(
        &mut self,
        hids: &[String],
        now: StoreTime,
        cutoff: StoreTime,
        max_repeats: i64,
    ) -> Result<Vec<String>> {
        let now = now.secs();
        let cutoff = cutoff.secs();
        let mut out = Vec::new();
        for hid in hids {
            out.extend(self.strings(
                &format!(
                    "SELECT h.hid FROM handoffs h JOIN ownership o ON o.hid = h.hid JOIN progress p ON p.hid = h.hid \
                     WHERE h.hid = ?4 AND {STATUS} = 'running' AND {STALLED}"
                ),
                params![now, cutoff, max_repeats, hid],
            )?);
        }
        Ok(out)
    }

    fn insert_capability_audit(&mut self, hid: &str, a: &CapabilityAudit) -> Result<()> {
        self.c
            .prepare_cached(
                "INSERT INTO capability_audit (hid, domain, resource, granted, at) VALUES (?1, ?2, ?3, ?4, ?5)",
            )?
            .execute(params![hid, a.domain, a.resource, a.granted as i64, a.at])?;
        Ok(())
    }

    fn capability_audit(&mut self, hid: &str) -> Result<Vec<CapabilityAudit>> {
        let mut st = self
            .c
            .prepare_cached("SELECT domain, resource, granted, at FROM capability_audit WHERE hid=?1 ORDER BY at")?;
        let rows = st.query_map([hid], |r| {
            Ok(CapabilityAudit {
                domain: r.get(0)?,
                resource: r.get(1)?,
                granted: r.get::<_, i64>(2)? != 0,
                at: r.get(3)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }
}
