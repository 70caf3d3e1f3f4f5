//! Reads: the envelope, checkpoints, ownership and the status summary.

use super::{exec_mut, load, Runner};
use crate::envelope;
use crate::error::Result;
use crate::id::ToHandoffId;
use crate::json;
use crate::status::Status;
use crate::store::{CheckpointRow, Ownership, Tx};
use serde_json::{json, Value};

impl Runner {
    /// The stored envelope with `execution.checkpoints` materialized from
    /// the rows, as the reference's `_load` returns it.
    pub fn envelope(&self, hid: &(impl ToHandoffId + ?Sized)) -> Result<Value> {
        let hid = hid.to_handoff_id()?;
        let hid = hid.as_str();
        self.read(|tx| {
            let mut env = load(tx, hid)?;
            materialize(tx, hid, &mut env)?;
            Ok(env)
        })
    }

    /// The stored envelope without checkpoints (cheap).
    pub fn envelope_bare(&self, hid: &(impl ToHandoffId + ?Sized)) -> Result<Value> {
        let hid = hid.to_handoff_id()?;
        let hid = hid.as_str();
        self.read(|tx| load(tx, hid))
    }

    /// The last checkpointed state, or `None`.
    pub fn last_checkpoint(&self, hid: &(impl ToHandoffId + ?Sized)) -> Result<Option<Value>> {
        let hid = hid.to_handoff_id()?;
        let hid = hid.as_str();
        self.read(|tx| tx.last_checkpoint(hid)?.map(|r| json::parse(&r.state_json)).transpose())
    }

    /// The last checkpoint's seq and state.
    pub fn last_checkpoint_row(&self, hid: &(impl ToHandoffId + ?Sized)) -> Result<Option<CheckpointRow>> {
        let hid = hid.to_handoff_id()?;
        let hid = hid.as_str();
        self.read(|tx| tx.last_checkpoint(hid))
    }

    /// All checkpoint rows, in seq order.
    pub fn checkpoints(&self, hid: &(impl ToHandoffId + ?Sized)) -> Result<Vec<CheckpointRow>> {
        let hid = hid.to_handoff_id()?;
        let hid = hid.as_str();
        self.read(|tx| {
            load(tx, hid)?;
            tx.checkpoints(hid)
        })
    }

    /// The ownership row, if any.
    pub fn ownership(&self, hid: &(impl ToHandoffId + ?Sized)) -> Result<Option<Ownership>> {
        let hid = hid.to_handoff_id()?;
        let hid = hid.as_str();
        self.read(|tx| tx.ownership(hid))
    }

    /// Every handoff id in the store.
    pub fn all_hids(&self) -> Result<Vec<String>> {
        self.read(|tx| tx.all_hids())
    }

    /// A summary like the reference's `dhp.status`.
    pub fn status(&self, hid: &(impl ToHandoffId + ?Sized)) -> Result<Value> {
        let hid = hid.to_handoff_id()?;
        let hid = hid.as_str();
        self.read(|tx| {
            let env = load(tx, hid)?;
            let ex = &env["execution"];
            let own = tx.ownership(hid)?;
            let approvals: Vec<Value> = tx
                .approvals_for(hid)?
                .into_iter()
                .map(|a| {
                    json!({"approval_id": a.approval_id, "action_class": a.action_class, "status": a.status,
                           "created_at": json::float(a.created_at), "decided_at": a.decided_at.map(json::float)})
                })
                .collect();
            let mut out = json!({
                "handoff_id": hid,
                "status": envelope::status(&env),
                "checkpoints": tx.next_seq(hid)?,
                "attempt": ex.get("attempt").cloned().unwrap_or(json!(0)),
                "owner": own.as_ref().map(|o| o.holder.clone()),
                "fence": own.as_ref().map(|o| o.fence),
                "effects": tx.effect_count(hid)?,
                "approvals": approvals,
                "steps": ex.get("steps").cloned().unwrap_or(json!(0)),
                "spend_usd": ex.get("spend_usd").cloned().unwrap_or(json::float(0.0)),
            });
            if Status::of(&env) == Some(Status::Completed) {
                out["result"] = env.pointer("/delivery/result").cloned().unwrap_or(Value::Null);
                out["acked"] = env.pointer("/delivery/outbox/ack").cloned().unwrap_or(json!(false));
            }
            if let Some(e) = ex.get("error").filter(|e| !e.is_null()) {
                out["error"] = e.clone();
            }
            Ok(out)
        })
    }
}

/// Fill `execution.checkpoints` from the rows, as the reference does.
pub(super) fn materialize(tx: &mut dyn Tx, hid: &str, env: &mut Value) -> Result<Vec<CheckpointRow>> {
    let rows = tx.checkpoints(hid)?;
    let list: Vec<Value> = rows
        .iter()
        .map(|r| {
            json!({"seq": r.seq, "state_hash": r.state_hash, "at": r.at,
                   "state_uri": format!("sqlite:checkpoints/{hid}/{}", r.seq)})
        })
        .collect();
    exec_mut(env)?.insert("checkpoints".into(), Value::Array(list));
    Ok(rows)
}
