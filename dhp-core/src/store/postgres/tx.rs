//! [`Tx`] over one PostgreSQL transaction.
//!
//! In a write transaction every method that touches a handoff first takes
//! that handoff's transaction-level advisory lock (once per transaction),
//! and the leadership methods take the leadership lock: all reads and
//! writes of one handoff by one operation happen under its lock, as under
//! SQLite's `BEGIN IMMEDIATE`. Each lock also reads the server clock, so
//! [`Tx::now`] is the server's time after the lock was granted.

use super::{item_key, orphan_channel};
use crate::envelope::ORPHANED_HOLDER;
use crate::error::{Error, Result};
use crate::json;
use crate::status::{ApprovalOp, Status};
use crate::store::{Approval, BudgetUsage, CapabilityAudit, CheckpointRow, Leadership, Mode, Ownership, Progress, Tx};
use crate::store_time::StoreTime;
use postgres::types::ToSql;
use postgres::{Client, Row, SimpleQueryMessage, Statement};
use serde_json::Value;
use std::collections::{HashMap, HashSet};

pub(super) struct PgTx<'a> {
    c: &'a mut Client,
    /// BEGIN sent (lazily, with the first lock when it comes first).
    begun: bool,
    /// COMMIT or ROLLBACK sent.
    finished: bool,
    /// A statement failed: the server has aborted the transaction, so it
    /// must not be reported as committed (see [`PgTx::commit`]).
    failed: bool,
    /// The failure was a deadlock (the whole transaction may be retried).
    pub(super) deadlocked: bool,
    stmts: &'a mut HashMap<&'static str, Statement>,
    mode: Mode,
    store_key: i32,
    channel: String,
    locked: HashSet<i32>,
    now: Option<f64>,
    /// Rows read with the ownership row, by hid (see [`PgTx::ownership`]).
    seen: HashMap<String, Seen>,
    /// The connection replaced a broken one less than
    /// [`super::live::RETAKE_GRACE_S`] ago: no holder is declared dead yet.
    pub(super) retake_grace: bool,
}

/// What one read of a handoff fetched alongside its ownership row, valid
/// until this transaction writes the row it came from. Safe to reuse: in a
/// write transaction the handoff's lock keeps other writers out, and a read
/// transaction sees one snapshot.
#[derive(Debug, Default)]
struct Seen {
    /// `execution.status`; `None` inside when the handoff does not exist.
    status: Option<Option<String>>,
    next_seq: Option<i64>,
    progress: Option<Option<Progress>>,
}

const LOCK_SQL: &str = "WITH l AS MATERIALIZED (SELECT pg_advisory_xact_lock($1::int4, $2::int4)) \
                        SELECT extract(epoch FROM clock_timestamp())::float8 FROM l";
const NOW_SQL: &str = "SELECT extract(epoch FROM clock_timestamp())::float8";
const LEADERSHIP_ITEM: &str = "leadership";

/// The ownership row (columns 0-5), whether the handoff exists and its
/// status (6-7), the next seq (8) and the progress row (9-12) of one hid.
const OWNERSHIP_WITH_CONTEXT: &str = "SELECT o.hid, o.holder, o.fence, o.lease_expires_at, o.heartbeat_interval_s, \
     o.max_missed, h.hid IS NOT NULL, h.status, \
     (SELECT COALESCE(MAX(c.seq), -1) + 1 FROM checkpoints c WHERE c.hid = k.hid), \
     p.hid IS NOT NULL, p.last_checkpoint_at, p.last_digest, COALESCE(p.digest_repeat_count, 0) \
     FROM (SELECT $1::text COLLATE \"C\" AS hid) k LEFT JOIN ownership o ON o.hid = k.hid \
     LEFT JOIN handoffs h ON h.hid = k.hid LEFT JOIN progress p ON p.hid = k.hid";

fn ownership_row(r: &Row) -> Ownership {
    Ownership {
        hid: r.get(0),
        holder: r.get(1),
        fence: crate::lease::Fence::new(r.get(2)),
        lease_expires_at: r.get(3),
        heartbeat_interval_s: r.get(4),
        max_missed: r.get(5),
    }
}

fn checkpoint_row(r: &Row) -> CheckpointRow {
    CheckpointRow { seq: r.get(0), state_json: r.get(1), state_hash: r.get(2), at: r.get(3) }
}

