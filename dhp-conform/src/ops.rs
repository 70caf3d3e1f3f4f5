//! Typed calls over an [`Adapter`]: what assertions are written with.

use crate::check::{kind_in, Check, Fail};
use crate::client::{Adapter, ErrorReply, Reply};
use serde_json::{json, Value};

/// A worker's hold on a handoff: what claim/recover hand out.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Token {
    pub root: String,
    pub worker: String,
    pub hid: String,
    pub fence: i64,
}

impl Token {
    /// `{root, worker, hid, fence}`.
    pub(crate) fn args(&self) -> Value {
        json!({"root": self.root, "worker": self.worker, "hid": self.hid, "fence": self.fence})
    }

    /// The token's args plus one more field.
    pub(crate) fn with(&self, key: &str, value: Value) -> Value {
        let mut a = self.args();
        a[key] = value;
        a
    }

    /// The same hold presented by another worker id or fence (a forgery or
    /// a stale copy).
    pub(crate) fn as_worker(&self, worker: &str, fence: i64) -> Token {
        Token { worker: worker.into(), fence, ..self.clone() }
    }
}

/// The action a scan reported for `hid`, if any.
pub(crate) fn action_for<'a>(actions: &'a [Value], hid: &str) -> Option<&'a str> {
    actions.iter().find(|a| a["hid"] == hid).and_then(|a| a["action"].as_str())
}

fn field<'a>(v: &'a Value, op: &str, key: &str) -> Check<&'a Value> {
    v.get(key).ok_or_else(|| Fail::Errored(format!("{op} result has no {key:?}")))
}

fn int(v: &Value, op: &str, key: &str) -> Check<i64> {
    field(v, op, key)?.as_i64().ok_or_else(|| Fail::Errored(format!("{op} result {key:?} is not an integer")))
}

fn string(v: &Value, op: &str, key: &str) -> Check<String> {
    Ok(field(v, op, key)?
        .as_str()
        .ok_or_else(|| Fail::Errored(format!("{op} result {key:?} is not a string")))?
        .to_string())
}

fn boolean(v: &Value, op: &str, key: &str) -> Check<bool> {
    field(v, op, key)?.as_bool().ok_or_else(|| Fail::Errored(format!("{op} result {key:?} is not a boolean")))
}

fn opt(v: &Value) -> Option<Value> {
    (!v.is_null()).then(|| v.clone())
}

impl Adapter {
    /// Call `op`; an error reply is a failure of the implementation, an
    /// `Unsupported` reply an error of the adapter.
    pub(crate) fn op(&mut self, op: &str, args: Value) -> Check<Value> {
        match self.try_op(op, args)? {
            Ok(v) => Ok(v),
            Err(e) => Err(Fail::Failed(format!("{op} was rejected: {e}"))),
        }
    }

    /// Call `op` and hand back either outcome for the assertion to judge.
    pub(crate) fn try_op(&mut self, op: &str, args: Value) -> Check<Result<Value, ErrorReply>> {
        match self.call(op, args)? {
            Reply::Ok(v) => Ok(Ok(v)),
            Reply::Err(e) if e.kind == "Unsupported" => {
                Err(Fail::Errored(format!("adapter does not support {op}: {}", e.message)))
            }
            Reply::Err(e) => Ok(Err(e)),
        }
    }

    /// `op` must be rejected with one of `kinds`.
    pub(crate) fn must_fail(&mut self, op: &str, args: Value, kinds: &[&str], what: &str) -> Check<ErrorReply> {
        match self.try_op(op, args)? {
            Ok(v) => {
                Err(Fail::Failed(format!("{what}: accepted (result {v}); must be rejected with {}", kinds.join("/"))))
            }
            Err(e) => {
                kind_in(&e, kinds, what)?;
                Ok(e)
            }
        }
    }

    /// `op` must be rejected, whatever the kind.
    pub(crate) fn must_refuse(&mut self, op: &str, args: Value, what: &str) -> Check<ErrorReply> {
        match self.try_op(op, args)? {
            Ok(v) => Err(Fail::Failed(format!("{what}: accepted (result {v}); must be rejected"))),
            Err(e) => Ok(e),
        }
    }

    pub(crate) fn open(&mut self, root: &str) -> Check<Option<String>> {
        let v = self.op("open", json!({"root": root}))?;
        Ok(v.get("store_file").and_then(Value::as_str).map(String::from))
    }

    /// `build_envelope` with the given spec (kind, inputs, output_schema, …).
    pub(crate) fn build(&mut self, spec: Value) -> Check<Value> {
        let v = self.op("build_envelope", spec)?;
        Ok(field(&v, "build_envelope", "envelope")?.clone())
    }

    pub(crate) fn dispatch(&mut self, root: &str, env: &Value) -> Check<String> {
        let v = self.op("dispatch", json!({"root": root, "envelope": env}))?;
        string(&v, "dispatch", "hid")
    }

    pub(crate) fn claim(&mut self, root: &str, worker: &str, hid: &str) -> Check<Token> {
        let v = self.op("claim", json!({"root": root, "worker": worker, "hid": hid}))?;
        Ok(Token { root: root.into(), worker: worker.into(), hid: hid.into(), fence: int(&v, "claim", "fence")? })
    }

