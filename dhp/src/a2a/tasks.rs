//! The A2A task ↔ DHP handoff binding, kept durably in the envelope's
//! `provenance.a2a_task_id` (the reference bridge's field), and the mapping
//! of a handoff's live state to an A2A Task.
//!
//! All of this is blocking store code; the HTTP layer calls it through
//! `spawn_blocking`.

use super::rpc::RpcError;
use super::submit::Submission;
use dhp_core::envelope::{self, ORPHANED_HOLDER};
use dhp_core::store::{with_tx, Mode, Ownership};
use dhp_core::{json, Error, Runner, Status};
use serde_json::{json, Map, Value};
use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

/// Error text of a handoff canceled through A2A `CancelTask`.
pub const CANCELED_ERROR: &str = "canceled by A2A client";

/// The A2A task states we report (protobuf JSON enum names).
pub const SUBMITTED: &str = "TASK_STATE_SUBMITTED";
pub const WORKING: &str = "TASK_STATE_WORKING";
pub const COMPLETED: &str = "TASK_STATE_COMPLETED";
pub const FAILED: &str = "TASK_STATE_FAILED";
pub const CANCELED: &str = "TASK_STATE_CANCELED";

/// Whether an A2A state is final (no update follows it).
pub fn is_terminal(state: &str) -> bool {
    matches!(state, COMPLETED | FAILED | CANCELED)
}

/// The step id of a binding record (see [`binding_key`]).
const BINDING_STEP: &str = "a2a.binding";

/// Where the durable decision "task id → handoff" is kept: an effect row
/// whose key is `a2a-task:<task id>` (not a handoff id, so no handoff ever
/// counts it as its own effect). Effects are first-write-wins, so the
/// first bridge that binds a task id decides for good; no later handoff
/// carrying the same `a2a_task_id` can take the task over, after a restart
/// either.
fn binding_key(task_id: &str) -> String {
    format!("a2a-task:{task_id}")
}

#[derive(Default)]
struct Binding {
    /// a2a task id → handoff id, as decided (durably recorded).
    by_task: HashMap<String, String>,
    /// Handoffs found carrying a task id that is not decided yet.
    candidates: HashMap<String, Vec<String>>,
    /// Every handoff id already read (bound or not), so a rescan reads
    /// only handoffs that are new since the last one.
    seen: HashSet<String>,
}

/// One bridge per server process; any number may share a store.
pub struct Bridge {
    runner: Runner,
    binding: Mutex<Binding>,
}