fn approval_row(r: &Row) -> Result<Approval> {
    Ok(Approval {
        approval_id: r.get(0),
        hid: r.get(1),
        action_class: r.get(2),
        details_json: r.get(3),
        status: r.get::<_, String>(4).parse()?,
        created_at: r.get(5),
        expires_at: r.get(6),
        decided_at: r.get(7),
    })
}

/// A JSON number at `path` of the envelope as float8, else NULL (a string
/// where a number belongs reads as NULL, as in the SQLite backend).
macro_rules! num {
    ($path:literal) => {
        concat!("CASE WHEN json_typeof(e #> '", $path, "') = 'number' THEN (e #>> '", $path, "')::float8 END")
    };
}

impl<'a> PgTx<'a> {
    pub(super) fn new(
        c: &'a mut Client,
        stmts: &'a mut HashMap<&'static str, Statement>,
        mode: Mode,
        store_key: i32,
        schema: &str,
    ) -> Self {
        PgTx {
            c,
            begun: false,
            finished: false,
            failed: false,
            deadlocked: false,
            stmts,
            mode,
            store_key,
            channel: orphan_channel(schema),
            locked: HashSet::new(),
            now: None,
            seen: HashMap::new(),
            retake_grace: false,
        }
    }

    /// COMMIT. If any statement failed — even one whose error the protocol
    /// code kept as a per-item result of a batch — the server has already
    /// aborted the transaction and a COMMIT would silently roll back:
    /// fail with the server's own "transaction is aborted" error instead,
    /// so nothing is reported as written that was not.
    pub(super) fn commit(mut self) -> Result<()> {
        if !self.begun {
            self.finished = true;
            return Ok(());
        }
        if self.failed {
            self.c.batch_execute("SELECT 1").map_err(Error::from)?;
            return Err(Error::validation("transaction aborted by an earlier statement error"));
        }
        self.finished = true;
        self.c.batch_execute("COMMIT")?;
        Ok(())
    }

    /// Record a failed statement (the transaction is now aborted).
    fn failed(&mut self, e: postgres::Error) -> Error {
        self.failed = true;
        if e.code() == Some(&postgres::error::SqlState::T_R_DEADLOCK_DETECTED) {
            self.deadlocked = true;
        }
        Error::from(e)
    }

    fn begin(&mut self) -> Result<()> {
        if !self.begun {
            let sql = match self.mode {
                Mode::Read => "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY",
                Mode::Write => "BEGIN",
            };
            self.c.batch_execute(sql).map_err(|e| self.failed(e))?;
            self.begun = true;
        }
        Ok(())
    }

    fn st(&mut self, sql: &'static str) -> Result<Statement> {
        if let Some(s) = self.stmts.get(sql) {
            return Ok(s.clone());
        }
        let s = self.c.prepare(sql).map_err(|e| self.failed(e))?;
        self.stmts.insert(sql, s.clone());
        Ok(s)
    }

    fn query(&mut self, sql: &'static str, args: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>> {
        let s = self.st(sql)?;
        self.begin()?;
        self.c.query(&s, args).map_err(|e| self.failed(e))
    }

    fn query_opt(&mut self, sql: &'static str, args: &[&(dyn ToSql + Sync)]) -> Result<Option<Row>> {
        let s = self.st(sql)?;
        self.begin()?;
        self.c.query_opt(&s, args).map_err(|e| self.failed(e))
    }

    fn query_one(&mut self, sql: &'static str, args: &[&(dyn ToSql + Sync)]) -> Result<Row> {
        let s = self.st(sql)?;
        self.begin()?;
        self.c.query_one(&s, args).map_err(|e| self.failed(e))
    }

    fn execute(&mut self, sql: &'static str, args: &[&(dyn ToSql + Sync)]) -> Result<u64> {
        let s = self.st(sql)?;
        self.begin()?;
        self.c.execute(&s, args).map_err(|e| self.failed(e))
    }

    fn strings(&mut self, sql: &'static str, args: &[&(dyn ToSql + Sync)]) -> Result<Vec<String>> {
        Ok(self.query(sql, args)?.iter().map(|r| r.get(0)).collect())
    }

    fn count(&mut self, sql: &'static str, hid: &str) -> Result<i64> {
        Ok(self.query_one(sql, &[&hid])?.get(0))
    }

