//! What each tool does. A lease is tied to its `worker_id`, and the fence
//! a call presents is the one the store holds for that worker (re-checked
//! inside the write). Unlike the reference, a session remembers which
//! (handoff, worker id) pairs it claimed or recovered, and acts under no
//! other: a client cannot checkpoint, complete or spend under a worker id
//! that another session claimed with.

use super::args::{label_limit, Args};
use super::tools::Role;
use dhp_core::envelope::{self, Budget, BuildOptions};
use dhp_core::status::ApprovalStatus;
use dhp_core::store::{with_tx, Approval, Mode};
use dhp_core::{json, Error, Lease, Runner, Status};
use serde_json::{json, Map, Value};
use std::collections::HashSet;
use std::sync::Mutex;

/// What one MCP session (one `dhp mcp` process: stdio has one client) is
/// allowed: its role, and the (handoff, worker id) pairs it claimed or
/// recovered.
pub struct Session {
    pub role: Role,
    bound: Mutex<HashSet<(String, String)>>,
}

impl Session {
    pub fn new(role: Role) -> Session {
        Session { role, bound: Mutex::new(HashSet::new()) }
    }

    fn bind(&self, hid: &str, worker: &str) {
        self.bound.lock().unwrap_or_else(|p| p.into_inner()).insert((hid.to_string(), worker.to_string()));
    }

    /// `UnboundWorker` unless this session claimed or recovered `hid` as `worker`.
    fn check(&self, hid: &str, worker: &str) -> Result<(), Error> {
        let bound = self.bound.lock().unwrap_or_else(|p| p.into_inner());
        if bound.contains(&(hid.to_string(), worker.to_string())) {
            Ok(())
        } else {
            Err(Error::UnboundWorker { hid: hid.to_string(), worker: worker.to_string() })
        }
    }
}

/// `handoff_id` and `worker_id` of a call that acts under a lease: well
/// formed, and bound to this session.
fn leased<'a>(s: &Session, a: &Args<'a>) -> Result<(&'a str, &'a str), Error> {
    let (hid, w) = (a.hid()?, a.worker()?);
    s.check(hid, w)?;
    Ok((hid, w))
}

/// A tool's answer before encoding: the keys after `"ok": true`, or a typed error.
pub type Reply = Result<Map<String, Value>, Error>;

/// The reference's `_fence`: the lease `worker` holds on `hid`, as the
/// store has it. MCP calls name the worker, not a fence, so the current
/// fence is presented on the worker's behalf.
fn lease_of(r: &Runner, hid: &str, worker: &str) -> Result<Lease, Error> {
    match r.ownership(hid)? {
        Some(o) if o.holder == worker => Lease::presented(hid, o.fence),
        o => Err(Error::StaleFence {
            hid: hid.to_string(),
            holder: worker.to_string(),
            // No fence presented: server::message words this case.
            presented: dhp_core::Fence::new(-1),
            current: o.as_ref().map(|o| o.fence),
            current_holder: o.map(|o| o.holder),
        }),
    }
}