impl Bridge {
    /// A bridge over `runner`'s store; the handoffs are read at once (a
    /// restarted bridge answers for every task).
    pub fn new(runner: Runner) -> Result<Bridge, Error> {
        let b = Bridge { runner, binding: Mutex::new(Binding::default()) };
        b.rescan()?;
        Ok(b)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Binding> {
        self.binding.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Read the provenance of every handoff not read before. Handoffs
    /// written by the reference's bridge (or another of ours) are found
    /// here; which one a task id names is decided by [`Bridge::decide`].
    fn rescan(&self) -> Result<(), Error> {
        let hids = self.runner.all_hids()?;
        let fresh: Vec<String> = {
            let b = self.lock();
            hids.into_iter().filter(|h| !b.seen.contains(h)).collect()
        };
        let mut found = Vec::new();
        for hid in &fresh {
            // An unreadable row is the supervisor's business (quarantine);
            // it simply binds no task here.
            if let Ok(env) = self.runner.envelope_bare(hid) {
                if let Some(tid) = env.pointer("/provenance/a2a_task_id").and_then(Value::as_str) {
                    found.push((tid.to_string(), hid.clone()));
                }
            }
        }
        let mut b = self.lock();
        b.seen.extend(fresh);
        for (tid, hid) in found {
            let c = b.candidates.entry(tid).or_default();
            if !c.contains(&hid) {
                c.push(hid);
            }
        }
        Ok(())
    }

    /// The recorded binding of `task_id`, if any.
    fn recorded(&self, task_id: &str) -> Result<Option<String>, Error> {
        let key = binding_key(task_id);
        let text = with_tx(self.runner.store().as_ref(), Mode::Read, |tx| tx.effect(&key, BINDING_STEP))?;
        let Some(text) = text else { return Ok(None) };
        let v = json::parse(&text)?;
        match v.get("handoff_id").and_then(Value::as_str) {
            Some(h) => Ok(Some(h.to_string())),
            None => Err(Error::validation(format!("binding record of {key} names no handoff_id"))),
        }
    }

    /// Record `task_id → hid` unless a binding is recorded already; the
    /// recorded one (first write wins) is returned.
    fn record(&self, task_id: &str, hid: &str) -> Result<String, Error> {
        let key = binding_key(task_id);
        let text = json::dumps(&json!({"handoff_id": hid}))?;
        let now = self.runner.config().clock.store_time();
        let won =
            with_tx(self.runner.store().as_ref(), Mode::Write, |tx| tx.insert_effect(&key, BINDING_STEP, &text, now))?;
        if won {
            return Ok(hid.to_string());
        }
        self.recorded(task_id)?.ok_or_else(|| Error::validation(format!("binding record of {key} vanished")))
    }

    /// Decide which handoff `task_id` names: the recorded binding if there
    /// is one; else, when exactly one handoff carries the task id (a task
    /// of the reference's bridge, or of an older one of ours), it is
    /// recorded now. Several unrecorded candidates are refused: guessing
    /// could hand the task to a forgery.
    fn decide(&self, task_id: &str) -> Result<Option<String>, RpcError> {
        if let Some(h) = self.lock().by_task.get(task_id) {
            return Ok(Some(h.clone()));
        }
        let mut hid = self.recorded(task_id).map_err(RpcError::internal)?;
        if hid.is_none() {
            let c = self.lock().candidates.get(task_id).cloned().unwrap_or_default();
            match c.as_slice() {
                [] => return Ok(None),
                [only] => hid = Some(self.record(task_id, only).map_err(RpcError::internal)?),
                many => {
                    tracing::warn!(task = task_id, handoffs = many.len(), "a2a: task id carried by several handoffs");
                    return Err(RpcError::internal(format!(
                        "task {task_id:?} is carried by {} handoffs and none was bound to it first: refusing to guess",
                        many.len()
                    )));
                }
            }
        }
        let hid = hid.unwrap_or_default();
        self.lock().by_task.insert(task_id.to_string(), hid.clone());
        Ok(Some(hid))
    }

    /// The handoff bound to `task_id`, looking in the store on a miss.
    pub fn handoff_of(&self, task_id: &str) -> Result<String, RpcError> {
        if let Some(h) = self.decide(task_id)? {
            return Ok(h);
        }
        self.rescan().map_err(RpcError::internal)?;
        self.decide(task_id)?.ok_or_else(|| RpcError::task_not_found(task_id))
    }

    /// Dispatch a submission as a handoff bound to a fresh task id. The
    /// binding is recorded before the dispatch, so no other handoff can
    /// ever be the task's.
    pub fn submit(&self, sub: &Submission) -> Result<(String, String), RpcError> {
        let task_id = format!("task-{}", uuid::Uuid::new_v4().simple());
        let env = sub.envelope(&task_id).map_err(RpcError::invalid_params)?;
        let hid = envelope::handoff_id(&env).map_err(RpcError::invalid_params)?;
        if self.record(&task_id, &hid).map_err(RpcError::internal)? != hid {
            return Err(RpcError::internal(format!("task id {task_id} is already bound")));
        }
        let stored = self.runner.dispatch(&env).map_err(|e| match e {
            Error::Validation { .. } | Error::Oversize { .. } | Error::OutOfRange { .. } => RpcError::invalid_params(e),
            other => RpcError::internal(other),
        })?;
        if stored != hid {
            return Err(RpcError::internal(format!("dispatch stored {stored}, not {hid}")));
        }
        let mut b = self.lock();
        b.seen.insert(hid.clone());
        b.by_task.insert(task_id.clone(), hid.clone());
        crate::metrics::A2A_TASKS.inc(0);
        Ok((task_id, hid))
    }

    /// Every bound task, by task id.
    pub fn all_tasks(&self) -> Result<Vec<Value>, RpcError> {
        self.rescan().map_err(RpcError::internal)?;
        let mut tids: Vec<String> = {
            let b = self.lock();
            b.by_task.keys().chain(b.candidates.keys()).cloned().collect::<HashSet<_>>().into_iter().collect()
        };
        tids.sort();
        let mut out = Vec::with_capacity(tids.len());
        for tid in tids {
            // A task id no handoff is bound to (several candidates) is left out.
            let Ok(Some(hid)) = self.decide(&tid) else { continue };
            let env = self.runner.envelope_bare(&hid).map_err(RpcError::internal)?;
            out.push(task_json(&tid, &hid, &env));
        }
        Ok(out)
    }

    /// The A2A Task JSON of `task_id` as its handoff stands now.
    pub fn task(&self, task_id: &str) -> Result<Value, RpcError> {
        let hid = self.handoff_of(task_id)?;
        // A binding recorded by a submit whose dispatch then failed.
        let env = self.runner.envelope_bare(&hid).map_err(|e| match e {
            Error::UnknownHandoff { .. } => RpcError::task_not_found(task_id),
            e => RpcError::internal(e),
        })?;
        Ok(task_json(task_id, &hid, &env))
    }

    /// Cancel: a task not yet terminal becomes `failed` with
    /// [`CANCELED_ERROR`]; a live owner is fenced off (its ownership row
    /// becomes a tombstone, fence+1), so its next checkpoint or complete is
    /// refused. A terminal task is not cancelable.
    pub fn cancel(&self, task_id: &str) -> Result<Value, RpcError> {
        let hid = self.handoff_of(task_id)?;
        let cfg = self.runner.config().clone();
        let outcome = with_tx(self.runner.store().as_ref(), Mode::Write, |tx| {
            let Some(mut env) = tx.envelope(&hid)? else {
                return Err(Error::UnknownHandoff { hid: hid.clone() });
            };
            let status = envelope::status(&env).to_string();
            if Status::of(&env).is_some_and(Status::is_terminal) {
                return Ok(Err(status));
            }
            let st = cfg.clock.store_time();
            let t = st.secs();
            if let Some(own) = tx.ownership(&hid)? {
                let tomb = Ownership {
                    holder: ORPHANED_HOLDER.to_string(),
                    fence: own.fence.next(),
                    lease_expires_at: 0.0,
                    ..own
                };
                tx.update_ownership(&tomb, st)?;
            }
            if let Some(ex) = env.get_mut("execution").and_then(Value::as_object_mut) {
                ex.insert("status".into(), json!(Status::Failed.as_str()));
                ex.insert("error".into(), json!(CANCELED_ERROR));
                ex.insert("canceled_at".into(), json::float(t));
                ex.insert("checkpoints".into(), json!([]));
            } else {
                return Err(Error::validation("envelope has no execution object"));
            }
            let text = json::dumps(&env)?;
            if text.len() > cfg.max_envelope_bytes {
                return Err(Error::Oversize { what: "envelope", size: text.len(), limit: cfg.max_envelope_bytes });
            }
            tx.update_envelope(&hid, &text, st)?;
            Ok(Ok(env))
        })
        .map_err(RpcError::internal)?;
        match outcome {
            Ok(env) => {
                crate::metrics::A2A_TASKS.inc(1);
                Ok(task_json(task_id, &hid, &env))
            }
            Err(status) => Err(RpcError::not_cancelable(task_id, &status)),
        }
    }
}

/// The A2A state of a handoff status. Orphaned is transient (a standby is
/// coming), so it is WORKING like pending and running; only the DLQ makes a
/// task FAILED, and only our cancel makes it CANCELED.
pub fn state_of(env: &Value) -> &'static str {
    match Status::of(env) {
        Some(Status::Completed) => COMPLETED,
        Some(Status::Failed) if is_canceled(env) => CANCELED,
        Some(Status::Failed) => FAILED,
        _ => WORKING,
    }
}

fn is_canceled(env: &Value) -> bool {
    env.pointer("/execution/error").and_then(Value::as_str) == Some(CANCELED_ERROR)
}

/// RFC 3339 UTC with microseconds, as protobuf's Timestamp JSON wants.
pub fn timestamp() -> String {
    chrono::Utc::now().format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
}

/// The Task object (protobuf JSON of `a2a.v1.Task`).
pub fn task_json(task_id: &str, hid: &str, env: &Value) -> Value {
    let state = state_of(env);
    let mut status = Map::new();
    status.insert("state".into(), json!(state));
    status.insert("timestamp".into(), json!(timestamp()));
    if state == FAILED || state == CANCELED {
        let why = env.pointer("/execution/error").and_then(Value::as_str).unwrap_or("handoff failed");
        status.insert("message".into(), agent_message(why));
    }
    let mut task = Map::new();
    task.insert("id".into(), json!(task_id));
    let ctx = env.pointer("/provenance/trace_id").and_then(Value::as_str).unwrap_or("");
    task.insert("contextId".into(), json!(ctx));
    task.insert("status".into(), Value::Object(status));
    if state == COMPLETED {
        task.insert("artifacts".into(), json!([artifact(hid, env)]));
    }
    task.insert("metadata".into(), metadata(hid, env));
    Value::Object(task)
}

/// The result artifact: the result as a data part and, as the reference
/// bridge writes it, as JSON text.
pub fn artifact(hid: &str, env: &Value) -> Value {
    let result = env.pointer("/delivery/result").cloned().unwrap_or(Value::Null);
    let text = serde_json::to_string(&result).unwrap_or_default();
    json!({
        "artifactId": format!("artifact-{}", &hid[..hid.len().min(12)]),
        "name": "result",
        "description": "DHP handoff result",
        "parts": [{"text": text}, {"data": result, "mediaType": "application/json"}],
    })
}

/// DHP facts beside the A2A view (for operators; clients may ignore them).
fn metadata(hid: &str, env: &Value) -> Value {
    let ex = env.get("execution").cloned().unwrap_or(Value::Null);
    json!({
        "dhp_handoff_id": hid,
        "dhp_status": envelope::status(env),
        "dhp_attempt": ex.get("attempt").cloned().unwrap_or(json!(0)),
        "dhp_kind": env.pointer("/task/kind").cloned().unwrap_or(Value::Null),
    })
}

fn agent_message(text: &str) -> Value {
    json!({
        "messageId": format!("msg-{}", uuid::Uuid::new_v4().simple()),
        "role": "ROLE_AGENT",
        "parts": [{"text": text}],
    })
}
