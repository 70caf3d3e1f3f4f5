//! The operations: one table, from which [`Op`], [`Request`] and
//! [`Response`] are made, so an op cannot have a request without a result.

use crate::{args, results, ProtoError};
use serde_json::Value;

macro_rules! protocol {
    ($($name:literal => $v:ident($args:ty) -> $res:ty;)*) => {
        /// An operation of the adapter protocol.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Op {
            $(#[doc = concat!("`", $name, "`")] $v,)*
        }

        impl Op {
            /// Every op, in the order ADAPTERS.md and the schemas list them.
            pub const ALL: &'static [Op] = &[$(Op::$v,)*];

            /// Its name on the wire.
            pub fn as_str(self) -> &'static str {
                match self { $(Op::$v => $name,)* }
            }

            /// The op named `name` on the wire.
            pub fn from_name(name: &str) -> Option<Op> {
                match name { $($name => Some(Op::$v),)* _ => None }
            }
        }

        /// A request: the op and its arguments (`{"op": …, "args": …}` on
        /// the wire).
        #[derive(Debug, Clone, PartialEq)]
        pub enum Request {
            $(#[doc = concat!("`", $name, "`")] $v($args),)*
        }

        impl Request {
            /// The op asked.
            pub fn op(&self) -> Op {
                match self { $(Request::$v(_) => Op::$v,)* }
            }

            /// The request of `op` with `args` as sent.
            pub fn from_args(op: Op, args: Value) -> Result<Request, ProtoError> {
                let bad = |e: serde_json::Error| ProtoError::BadArgs { op: op.as_str(), detail: e.to_string() };
                Ok(match op { $(Op::$v => Request::$v(serde_json::from_value(args).map_err(bad)?),)* })
            }

            /// Its `args` as sent.
            pub fn args(&self) -> Value {
                let v = match self { $(Request::$v(a) => serde_json::to_value(a),)* };
                // plain structs of strings, numbers and JSON values: they serialise
                v.unwrap_or_else(|e| unreachable!("args serialise: {e}"))
            }
        }

        /// An ok result, read knowing the op it answers.
        #[derive(Debug, Clone, PartialEq)]
        pub enum Response {
            $(#[doc = concat!("`", $name, "`")] $v($res),)*
        }

        impl Response {
            /// The op answered.
            pub fn op(&self) -> Op {
                match self { $(Response::$v(_) => Op::$v,)* }
            }

            /// Read `result` as the answer to `op`.
            pub fn from_result(op: Op, result: Value) -> Result<Response, ProtoError> {
                let bad = |e: serde_json::Error| ProtoError::BadResult { op: op.as_str(), detail: e.to_string() };
                Ok(match op { $(Op::$v => Response::$v(serde_json::from_value(result).map_err(bad)?),)* })
            }

            /// The result as sent.
            pub fn result(&self) -> Value {
                let v = match self { $(Response::$v(r) => serde_json::to_value(r),)* };
                v.unwrap_or_else(|e| unreachable!("results serialise: {e}"))
            }
        }
    };
}

protocol! {
    "hello" => Hello(args::Hello) -> results::Hello;
    "shutdown" => Shutdown(args::Nothing) -> results::Done;
    "open" => Open(args::Root) -> results::Open;
    "build_envelope" => BuildEnvelope(args::BuildEnvelope) -> results::Envelope;
    "dispatch" => Dispatch(args::Dispatch) -> results::Hid;
    "claim" => Claim(args::Take) -> results::Fence;
    "recover" => Recover(args::Take) -> results::Fence;
    "checkpoint" => Checkpoint(args::Checkpoint) -> results::Seq;
    "heartbeat" => Heartbeat(args::Token) -> results::Heartbeat;
    "note_step" => NoteStep(args::NoteStep) -> results::Done;
    "note_spend" => NoteSpend(args::NoteSpend) -> results::Done;
    "complete" => Complete(args::Complete) -> results::Done;
    "release" => Release(args::Release) -> results::Done;
    "ack" => Ack(args::Handoff) -> results::Done;
    "last_checkpoint" => LastCheckpoint(args::Handoff) -> results::LastCheckpoint;
    "status" => Status(args::Handoff) -> results::Status;
    "load_envelope" => LoadEnvelope(args::Handoff) -> results::Envelope;
    "ownership" => Ownership(args::Handoff) -> results::Ownership;
    "leadership" => Leadership(args::Root) -> results::Leadership;
    "ensure_leadership" => EnsureLeadership(args::Supervise) -> results::Leader;
    "scan" => Scan(args::Supervise) -> results::Scan;
    "expire_lease" => ExpireLease(args::Handoff) -> results::Updated;
    "expire_leadership" => ExpireLeadership(args::Root) -> results::Updated;
    "ship_envelope" => ShipEnvelope(args::ShipEnvelope) -> results::Done;
    "ship_checkpoint" => ShipCheckpoint(args::ShipCheckpoint) -> results::Done;
    "ingest" => Ingest(args::Ingest) -> results::Ingest;
    "suspend" => Suspend(args::Suspend) -> results::Suspend;
    "resume" => Resume(args::Resume) -> results::Hid;
    "record_effect" => RecordEffect(args::RecordEffect) -> results::Recorded;
    "effect_done" => EffectDone(args::EffectDone) -> results::EffectDone;
    "note_activity" => NoteActivity(args::NoteActivity) -> results::NoteActivity;
    "require_capability" => RequireCapability(args::RequireCapability) -> results::Done;
    "canonical" => Canonical(args::Text) -> results::Canonical;
    "handoff_id" => HandoffId(args::Text) -> results::HandoffId;
    "liveness_publish" => LivenessPublish(args::Liveness) -> results::Done;
    "request_approval" => RequestApproval(args::RequestApproval) -> results::Done;
    "approvals" => Approvals(args::Handoff) -> results::Approvals;
    "decide_approval" => DecideApproval(args::DecideApproval) -> results::Decided;
    "await_approval" => AwaitApproval(args::AwaitApproval) -> results::Done;
}

impl std::fmt::Display for Op {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
