//! The dhp-conform adapter for dhp-core (ADAPTERS.md): the `dhp-adapter`
//! binary, what `dhp-conform --impl ours` runs.
//!
//! Reads one JSON request per line on stdin, answers one JSON reply per
//! line on stdout, logs on stderr, exits at EOF. `--misbehave MODE:OP`
//! breaks the exchange on one operation (crash, hang, garbage, wrong-id,
//! bad-reply), to test the runner. This is only the real adapter: the
//! mutants that prove the assertions can fail wrap it from
//! [`crate::mutants`] (the `dhp-mutant-adapter` binary).

mod approvals;
pub(crate) use approvals::POLL;
mod clock;
mod dispatch;
pub(crate) use dispatch::build_envelope;
pub mod misbehave;
mod serve;
pub use serve::run;
pub(crate) use serve::serve;

use dhp_adapter_proto::{Op, ProtoError, Request};
use dhp_core::supervisor::Supervisor;
use dhp_core::{Config, Error, Runner};
use serde_json::Value;
use std::collections::HashMap;

/// An error reply.
#[derive(Debug)]
pub(crate) struct AErr {
    pub(crate) kind: String,
    pub(crate) message: String,
}

impl From<Error> for AErr {
    fn from(e: Error) -> Self {
        AErr { kind: e.kind().to_string(), message: e.to_string() }
    }
}

impl From<ProtoError> for AErr {
    fn from(e: ProtoError) -> Self {
        match e {
            ProtoError::UnknownOp(_) => err("Unsupported", e.to_string()),
            _ => bad(e.to_string()),
        }
    }
}

pub(crate) fn err(kind: &str, message: impl Into<String>) -> AErr {
    AErr { kind: kind.into(), message: message.into() }
}

pub(crate) fn bad(message: impl Into<String>) -> AErr {
    err("BadRequest", message)
}

pub(crate) type R<T = Value> = Result<T, AErr>;

// The mutants' readers of args they forge or rewrite as JSON (the real
// adapter reads the typed request).

/// `args.key` as a string.
pub(crate) fn s<'a>(a: &'a Value, key: &str) -> R<&'a str> {
    a.get(key).and_then(Value::as_str).ok_or_else(|| bad(format!("args.{key} must be a string")))
}

/// `args.key` as an integer.
pub(crate) fn i(a: &Value, key: &str) -> R<i64> {
    a.get(key).and_then(Value::as_i64).ok_or_else(|| bad(format!("args.{key} must be an integer")))
}

/// `args.key` as a number.
pub(crate) fn f(a: &Value, key: &str) -> R<f64> {
    a.get(key).and_then(Value::as_f64).ok_or_else(|| bad(format!("args.{key} must be a number")))
}

/// `args.key`, any JSON.
pub(crate) fn v<'a>(a: &'a Value, key: &str) -> R<&'a Value> {
    a.get(key).ok_or_else(|| bad(format!("args.{key} is missing")))
}

/// What the request loop calls: the adapter, or a wrapper of it (the
/// mutants of [`crate::mutants`]).
pub(crate) trait Handler {
    /// Answer one request.
    fn handle(&mut self, req: Request) -> R;
    /// Called once at EOF or `shutdown`, after the last answer.
    fn finish(&mut self) {}
    /// A request arrives with the runner's `clock_offset_s` (`None`: the
    /// member is absent, which means 0): the protocol clock while it is
    /// answered (feature `clock-control`).
    fn clock_offset(&mut self, offset: Option<f64>);
    /// The request was answered.
    fn clock_idle(&mut self);
}

/// The adapter: one `Runner` per root, one `Supervisor` per (root, id).
pub(crate) struct Adapter {
    pub(crate) cfg: Config,
    runners: HashMap<String, Runner>,
    sups: HashMap<(String, String), Supervisor>,
    tokens: Vec<dhp_core::store::LivenessToken>,
    /// The offset clock, once the runner moved time (until then the
    /// store's clock, `Clock::Store`, as `dhp` runs).
    clock: Option<clock::OffsetClock>,
}

impl Handler for Adapter {
    fn handle(&mut self, req: Request) -> R {
        Adapter::handle(self, req)
    }

    fn clock_offset(&mut self, offset: Option<f64>) {
        Adapter::clock_offset(self, offset)
    }

    fn clock_idle(&mut self) {
        if let Some(c) = &self.clock {
            c.idle();
        }
    }
}

impl Adapter {
    pub(crate) fn new(cfg: Config) -> Self {
        Adapter { cfg, runners: HashMap::new(), sups: HashMap::new(), tokens: Vec::new(), clock: None }
    }

    /// The protocol clock for the next request: real time plus `offset`
    /// seconds. The first offset other than 0 switches this process from
    /// the store's clock to dhp-core's manual clock, kept at real time
    /// plus the offset ([`clock::OffsetClock`]); its handles are reopened
    /// with that configuration. Without an offset (or 0) a process that
    /// never switched keeps the store's clock.
    pub(crate) fn clock_offset(&mut self, offset: Option<f64>) {
        let offset = offset.unwrap_or(0.0);
        if self.clock.is_none() && offset != 0.0 {
            let (clock, ctl) = clock::OffsetClock::start();
            self.cfg.clock = clock;
            self.runners.clear();
            self.sups.clear();
            self.clock = Some(ctl);
        }
        if let Some(c) = &self.clock {
            c.begin(offset);
        }
    }

    pub(crate) fn runner(&mut self, root: &str) -> R<Runner> {
        if let Some(r) = self.runners.get(root) {
            return Ok(r.clone());
        }
        let r = Runner::open(root, "dhp-adapter", self.cfg.clone())?;
        self.runners.insert(root.to_string(), r.clone());
        Ok(r)
    }

    fn id_arg(&self, a: &Value, key: &str) -> R<String> {
        Ok(s(a, key)?.to_string())
    }

    pub(crate) fn worker(&mut self, a: &Value) -> R<Runner> {
        let root = s(a, "root")?.to_string();
        let w = self.id_arg(a, "worker")?;
        Ok(self.runner(&root)?.with_id(&w)?)
    }

    /// The runner, hid and fence a worker presents.
    pub(crate) fn token(&mut self, a: &Value) -> R<(Runner, String, i64)> {
        let r = self.worker(a)?;
        let hid = self.id_arg(a, "hid")?;
        let fence = i(a, "fence")?;
        Ok((r, hid, fence))
    }

    pub(crate) fn supervisor(&mut self, root: &str, id: &str) -> R<&Supervisor> {
        let key = (root.to_string(), id.to_string());
        if !self.sups.contains_key(&key) {
            let sup = Supervisor::open(root, id, self.cfg.clone())?;
            self.sups.insert(key.clone(), sup);
        }
        Ok(&self.sups[&key])
    }

    /// Answer `op` with `args` as a mutant rewrote them: read as the op's
    /// typed request first, as a request line is.
    pub(crate) fn handle_args(&mut self, op: Op, args: &Value) -> R {
        self.handle(Request::from_args(op, args.clone())?)
    }

    /// Drop this process's handles on the store at `root` (its next use
    /// opens it again).
    pub(crate) fn close(&mut self, root: &str) {
        self.runners.remove(root);
        self.sups.retain(|(r, _), _| r != root);
    }
}
