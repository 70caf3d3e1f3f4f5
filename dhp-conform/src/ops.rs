//! Typed calls over an [`Adapter`]: what assertions are written with.

use crate::check::{kind_in, Check, Fail};
use crate::client::{Adapter, ErrorReply, Reply};
use dhp_adapter_proto::{args, Op, Request, Response};
use serde_json::{json, Map, Value};

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

/// Ask `$ad` the typed request `$v($a)`; its typed result.
macro_rules! ask {
    ($ad:expr, $v:ident($a:expr)) => {
        match $ad.ask_typed(Request::$v($a))? {
            Response::$v(r) => r,
            other => return Err(Fail::Errored(format!("{} answered as {}", Op::$v, other.op()))),
        }
    };
}

/// The args of a holder's op: the token's members and `$f`s.
macro_rules! held {
    ($t:expr, $v:ident { $($f:ident: $e:expr),* }) => {
        args::$v { root: $t.root.clone(), worker: $t.worker.clone(), hid: $t.hid.clone(), fence: $t.fence, $($f: $e),* }
    };
}

fn handoff(root: &str, hid: &str) -> args::Handoff {
    args::Handoff { root: root.into(), hid: hid.into() }
}

fn take(root: &str, worker: &str, hid: &str) -> args::Take {
    args::Take { root: root.into(), worker: worker.into(), hid: hid.into() }
}

fn opt(v: &Value) -> Option<Value> {
    (!v.is_null()).then(|| v.clone())
}