    /// In a write transaction, take `item`'s advisory lock (once).
    fn lock(&mut self, item: &str) -> Result<()> {
        if self.mode == Mode::Read {
            return Ok(());
        }
        let key = item_key(item);
        if self.locked.insert(key) {
            let at: f64 = if self.begun {
                let store_key = self.store_key;
                self.query_one(LOCK_SQL, &[&store_key, &key])?.get(0)
            } else {
                // The first statement of a write: BEGIN and the lock in one
                // round trip (simple protocol; the keys are integers).
                let sql = format!(
                    "BEGIN; {}",
                    LOCK_SQL.replace("$1", &self.store_key.to_string()).replace("$2", &key.to_string())
                );
                let msgs = self.c.simple_query(&sql).map_err(|e| self.failed(e))?;
                self.begun = true;
                let text = msgs.iter().find_map(|m| match m {
                    SimpleQueryMessage::Row(r) => r.get(0).map(str::to_string),
                    _ => None,
                });
                text.and_then(|t| t.parse().ok())
                    .ok_or_else(|| Error::validation("the lock query returned no clock reading"))?
            };
            self.now = Some(at);
        }
        Ok(())
    }
}

impl Tx for PgTx<'_> {
    fn envelope(&mut self, hid: &str) -> Result<Option<Value>> {
        self.lock(hid)?;
        let row = self.query_opt("SELECT envelope_json FROM handoffs WHERE hid=$1", &[&hid])?;
        row.map(|r| json::parse(r.get(0))).transpose()
    }

    fn status(&mut self, hid: &str) -> Result<Option<String>> {
        if let Some(st) = self.seen.get(hid).and_then(|s| s.status.clone()) {
            return Ok(st);
        }
        self.lock(hid)?;
        let row = self.query_opt("SELECT status FROM handoffs WHERE hid=$1", &[&hid])?;
        Ok(row.map(|r| r.get::<_, Option<String>>(0).unwrap_or_default()))
    }

    fn insert_envelope(&mut self, hid: &str, envelope_json: &str, now: StoreTime) -> Result<bool> {
        let now = now.secs();
        self.lock(hid)?;
        self.seen.remove(hid);
        let n = self.execute(
            "INSERT INTO handoffs (hid, envelope_json, updated_at) VALUES ($1, $2, $3) ON CONFLICT (hid) DO NOTHING",
            &[&hid, &envelope_json, &now],
        )?;
        Ok(n > 0)
    }

    fn update_envelope(&mut self, hid: &str, envelope_json: &str, now: StoreTime) -> Result<bool> {
        let now = now.secs();
        self.lock(hid)?;
        if let Some(s) = self.seen.get_mut(hid) {
            s.status = None;
        }
        let n = self.execute(
            "UPDATE handoffs SET envelope_json=$1, updated_at=$2 WHERE hid=$3",
            &[&envelope_json, &now, &hid],
        )?;
        Ok(n > 0)
    }

    fn all_hids(&mut self) -> Result<Vec<String>> {
        self.strings("SELECT hid FROM handoffs ORDER BY hid", &[])
    }

    fn hids_with_status(&mut self, status: Status) -> Result<Vec<String>> {
        self.strings("SELECT hid FROM handoffs WHERE status=$1 ORDER BY hid", &[&status.as_str()])
    }

    fn running_budgets(&mut self) -> Result<Vec<BudgetUsage>> {
        const SQL: &str = concat!(
            "SELECT hid, ",
            num!("{execution,steps}"),
            ", ",
            num!("{execution,spend_usd}"),
            ", ",
            num!("{execution,claimed_at}"),
            ", ",
            num!("{contract,budget,max_steps}"),
            ", ",
            num!("{contract,budget,max_spend_usd}"),
            ", ",
            num!("{contract,budget,max_wallclock_s}"),
            " FROM (SELECT hid, envelope_json::json AS e FROM handoffs WHERE status='running') h ORDER BY hid"
        );
        Ok(self
            .query(SQL, &[])?
            .iter()
            .map(|r| BudgetUsage {
                hid: r.get(0),
                steps: r.get(1),
                spend_usd: r.get(2),
                claimed_at: r.get(3),
                max_steps: r.get(4),
                max_spend_usd: r.get(5),
                max_wallclock_s: r.get(6),
            })
            .collect())
    }

    fn next_seq(&mut self, hid: &str) -> Result<i64> {
        if let Some(n) = self.seen.get(hid).and_then(|s| s.next_seq) {
            return Ok(n);
        }
        self.lock(hid)?;
        self.count("SELECT COALESCE(MAX(seq), -1) + 1 FROM checkpoints WHERE hid=$1", hid)
    }

    fn insert_checkpoint(&mut self, hid: &str, row: &CheckpointRow) -> Result<bool> {
        self.lock(hid)?;
        if let Some(s) = self.seen.get_mut(hid) {
            s.next_seq = None;
        }
        let n = self.execute(
            "INSERT INTO checkpoints (hid, seq, state_json, state_hash, at) VALUES ($1, $2, $3, $4, $5) \
             ON CONFLICT (hid, seq) DO NOTHING",
            &[&hid, &row.seq, &row.state_json, &row.state_hash, &row.at],
        )?;
        Ok(n > 0)
    }

    fn last_checkpoint(&mut self, hid: &str) -> Result<Option<CheckpointRow>> {
        self.lock(hid)?;
        let row = self.query_opt(
            "SELECT seq, state_json, state_hash, at FROM checkpoints WHERE hid=$1 ORDER BY seq DESC LIMIT 1",
            &[&hid],
        )?;
        Ok(row.as_ref().map(checkpoint_row))
    }

    fn checkpoints(&mut self, hid: &str) -> Result<Vec<CheckpointRow>> {
        self.lock(hid)?;
        let rows =
            self.query("SELECT seq, state_json, state_hash, at FROM checkpoints WHERE hid=$1 ORDER BY seq", &[&hid])?;
        Ok(rows.iter().map(checkpoint_row).collect())
    }

    fn checkpoint_count(&mut self, hid: &str) -> Result<i64> {
        self.lock(hid)?;
        self.count("SELECT COUNT(*) FROM checkpoints WHERE hid=$1", hid)
    }

    /// One round trip for what a write operation reads first: the ownership
    /// row, the status, the next seq and the progress row. The last three are
    /// kept for the rest of the transaction (until it writes them), which
    /// turns a checkpoint's four reads into one.
    fn ownership(&mut self, hid: &str) -> Result<Option<Ownership>> {
        self.lock(hid)?;
        let r = self.query_opt(OWNERSHIP_WITH_CONTEXT, &[&hid])?;
        let Some(r) = r else { return Ok(None) };
        let own = r.get::<_, Option<String>>(0).map(|_| ownership_row(&r));
        let exists: bool = r.get(6);
        let progress = r.get::<_, bool>(9).then(|| Progress {
            last_checkpoint_at: r.get(10),
            last_digest: r.get(11),
            digest_repeat_count: r.get(12),
        });
        self.seen.insert(
            hid.to_string(),
            Seen {
                status: Some(exists.then(|| r.get::<_, Option<String>>(7).unwrap_or_default())),
                next_seq: Some(r.get(8)),
                progress: Some(progress),
            },
        );
        Ok(own)
    }

    fn insert_ownership(&mut self, o: &Ownership, now: StoreTime) -> Result<bool> {
        let now = now.secs();
        self.lock(&o.hid)?;
        let n = self.execute(
            "INSERT INTO ownership (hid, holder, fence, lease_expires_at, heartbeat_interval_s, max_missed, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (hid) DO NOTHING",
            &[&o.hid, &o.holder, &o.fence.get(), &o.lease_expires_at, &o.heartbeat_interval_s, &o.max_missed, &now],
        )?;
        Ok(n > 0)
    }

    fn update_ownership(&mut self, o: &Ownership, now: StoreTime) -> Result<bool> {
        let now = now.secs();
        self.lock(&o.hid)?;
        let n = self.execute(
            "UPDATE ownership SET holder=$2, fence=$3, lease_expires_at=$4, heartbeat_interval_s=$5, \
             max_missed=$6, updated_at=$7 WHERE hid=$1",
            &[&o.hid, &o.holder, &o.fence.get(), &o.lease_expires_at, &o.heartbeat_interval_s, &o.max_missed, &now],
        )?;
        Ok(n > 0)
    }

    fn delete_ownership(&mut self, hid: &str) -> Result<()> {
        self.lock(hid)?;
        self.execute("DELETE FROM ownership WHERE hid=$1", &[&hid])?;
        Ok(())
    }

    fn expired_leases(&mut self, now: StoreTime) -> Result<Vec<String>> {
        let now = now.secs();
        self.strings(
            "SELECT o.hid FROM ownership o JOIN handoffs h ON h.hid=o.hid WHERE o.lease_expires_at < $1 \
             AND h.status='running' ORDER BY o.hid",
            &[&now],
        )
    }

    fn held_ownerships(&mut self) -> Result<Vec<Ownership>> {
        const SQL: &str = "SELECT hid, holder, fence, lease_expires_at, heartbeat_interval_s, max_missed \
                           FROM ownership WHERE holder != $1 ORDER BY hid";
        Ok(self.query(SQL, &[&ORPHANED_HOLDER])?.iter().map(ownership_row).collect())
    }

    fn leadership(&mut self) -> Result<Option<Leadership>> {
        self.lock(LEADERSHIP_ITEM)?;
        let row = self.query_opt("SELECT holder, expires_at FROM leadership WHERE id=1", &[])?;
        Ok(row.map(|r| Leadership { holder: r.get(0), expires_at: r.get(1) }))
    }

    fn put_leadership(&mut self, l: &Leadership, now: StoreTime) -> Result<()> {
        let now = now.secs();
        self.lock(LEADERSHIP_ITEM)?;
        self.execute(
            "INSERT INTO leadership (id, holder, expires_at, updated_at) VALUES (1, $1, $2, $3) \
             ON CONFLICT (id) DO UPDATE SET holder=excluded.holder, expires_at=excluded.expires_at, \
             updated_at=excluded.updated_at",
            &[&l.holder, &l.expires_at, &now],
        )?;
        Ok(())
    }

    fn insert_effect(&mut self, hid: &str, step_id: &str, result_json: &str, now: StoreTime) -> Result<bool> {
        let now = now.secs();
        self.lock(hid)?;
        let n = self.execute(
            "INSERT INTO effects (hid, step_id, result_json, at) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (hid, step_id) DO NOTHING",
            &[&hid, &step_id, &result_json, &now],
        )?;
        Ok(n > 0)
    }

    fn effect(&mut self, hid: &str, step_id: &str) -> Result<Option<String>> {
        self.lock(hid)?;
        let row = self.query_opt("SELECT result_json FROM effects WHERE hid=$1 AND step_id=$2", &[&hid, &step_id])?;
        Ok(row.map(|r| r.get(0)))
    }

    fn effect_count(&mut self, hid: &str) -> Result<i64> {
        self.lock(hid)?;
        self.count("SELECT COUNT(*) FROM effects WHERE hid=$1", hid)
    }

    fn insert_approval(&mut self, a: &Approval) -> Result<()> {
        self.lock(&a.hid)?;
        self.execute(
            "INSERT INTO approvals (approval_id, hid, action_class, details_json, status, created_at, expires_at, \
             decided_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
            &[
                &a.approval_id,
                &a.hid,
                &a.action_class,
                &a.details_json,
                &a.status.as_str(),
                &a.created_at,
                &a.expires_at,
                &a.decided_at,
            ],
        )?;
        Ok(())
    }

    fn approval(&mut self, approval_id: &str) -> Result<Option<Approval>> {
        const SQL: &str = "SELECT approval_id, hid, action_class, details_json, status, created_at, expires_at, \
                           decided_at FROM approvals WHERE approval_id=$1";
        self.query_opt(SQL, &[&approval_id])?.as_ref().map(approval_row).transpose()
    }

    fn decide_approval(&mut self, approval_id: &str, op: ApprovalOp, now: StoreTime) -> Result<bool> {
        let now = now.secs();
        let n = self.execute(
            "UPDATE approvals SET status=$1, decided_at=$2 WHERE approval_id=$3 AND status='pending'",
            &[&op.outcome().as_str(), &now, &approval_id],
        )?;
        Ok(n > 0)
    }

    fn expire_approvals(&mut self, now: StoreTime) -> Result<usize> {
        let now = now.secs();
        let n = self.execute(
            "UPDATE approvals SET status='expired', decided_at=$1 WHERE status='pending' AND expires_at < $1",
            &[&now],
        )?;
        Ok(n as usize)
    }

    fn approvals_for(&mut self, hid: &str) -> Result<Vec<Approval>> {
        self.lock(hid)?;
        const SQL: &str = "SELECT approval_id, hid, action_class, details_json, status, created_at, expires_at, \
                           decided_at FROM approvals WHERE hid=$1 ORDER BY created_at";
        self.query(SQL, &[&hid])?.iter().map(approval_row).collect()
    }

    fn progress(&mut self, hid: &str) -> Result<Option<Progress>> {
        if let Some(p) = self.seen.get(hid).and_then(|s| s.progress.clone()) {
            return Ok(p);
        }
        self.lock(hid)?;
        let row = self.query_opt(
            "SELECT last_checkpoint_at, last_digest, digest_repeat_count FROM progress WHERE hid=$1",
            &[&hid],
        )?;
        Ok(row.map(|r| Progress { last_checkpoint_at: r.get(0), last_digest: r.get(1), digest_repeat_count: r.get(2) }))
    }

    fn put_progress(&mut self, hid: &str, p: &Progress, now: StoreTime) -> Result<()> {
        let now = now.secs();
        self.lock(hid)?;
        if let Some(s) = self.seen.get_mut(hid) {
            s.progress = None;
        }
        self.execute(
            "INSERT INTO progress (hid, last_checkpoint_at, last_digest, digest_repeat_count, updated_at) \
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT (hid) DO UPDATE SET \
             last_checkpoint_at=excluded.last_checkpoint_at, last_digest=excluded.last_digest, \
             digest_repeat_count=excluded.digest_repeat_count, updated_at=excluded.updated_at",
            &[&hid, &p.last_checkpoint_at, &p.last_digest, &p.digest_repeat_count, &now],
        )?;
        Ok(())
    }

    fn stalled(&mut self, now: StoreTime, cutoff: StoreTime, max_repeats: i64) -> Result<Vec<String>> {
        let now = now.secs();
        let cutoff = cutoff.secs();
        self.strings(
            "SELECT p.hid FROM progress p JOIN ownership o ON o.hid = p.hid JOIN handoffs h ON h.hid = p.hid \
             WHERE o.lease_expires_at >= $1 AND h.status = 'running' \
             AND ((p.last_checkpoint_at IS NOT NULL AND p.last_checkpoint_at < $2) OR p.digest_repeat_count >= $3) \
             ORDER BY p.hid",
            &[&now, &cutoff, &max_repeats],
        )
    }

    fn insert_capability_audit(&mut self, hid: &str, a: &CapabilityAudit) -> Result<()> {
        self.lock(hid)?;
        self.execute(
            "INSERT INTO capability_audit (hid, domain, resource, granted, at) VALUES ($1, $2, $3, $4, $5)",
            &[&hid, &a.domain, &a.resource, &(a.granted as i64), &a.at],
        )?;
        Ok(())
    }

    fn capability_audit(&mut self, hid: &str) -> Result<Vec<CapabilityAudit>> {
        self.lock(hid)?;
        let rows =
            self.query("SELECT domain, resource, granted, at FROM capability_audit WHERE hid=$1 ORDER BY at", &[&hid])?;
        Ok(rows
            .iter()
            .map(|r| CapabilityAudit {
                domain: r.get(0),
                resource: r.get(1),
                granted: r.get::<_, i64>(2) != 0,
                at: r.get(3),
            })
            .collect())
    }

    fn now(&mut self) -> Result<StoreTime> {
        if let Some(t) = self.now {
            return Ok(StoreTime::from_secs(t));
        }
        let t: f64 = self.query_one(NOW_SQL, &[])?.get(0);
        self.now = Some(t);
        Ok(StoreTime::from_secs(t))
    }

    fn now_fresh(&mut self) -> Result<StoreTime> {
        let t: f64 = self.query_one(NOW_SQL, &[])?.get(0);
        Ok(StoreTime::from_secs(t))
    }

    fn dead_holders(&mut self, holders: &[String]) -> Result<Vec<String>> {
        if holders.is_empty() {
            return Ok(Vec::new());
        }
        if self.retake_grace {
            // just reconnected: the holders' keepers may be reconnecting too
            return Ok(Vec::new());
        }
        self.strings(super::live::DEAD_HOLDERS_SQL, &[&holders])
    }

    fn forget_dead_holder(&mut self, holder: &str) -> Result<bool> {
        Ok(self.execute(super::live::FORGET_DEAD_SQL, &[&holder])? > 0)
    }

    fn announce_orphan(&mut self, hid: &str) -> Result<()> {
        let channel = self.channel.clone();
        self.query("SELECT pg_notify($1, $2)", &[&channel, &hid])?;
        Ok(())
    }
}

impl Drop for PgTx<'_> {
    /// Not committed (an error, a panic): roll back, so the connection is
    /// clean for the next transaction.
    fn drop(&mut self) {
        if self.begun && !self.finished {
            let _ = self.c.batch_execute("ROLLBACK");
        }
    }
}

impl std::fmt::Debug for PgTx<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgTx").field("mode", &self.mode).finish()
    }
}