    pub(crate) fn recover(&mut self, root: &str, worker: &str, hid: &str) -> Check<Token> {
        let v = self.op("recover", json!({"root": root, "worker": worker, "hid": hid}))?;
        Ok(Token { root: root.into(), worker: worker.into(), hid: hid.into(), fence: int(&v, "recover", "fence")? })
    }

    pub(crate) fn checkpoint(&mut self, t: &Token, state: Value) -> Check<i64> {
        let v = self.op("checkpoint", t.with("state", state))?;
        int(&v, "checkpoint", "seq")
    }

    pub(crate) fn heartbeat(&mut self, t: &Token) -> Check<f64> {
        let v = self.op("heartbeat", t.args())?;
        field(&v, "heartbeat", "expires_in_s")?.as_f64().ok_or_else(|| Fail::Errored("heartbeat: not a number".into()))
    }

    pub(crate) fn note_step(&mut self, t: &Token, n: i64) -> Check {
        self.op("note_step", t.with("n", json!(n))).map(drop)
    }

    pub(crate) fn complete(&mut self, t: &Token, result: Value) -> Check {
        self.op("complete", t.with("result", result)).map(drop)
    }

    pub(crate) fn release(&mut self, t: &Token, reason: &str) -> Check {
        self.op("release", t.with("reason", json!(reason))).map(drop)
    }

    pub(crate) fn ack(&mut self, root: &str, hid: &str) -> Check {
        self.op("ack", json!({"root": root, "hid": hid})).map(drop)
    }

    pub(crate) fn last_checkpoint(&mut self, root: &str, hid: &str) -> Check<Option<Value>> {
        let v = self.op("last_checkpoint", json!({"root": root, "hid": hid}))?;
        Ok(opt(field(&v, "last_checkpoint", "state")?))
    }

    /// The `status` object (see ADAPTERS.md).
    pub(crate) fn status(&mut self, root: &str, hid: &str) -> Check<Value> {
        self.op("status", json!({"root": root, "hid": hid}))
    }

    pub(crate) fn load_envelope(&mut self, root: &str, hid: &str) -> Check<Value> {
        let v = self.op("load_envelope", json!({"root": root, "hid": hid}))?;
        Ok(field(&v, "load_envelope", "envelope")?.clone())
    }

    pub(crate) fn ownership(&mut self, root: &str, hid: &str) -> Check<Option<Value>> {
        let v = self.op("ownership", json!({"root": root, "hid": hid}))?;
        Ok(opt(field(&v, "ownership", "ownership")?))
    }

    pub(crate) fn leadership(&mut self, root: &str) -> Check<Option<Value>> {
        let v = self.op("leadership", json!({"root": root}))?;
        Ok(opt(field(&v, "leadership", "leadership")?))
    }

    pub(crate) fn ensure_leadership(&mut self, root: &str, supervisor: &str) -> Check<bool> {
        let v = self.op("ensure_leadership", json!({"root": root, "supervisor": supervisor}))?;
        boolean(&v, "ensure_leadership", "leader")
    }

    pub(crate) fn scan(&mut self, root: &str, supervisor: &str) -> Check<crate::check::Values> {
        let v = self.op("scan", json!({"root": root, "supervisor": supervisor}))?;
        Ok(crate::check::Values(field(&v, "scan", "actions")?.as_array().cloned().unwrap_or_default()))
    }

    pub(crate) fn expire_lease(&mut self, root: &str, hid: &str) -> Check<bool> {
        let v = self.op("expire_lease", json!({"root": root, "hid": hid}))?;
        boolean(&v, "expire_lease", "updated")
    }

    pub(crate) fn expire_leadership(&mut self, root: &str) -> Check<bool> {
        let v = self.op("expire_leadership", json!({"root": root}))?;
        boolean(&v, "expire_leadership", "updated")
    }

    pub(crate) fn ship_envelope(&mut self, root: &str, hid: &str, log: &str) -> Check {
        self.op("ship_envelope", json!({"root": root, "hid": hid, "log": log})).map(drop)
    }

    pub(crate) fn ship_checkpoint(&mut self, log: &str, seq: i64, state: Value) -> Check {
        self.op("ship_checkpoint", json!({"log": log, "seq": seq, "state": state})).map(drop)
    }

    /// `{handoff_id, checkpoints_ingested, lines_skipped}`.
    pub(crate) fn ingest(&mut self, root: &str, log: &str) -> Check<Value> {
        self.op("ingest", json!({"root": root, "log": log}))
    }

    pub(crate) fn suspend(&mut self, root: &str, hid: &str, path: &str) -> Check<i64> {
        let v = self.op("suspend", json!({"root": root, "hid": hid, "path": path}))?;
        int(&v, "suspend", "bytes")
    }

    pub(crate) fn resume(&mut self, root: &str, path: &str) -> Check<String> {
        let v = self.op("resume", json!({"root": root, "path": path}))?;
        string(&v, "resume", "hid")
    }

    /// Expire `t`'s lease and have `supervisor` scan: the handoff must come
    /// out orphaned (`t` is stale from then on).
    pub(crate) fn orphan_via_scan(&mut self, t: &Token, supervisor: &str) -> Check {
        self.expire_lease(&t.root, &t.hid)?;
        let acts = self.scan(&t.root, supervisor)?;
        match action_for(&acts, &t.hid) {
            Some("orphaned") => Ok(()),
            other => Err(Fail::failed(format!(
                "scan after lease expiry: action for the handoff is {other:?}, want \"orphaned\" (actions {acts:?})"
            ))),
        }
    }
}