fn object(m: Option<Map<String, Value>>) -> Option<Value> {
    m.map(Value::Object)
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

    /// Ask a typed request; its result as sent (checked against the
    /// op's schema and read as its type on the way in). An error reply is
    /// a failure of the implementation, an `Unsupported` reply an error
    /// of the adapter.
    pub(crate) fn ask(&mut self, req: Request) -> Check<Value> {
        let op = req.op();
        let id = self.send_request(req, None)?;
        match self.recv(id, op.as_str())? {
            Reply::Ok(v) => Ok(v),
            Reply::Err(e) if e.kind == "Unsupported" => {
                Err(Fail::Errored(format!("adapter does not support {op}: {}", e.message)))
            }
            Reply::Err(e) => Err(Fail::Failed(format!("{op} was rejected: {e}"))),
        }
    }

    /// [`Adapter::ask`], the result typed.
    pub(crate) fn ask_typed(&mut self, req: Request) -> Check<Response> {
        let op = req.op();
        Response::from_result(op, self.ask(req)?).map_err(|e| Fail::Errored(e.to_string()))
    }

    pub(crate) fn open(&mut self, root: &str) -> Check<Option<String>> {
        Ok(ask!(self, Open(args::Root { root: root.into() })).store_file)
    }

    /// `build_envelope` with the given spec (kind, inputs, output_schema, …).
    pub(crate) fn build(&mut self, spec: Value) -> Check<Value> {
        let spec: args::BuildEnvelope = serde_json::from_value(spec)
            .map_err(|e| Fail::Errored(format!("a build_envelope spec the protocol has no shape for: {e}")))?;
        Ok(Value::Object(ask!(self, BuildEnvelope(spec)).envelope))
    }

    pub(crate) fn dispatch(&mut self, root: &str, env: &Value) -> Check<String> {
        Ok(ask!(self, Dispatch(args::Dispatch { root: root.into(), envelope: env.clone() })).hid)
    }

    pub(crate) fn claim(&mut self, root: &str, worker: &str, hid: &str) -> Check<Token> {
        let fence = ask!(self, Claim(take(root, worker, hid))).fence;
        Ok(Token { root: root.into(), worker: worker.into(), hid: hid.into(), fence })
    }

    pub(crate) fn recover(&mut self, root: &str, worker: &str, hid: &str) -> Check<Token> {
        let fence = ask!(self, Recover(take(root, worker, hid))).fence;
        Ok(Token { root: root.into(), worker: worker.into(), hid: hid.into(), fence })
    }

    pub(crate) fn checkpoint(&mut self, t: &Token, state: Value) -> Check<i64> {
        let seq = ask!(self, Checkpoint(held!(t, Checkpoint { state: state }))).seq;
        i64::try_from(seq).map_err(|_| Fail::Errored(format!("checkpoint seq {seq} is out of range")))
    }

    pub(crate) fn heartbeat(&mut self, t: &Token) -> Check<f64> {
        let token = args::Token { root: t.root.clone(), worker: t.worker.clone(), hid: t.hid.clone(), fence: t.fence };
        Ok(ask!(self, Heartbeat(token)).expires_in_s)
    }

    pub(crate) fn note_step(&mut self, t: &Token, n: i64) -> Check {
        self.ask(Request::NoteStep(held!(t, NoteStep { n: n }))).map(drop)
    }

    pub(crate) fn complete(&mut self, t: &Token, result: Value) -> Check {
        self.ask(Request::Complete(held!(t, Complete { result: result }))).map(drop)
    }

    pub(crate) fn release(&mut self, t: &Token, reason: &str) -> Check {
        self.ask(Request::Release(held!(t, Release { reason: reason.into() }))).map(drop)
    }

    pub(crate) fn ack(&mut self, root: &str, hid: &str) -> Check {
        self.ask(Request::Ack(handoff(root, hid))).map(drop)
    }

    pub(crate) fn last_checkpoint(&mut self, root: &str, hid: &str) -> Check<Option<Value>> {
        Ok(object(ask!(self, LastCheckpoint(handoff(root, hid))).state))
    }

    /// The `status` object (see ADAPTERS.md), as sent.
    pub(crate) fn status(&mut self, root: &str, hid: &str) -> Check<Value> {
        self.ask(Request::Status(handoff(root, hid)))
    }

    pub(crate) fn load_envelope(&mut self, root: &str, hid: &str) -> Check<Value> {
        Ok(Value::Object(ask!(self, LoadEnvelope(handoff(root, hid))).envelope))
    }

    /// `{holder, fence, lease_expires_at}` of the handoff's holder, as sent.
    pub(crate) fn ownership(&mut self, root: &str, hid: &str) -> Check<Option<Value>> {
        let v = self.ask(Request::Ownership(handoff(root, hid)))?;
        Ok(opt(&v["ownership"]))
    }

    /// `{holder, expires_at}` of the store's leader, as sent.
    pub(crate) fn leadership(&mut self, root: &str) -> Check<Option<Value>> {
        let v = self.ask(Request::Leadership(args::Root { root: root.into() }))?;
        Ok(opt(&v["leadership"]))
    }

    pub(crate) fn ensure_leadership(&mut self, root: &str, supervisor: &str) -> Check<bool> {
        Ok(ask!(self, EnsureLeadership(args::Supervise { root: root.into(), supervisor: supervisor.into() })).leader)
    }

    /// The scan's actions as sent (an action may carry more than
    /// `{hid, action}`).
    pub(crate) fn scan(&mut self, root: &str, supervisor: &str) -> Check<crate::check::Values> {
        let v = self.ask(Request::Scan(args::Supervise { root: root.into(), supervisor: supervisor.into() }))?;
        Ok(crate::check::Values(v["actions"].as_array().cloned().unwrap_or_default()))
    }

    pub(crate) fn expire_lease(&mut self, root: &str, hid: &str) -> Check<bool> {
        Ok(ask!(self, ExpireLease(handoff(root, hid))).updated)
    }

    pub(crate) fn expire_leadership(&mut self, root: &str) -> Check<bool> {
        Ok(ask!(self, ExpireLeadership(args::Root { root: root.into() })).updated)
    }

    pub(crate) fn ship_envelope(&mut self, root: &str, hid: &str, log: &str) -> Check {
        let a = args::ShipEnvelope { root: root.into(), hid: hid.into(), log: log.into() };
        self.ask(Request::ShipEnvelope(a)).map(drop)
    }

    pub(crate) fn ship_checkpoint(&mut self, log: &str, seq: i64, state: Value) -> Check {
        self.ask(Request::ShipCheckpoint(args::ShipCheckpoint { log: log.into(), seq, state })).map(drop)
    }

    /// `{handoff_id, checkpoints_ingested, lines_skipped}`, as sent.
    pub(crate) fn ingest(&mut self, root: &str, log: &str) -> Check<Value> {
        self.ask(Request::Ingest(args::Ingest { root: root.into(), log: log.into() }))
    }

    pub(crate) fn suspend(&mut self, root: &str, hid: &str, path: &str) -> Check<i64> {
        let bytes = ask!(self, Suspend(args::Suspend { root: root.into(), hid: hid.into(), path: path.into() })).bytes;
        i64::try_from(bytes).map_err(|_| Fail::Errored(format!("suspend bytes {bytes} is out of range")))
    }

    pub(crate) fn resume(&mut self, root: &str, path: &str) -> Check<String> {
        Ok(ask!(self, Resume(args::Resume { root: root.into(), path: path.into() })).hid)
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