fn obj(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// Run tool `name`. `None` for a tool this session's role is not offered.
pub fn call(base: &Runner, s: &Session, name: &str, a: &Args<'_>) -> Option<Reply> {
    super::tools::find(s.role, name)?;
    let cfg = base.config();
    let lim = label_limit(cfg);
    Some((|| -> Reply {
        match name {
            "dhp_dispatch" => dispatch(base, a),
            "dhp_claim" | "dhp_recover" => {
                let (hid, w) = (a.hid()?, a.worker()?);
                let r = base.with_id(w)?;
                let ctx = if name == "dhp_claim" { r.claim(hid)? } else { r.recover(hid)? };
                s.bind(hid, w);
                Ok(obj(json!({"fence": ctx.fence(), "resume_from": r.last_checkpoint(hid)?})))
            }
            "dhp_checkpoint" => {
                let (hid, w) = leased(s, a)?;
                let state = a.object("state", cfg.max_checkpoint_bytes)?;
                let r = base.with_id(w)?;
                // Checkpoint and lease renewal in one transaction.
                let step = r.checkpoint_step(&lease_of(&r, hid, w)?, state, 0)?;
                Ok(obj(json!({"seq": step.enforce_budget()?})))
            }
            "dhp_heartbeat" => {
                let (hid, w) = leased(s, a)?;
                let r = base.with_id(w)?;
                r.heartbeat(&lease_of(&r, hid, w)?)?;
                Ok(Map::new())
            }
            "dhp_complete" => complete(base, s, a),
            "dhp_status" => {
                let mut s = obj(base.status(a.hid()?)?);
                // The reference's dhp.status has neither key.
                s.shift_remove("fence");
                s.shift_remove("acked");
                Ok(s)
            }
            "dhp_last_checkpoint" => Ok(obj(json!({"state": base.last_checkpoint(a.hid()?)?}))),
            "dhp_health" => Ok(obj(json!({
                "handoffs": base.all_hids()?.len(),
                "lease_ttl_s": json::float(cfg.lease_ttl_s()),
            }))),
            "dhp_record_effect" => {
                let (hid, w) = leased(s, a)?;
                let step = a.label("step_id", lim)?;
                let result = a.object("result", cfg.max_checkpoint_bytes)?;
                let r = base.with_id(w)?;
                Ok(obj(json!({"recorded": r.record_effect(&lease_of(&r, hid, w)?, step, result)?})))
            }
            "dhp_effect_done" => effect_done(base, a, lim),
            "dhp_note_spend" => {
                let (hid, w) = leased(s, a)?;
                // The library refuses a negative or non-finite amount.
                let usd = a.number("usd")?;
                let r = base.with_id(w)?;
                r.note_spend(&lease_of(&r, hid, w)?, usd)?;
                Ok(Map::new())
            }
            "dhp_note_activity" => {
                let (hid, w) = leased(s, a)?;
                let digest = a.label("digest", lim)?;
                let r = base.with_id(w)?;
                Ok(obj(json!({"repeat_count": r.note_activity(&lease_of(&r, hid, w)?, digest)?})))
            }
            "dhp_request_approval" => {
                let (hid, w) = leased(s, a)?;
                let class = a.string("action_class")?;
                let details = a.object("details", cfg.max_checkpoint_bytes)?;
                let r = base.with_id(w)?;
                request_approval(&r, hid, w, class, details).map(|id| obj(json!({"approval_id": id})))
            }
            "dhp_approval_status" => {
                let id = a.string("approval_id")?;
                let ap = approval_status(base, id)?;
                Ok(obj(json!({"status": ap.status, "action_class": ap.action_class})))
            }
            "dhp_approve" | "dhp_deny" => {
                let id = a.string("approval_id")?;
                Ok(obj(json!({"decided": base.decide_approval(id, name == "dhp_approve")?})))
            }
            "dhp_require_capability" => {
                let (hid, w) = leased(s, a)?;
                let (domain, resource) = (a.label("domain", lim)?, a.label("resource", lim)?);
                let r = base.with_id(w)?;
                r.require_capability(&lease_of(&r, hid, w)?, domain, resource)?;
                Ok(obj(json!({"granted": true})))
            }
            _ => Err(Error::validation(format!("unknown tool {name}"))),
        }
    })())
}

/// `dhp_dispatch`: build an SDK envelope from the task kind, inputs and
/// output schema, and dispatch it.
fn dispatch(base: &Runner, a: &Args<'_>) -> Reply {
    let cfg = base.config();
    let kind = a.string("task_kind")?;
    if kind.is_empty() || kind.chars().count() > 128 {
        return Err(Error::validation("malformed task_kind: want 1-128 characters"));
    }
    let inputs = a.object("inputs", cfg.max_envelope_bytes)?;
    let schema = a.object("output_schema", cfg.max_envelope_bytes)?;
    // An uncompilable schema would only surface at complete time.
    jsonschema::validator_for(schema)
        .map_err(|e| Error::validation_from(format!("output_schema is not a valid JSON Schema: {e}"), e))?;
    let env = envelope::build(
        kind,
        json!({"inline": inputs}),
        schema.clone(),
        BuildOptions {
            budget: Some(Budget::SDK_DEFAULT.to_value()),
            created_by: Some("dhp-api".into()),
            ..Default::default()
        },
    )?;
    Ok(obj(json!({"handoff_id": base.dispatch(&env)?})))
}

/// `dhp_complete`: complete under the worker's lease (a repeat complete is
/// a no-op).
fn complete(base: &Runner, s: &Session, a: &Args<'_>) -> Reply {
    let cfg = base.config();
    let (hid, w) = leased(s, a)?;
    let result = a.object("result", cfg.max_result_bytes)?;
    let r = base.with_id(w)?;
    // The lease row is gone once completed; complete is then a
    // no-op (the protocol's idempotent second complete).
    let lease = match lease_of(&r, hid, w) {
        Ok(l) => l,
        Err(e) if Status::of(&r.envelope_bare(hid)?) == Some(Status::Completed) => {
            tracing::debug!("repeat complete of {hid} by {w}: {e}");
            Lease::presented(hid, -1)?
        }
        Err(e) => return Err(e),
    };
    r.complete(&lease, result)?;
    Ok(Map::new())
}

/// `dhp_effect_done`: a recorded effect's result, if any.
fn effect_done(base: &Runner, a: &Args<'_>, lim: usize) -> Reply {
    let hid = a.hid()?;
    let step = a.label("step_id", lim)?;
    let text = with_tx(base.store().as_ref(), Mode::Read, |tx| {
        if tx.status(hid)?.is_none() {
            return Err(Error::UnknownHandoff { hid: hid.to_string() });
        }
        tx.effect(hid, step)
    })?;
    Ok(obj(json!({"result": text.map(|t| json::parse(&t)).transpose()?})))
}

/// Approval seconds before a pending request expires (the reference's default).
const APPROVAL_TIMEOUT_S: f64 = 300.0;

/// Like the reference's server, every class gets a pending record the
/// approver decides; the library gates only financial/destructive, so the
/// record for read/write is written here after the same ownership check.
fn request_approval(r: &Runner, hid: &str, w: &str, class: &str, details: &Value) -> Result<String, Error> {
    let lease = lease_of(r, hid, w)?;
    match r.request_approval(&lease, class, details, APPROVAL_TIMEOUT_S) {
        Err(Error::ApprovalRequired { approval_id, .. }) => Ok(approval_id),
        Err(e) => Err(e),
        Ok(()) => {
            let t = r.config().clock.now();
            let approval_id = format!("apr-{:012x}", rand::random::<u64>() & 0xffff_ffff_ffff);
            let row = Approval {
                approval_id: approval_id.clone(),
                hid: hid.to_string(),
                action_class: class.to_string(),
                details_json: json::dumps_sorted(details)?,
                status: ApprovalStatus::Pending,
                created_at: t,
                expires_at: t + APPROVAL_TIMEOUT_S,
                decided_at: None,
            };
            with_tx(r.store().as_ref(), Mode::Write, |tx| tx.insert_approval(&row))?;
            Ok(approval_id)
        }
    }
}

/// An approval, with a pending one past its expiry reported (and stored) as expired.
fn approval_status(r: &Runner, id: &str) -> Result<Approval, Error> {
    with_tx(r.store().as_ref(), Mode::Write, |tx| {
        let ap = tx.approval(id)?.ok_or_else(|| Error::UnknownApproval { approval_id: id.to_string() })?;
        let now = r.config().clock.store_time();
        let status = ap.status.at(ap.expires_at, now.secs());
        if status != ap.status {
            tx.expire_approvals(now)?;
        }
        Ok(Approval { status, ..ap })
    })
}
