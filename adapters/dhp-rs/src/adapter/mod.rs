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
pub mod misbehave;

use dhp_core::envelope::{self, now, BuildOptions};
use dhp_core::supervisor::Supervisor;
use dhp_core::transport::log;
use dhp_core::{json, liveness, Config, Error, Lease, Runner};
use misbehave::Misbehave;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

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

pub(crate) fn err(kind: &str, message: impl Into<String>) -> AErr {
    AErr { kind: kind.into(), message: message.into() }
}

pub(crate) fn bad(message: impl Into<String>) -> AErr {
    err("BadRequest", message)
}

pub(crate) type R<T = Value> = Result<T, AErr>;

pub(crate) fn s<'a>(a: &'a Value, key: &str) -> R<&'a str> {
    a.get(key).and_then(Value::as_str).ok_or_else(|| bad(format!("args.{key} must be a string")))
}

pub(crate) fn i(a: &Value, key: &str) -> R<i64> {
    a.get(key).and_then(Value::as_i64).ok_or_else(|| bad(format!("args.{key} must be an integer")))
}

pub(crate) fn f(a: &Value, key: &str) -> R<f64> {
    a.get(key).and_then(Value::as_f64).ok_or_else(|| bad(format!("args.{key} must be a number")))
}

pub(crate) fn v<'a>(a: &'a Value, key: &str) -> R<&'a Value> {
    a.get(key).ok_or_else(|| bad(format!("args.{key} is missing")))
}

/// What the request loop calls: the adapter, or a wrapper of it (the
/// mutants of [`crate::mutants`]).
pub(crate) trait Handler {
    /// Answer one request.
    fn handle(&mut self, op: &str, args: &Value) -> R;
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
    fn handle(&mut self, op: &str, args: &Value) -> R {
        Adapter::handle(self, op, args)
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

    pub(crate) fn handle(&mut self, op: &str, a: &Value) -> R {
        match op {
            "hello" => Ok(json!({
                "implementation": "dhp-rs",
                "version": env!("CARGO_PKG_VERSION"),
                "protocol_version": "1.3",
                "adapter_protocol": 1,
                "features": ["standard-store", "env-config", "stall-detection", "effects", "capabilities", "canonical", "fast-death-detection", "approvals", "postgres-store", "clock-control"],
                "pid": std::process::id(),
            })),
            "shutdown" => Ok(json!({})),
            "open" => self.open(a),
            "build_envelope" => build_envelope(a, self.clock.as_ref().map(|_| self.cfg.clock.now_iso())),
            "dispatch" => self.dispatch(a),
            "claim" => self.claim(a),
            "recover" => self.recover(a),
            "checkpoint" => self.checkpoint(a),
            "heartbeat" => self.heartbeat(a),
            "note_step" => {
                let (r, hid, fence) = self.token(a)?;
                r.note_step(&Lease::presented(&hid, fence)?, i(a, "n")?)?;
                Ok(json!({}))
            }
            "note_spend" => {
                let (r, hid, fence) = self.token(a)?;
                r.note_spend(&Lease::presented(&hid, fence)?, f(a, "usd")?)?;
                Ok(json!({}))
            }
            "complete" => self.complete(a),
            "release" => self.release(a),
            "ack" => self.ack(a),
            "last_checkpoint" => {
                let r = self.runner(s(a, "root")?)?;
                Ok(json!({"state": r.last_checkpoint(&self.id_arg(a, "hid")?)?}))
            }
            "status" => self.status(a),
            "load_envelope" => {
                let r = self.runner(s(a, "root")?)?;
                Ok(json!({"envelope": r.envelope(&self.id_arg(a, "hid")?)?}))
            }
            "ownership" => {
                let r = self.runner(s(a, "root")?)?;
                let o = r.ownership(&self.id_arg(a, "hid")?)?;
                Ok(
                    json!({"ownership": o.map(|o| json!({"holder": o.holder, "fence": o.fence, "lease_expires_at": o.lease_expires_at}))}),
                )
            }
            "leadership" => {
                let r = self.runner(s(a, "root")?)?;
                let l = dhp_testkit::store::leader(&r)?;
                Ok(json!({"leadership": l.map(|l| json!({"holder": l.holder, "expires_at": l.expires_at}))}))
            }
            "ensure_leadership" => {
                let (root, id) = (s(a, "root")?.to_string(), self.id_arg(a, "supervisor")?);
                Ok(json!({"leader": self.supervisor(&root, &id)?.ensure_leadership()?}))
            }
            "scan" => self.scan(a),
            "expire_lease" => {
                let r = self.runner(s(a, "root")?)?;
                Ok(json!({"updated": dhp_testkit::store::expire_lease(&r, &self.id_arg(a, "hid")?)?}))
            }
            "expire_leadership" => {
                let r = self.runner(s(a, "root")?)?;
                Ok(json!({"updated": dhp_testkit::store::expire_leadership(&r)?}))
            }
            "ship_envelope" => {
                let r = self.runner(s(a, "root")?)?;
                let env = r.envelope(&self.id_arg(a, "hid")?)?;
                log::ship_envelope(Path::new(s(a, "log")?), &env, &self.cfg)?;
                Ok(json!({}))
            }
            "ship_checkpoint" => self.ship_checkpoint(a),
            "ingest" => self.ingest(a),
            "suspend" => self.suspend(a),
            "resume" => self.resume(a),
            "record_effect" => self.record_effect(a),
            "effect_done" => {
                let (r, hid, fence) = self.token(a)?;
                let res = r.effect_done(&Lease::presented(&hid, fence)?, s(a, "step_id")?)?;
                Ok(json!({"done": res.is_some(), "result": res}))
            }
            "note_activity" => {
                let (r, hid, fence) = self.token(a)?;
                Ok(json!({"repeat_count": r.note_activity(&Lease::presented(&hid, fence)?, s(a, "digest")?)?}))
            }
            "require_capability" => self.require_capability(a),
            "canonical" => self.canonical(a),
            "handoff_id" => {
                let env = json::parse(s(a, "text")?)?;
                let inputs = env.pointer("/task/inputs").cloned().unwrap_or(Value::Null);
                Ok(json!({"handoff_id": envelope::handoff_id(&env)?, "input_hash": envelope::input_hash(&inputs)?}))
            }
            "liveness_publish" => {
                let w = dhp_core::WorkerId::parse(&self.id_arg(a, "worker")?)?;
                // the backend's own token (PostgreSQL: an advisory lock), else a flock file
                let own = self.runner(s(a, "root")?)?.store().publish_liveness(&w)?;
                let token = match own {
                    Some(t) => t,
                    None => {
                        let root =
                            std::fs::canonicalize(s(a, "root")?).map_err(|e| err("StoreError", e.to_string()))?;
                        Box::new(liveness::publish(&root, &w)?)
                    }
                };
                self.tokens.push(token);
                Ok(json!({}))
            }
            "request_approval" => self.request_approval(a),
            "approvals" => self.approvals(a),
            "decide_approval" => self.decide_approval(a),
            "await_approval" => self.await_approval(a),
            other => Err(err("Unsupported", format!("unknown op {other:?}"))),
        }
    }

    /// Drop this process's handles on the store at `root` (its next use
    /// opens it again).
    pub(crate) fn close(&mut self, root: &str) {
        self.runners.remove(root);
        self.sups.retain(|(r, _), _| r != root);
    }

    fn open(&mut self, a: &Value) -> R {
        let root = s(a, "root")?.to_string();
        self.close(&root);
        self.runner(&root)?;
        let canon = std::fs::canonicalize(&root).unwrap_or_else(|_| PathBuf::from(&root));
        Ok(json!({"store_file": canon.join("dhp.sqlite3").to_string_lossy()}))
    }

    fn dispatch(&mut self, a: &Value) -> R {
        let r = self.runner(s(a, "root")?)?;
        let hid = r.dispatch(v(a, "envelope")?)?;
        Ok(json!({"hid": hid}))
    }

    fn claim(&mut self, a: &Value) -> R {
        let r = self.worker(a)?;
        let hid = self.id_arg(a, "hid")?;
        Ok(json!({"fence": r.claim(&hid)?.fence()}))
    }

    fn recover(&mut self, a: &Value) -> R {
        let r = self.worker(a)?;
        let hid = self.id_arg(a, "hid")?;
        Ok(json!({"fence": r.recover(&hid)?.fence()}))
    }

    fn checkpoint(&mut self, a: &Value) -> R {
        let (r, hid, fence) = self.token(a)?;
        Ok(json!({"seq": r.checkpoint(&Lease::presented(&hid, fence)?, v(a, "state")?)?}))
    }

    fn heartbeat(&mut self, a: &Value) -> R {
        let (r, hid, fence) = self.token(a)?;
        Ok(json!({"expires_in_s": r.heartbeat(&Lease::presented(&hid, fence)?)?}))
    }

    fn complete(&mut self, a: &Value) -> R {
        let (r, hid, fence) = self.token(a)?;
        r.complete(&Lease::presented(&hid, fence)?, v(a, "result")?)?;
        Ok(json!({}))
    }

    fn release(&mut self, a: &Value) -> R {
        let (r, hid, fence) = self.token(a)?;
        r.release(&Lease::presented(&hid, fence)?, s(a, "reason")?)?;
        Ok(json!({}))
    }

    fn ack(&mut self, a: &Value) -> R {
        let r = self.runner(s(a, "root")?)?;
        let hid = self.id_arg(a, "hid")?;
        r.ack(&hid)?;
        Ok(json!({}))
    }

    fn status(&mut self, a: &Value) -> R {
        let r = self.runner(s(a, "root")?)?;
        let hid = self.id_arg(a, "hid")?;
        let env = r.envelope_bare(&hid)?;
        let own = r.ownership(&hid)?;
        let n = r.checkpoints(&hid)?.len();
        let ex = &env["execution"];
        let mut out = json!({
            "handoff_id": hid,
            "status": envelope::status(&env),
            "attempt": ex.get("attempt").cloned().unwrap_or(json!(0)),
            "checkpoints": n,
            "owner": own.as_ref().map(|o| o.holder.clone()),
            "fence": own.as_ref().map(|o| o.fence),
            "steps": ex.get("steps").cloned().unwrap_or(json!(0)),
            "spend_usd": ex.get("spend_usd").cloned().unwrap_or(json::float(0.0)),
            "result": env.pointer("/delivery/result").cloned().unwrap_or(Value::Null),
            "acked": env.pointer("/delivery/outbox/ack").and_then(Value::as_bool).unwrap_or(false),
            "error": ex.get("error").cloned().filter(Value::is_string),
            "orphan_reason": ex.get("orphan_reason").cloned().filter(Value::is_string),
        });
        if let Some(sc) = ex.get("stall_count").filter(|v| v.is_i64()) {
            out["stall_count"] = sc.clone();
        }
        Ok(out)
    }

    fn scan(&mut self, a: &Value) -> R {
        let root = s(a, "root")?.to_string();
        let id = self.id_arg(a, "supervisor")?;
        Ok(json!({"actions": self.supervisor(&root, &id)?.scan()?}))
    }

    fn ship_checkpoint(&mut self, a: &Value) -> R {
        let path = PathBuf::from(s(a, "log")?);
        let seq = i(a, "seq")?;
        log::ship_checkpoint(&path, seq, v(a, "state")?, &self.cfg)?;
        Ok(json!({}))
    }

    fn ingest(&mut self, a: &Value) -> R {
        let r = self.runner(s(a, "root")?)?;
        let path = PathBuf::from(s(a, "log")?);
        let rep = log::ingest(r.store().as_ref(), &path, &self.cfg)?;
        Ok(
            json!({"handoff_id": rep.handoff_id, "checkpoints_ingested": rep.checkpoints_ingested, "lines_skipped": rep.lines_skipped}),
        )
    }

    /// Through `suspend_to`, the path dhp-core recommends and `dhp suspend`
    /// takes (the bundle is in place before the status change commits), so
    /// the conformance suite judges that path and not a wrapper of ours.
    fn suspend(&mut self, a: &Value) -> R {
        let r = self.runner(s(a, "root")?)?;
        let bytes = r.suspend_to(&self.id_arg(a, "hid")?, Path::new(s(a, "path")?))?;
        Ok(json!({"bytes": bytes}))
    }

    fn resume(&mut self, a: &Value) -> R {
        let r = self.runner(s(a, "root")?)?;
        let bundle = std::fs::read(s(a, "path")?).map_err(|e| err("ValidationError", e.to_string()))?;
        Ok(json!({"hid": r.resume(&bundle)?}))
    }

    fn record_effect(&mut self, a: &Value) -> R {
        let (r, hid, fence) = self.token(a)?;
        let step = s(a, "step_id")?;
        let result = v(a, "result")?;
        Ok(json!({"recorded": r.record_effect(&Lease::presented(&hid, fence)?, step, result)?}))
    }

    fn require_capability(&mut self, a: &Value) -> R {
        let (r, hid, fence) = self.token(a)?;
        r.require_capability(&Lease::presented(&hid, fence)?, s(a, "domain")?, s(a, "resource")?)?;
        Ok(json!({}))
    }

    fn canonical(&mut self, a: &Value) -> R {
        let value = json::parse(s(a, "text")?)?;
        let bytes = json::canonical(&value)?;
        let (state_json, state_hash) = if value.is_object() {
            let (t, h) = json::state_text_and_hash(&value)?;
            (Some(t), Some(h))
        } else {
            (None, None)
        };
        Ok(
            json!({"canonical_hex": hex::encode(&bytes), "sha256": json::sha256_hex(&bytes), "state_json": state_json, "state_hash": state_hash}),
        )
    }
}

/// Start `sleep 600` in this process's group and append its pid to `file`.
fn spawn_grandchild(file: &str) -> std::io::Result<()> {
    let child = std::process::Command::new("sleep").arg("600").stdin(std::process::Stdio::null()).spawn()?;
    let mut f = std::fs::OpenOptions::new().create(true).append(true).open(file)?;
    writeln!(f, "{}", child.id())
}

const USAGE: &str = "[--misbehave MODE:OP] [--spawn-grandchild PIDFILE] [--log-requests] [--without-feature NAME]…";

fn usage(program: &str) -> ! {
    eprintln!("usage: {program} {USAGE}");
    std::process::exit(2);
}

/// `--help`: what the adapter is and how it is configured (exit 0).
fn help(program: &str) {
    println!(
        "{program}: dhp-rs's adapter for dhp-conform (dhp-conform/ADAPTERS.md).\n\n\
usage: {program} {USAGE}\n\n\
Reads one JSON request per line on stdin, answers one JSON reply per line on\n\
stdout, logs on stderr, exits at end of input. The store and its settings come\n\
from the environment (DHP_* variables, as for `dhp`).\n\n\
  --misbehave MODE:OP       break the exchange on one operation (crash, hang,\n\
                            garbage, wrong-id, bad-reply): tests of the runner\n\
  --spawn-grandchild FILE   leave a process behind (its pid appended to FILE)\n\
  --log-requests            one stderr line per request\n\
  --without-feature NAME    leave NAME out of hello's features (e.g. clock-control:\n\
                            the runner then waits in real time)"
    );
}

/// Run the adapter over stdin/stdout with command-line `args` (without
/// the program name). Returns the exit status.
pub fn run(args: impl IntoIterator<Item = String>) -> i32 {
    serve("dhp-adapter", args, |cfg| Box::new(Adapter::new(cfg)))
}

/// The request loop, over stdin/stdout, of the handler `make` builds from
/// the configuration in the environment. `program` names the binary in
/// messages; `args` are the options of [`run`].
pub(crate) fn serve(
    program: &str,
    args: impl IntoIterator<Item = String>,
    make: impl FnOnce(Config) -> Box<dyn Handler>,
) -> i32 {
    let mut misbehave: Option<(Misbehave, String)> = None;
    let mut log_requests = false;
    let mut without: Vec<String> = Vec::new();
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--misbehave" => {
                misbehave =
                    Some(misbehave::parse_misbehave(&args.next().unwrap_or_default()).unwrap_or_else(|| usage(program)))
            }
            // a bad adapter for the runner's tests: leaves a process behind
            // (appending its pid to PIDFILE) that only a kill of the whole
            // process group ends
            "--spawn-grandchild" => {
                let file = args.next().unwrap_or_else(|| usage(program));
                if let Err(e) = spawn_grandchild(&file) {
                    eprintln!("{program}: --spawn-grandchild: {e}");
                    return 2;
                }
            }
            // one stderr line per request: what the runner's reports show
            "--log-requests" => log_requests = true,
            // an optional feature left undeclared: the runner's fallback for it
            "--without-feature" => without.push(args.next().unwrap_or_else(|| usage(program))),
            "-h" | "--help" => {
                help(program);
                return 0;
            }
            _ => usage(program),
        }
    }
    let cfg = match Config::from_env() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{program}: {e}");
            return 2;
        }
    };
    let mut ad = make(cfg);
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        if line.trim().is_empty() {
            continue;
        }
        let req: Value = match serde_json::from_str(&line) {
            Ok(v) => v,
            Err(e) => {
                let reply =
                    json!({"id": 0, "ok": false, "error": {"kind": "BadRequest", "message": format!("not JSON: {e}")}});
                let _ = writeln!(out, "{reply}");
                let _ = out.flush();
                continue;
            }
        };
        let id = req.get("id").and_then(Value::as_u64).unwrap_or(0);
        let op = req.get("op").and_then(Value::as_str).unwrap_or("").to_string();
        let args = req.get("args").cloned().unwrap_or(json!({}));
        if let Some((how, target)) = &misbehave {
            if misbehave::targets(target, &op) {
                match how {
                    Misbehave::Crash => std::process::exit(70),
                    Misbehave::Hang => loop {
                        std::thread::sleep(Duration::from_secs(3600));
                    },
                    Misbehave::Garbage => {
                        let _ = writeln!(out, "Traceback (most recent call last): something went wrong {{");
                        let _ = out.flush();
                        continue;
                    }
                    Misbehave::HugeLine => {
                        let piece = vec![b'x'; 1 << 16];
                        let _ = write!(out, "{{\"id\": {id}, \"junk\": \"");
                        for _ in 0..(1 << 14) {
                            if out.write_all(&piece).is_err() {
                                break; // the reader stopped: fine
                            }
                        }
                        let _ = writeln!(out, "\"}}");
                        let _ = out.flush();
                        continue;
                    }
                    Misbehave::HugeStderr => {
                        let piece = vec![b'e'; 1 << 16];
                        let mut err = std::io::stderr().lock();
                        for _ in 0..(1 << 12) {
                            if err.write_all(&piece).is_err() {
                                break;
                            }
                        }
                        let _ = writeln!(err);
                    }
                    Misbehave::WrongId | Misbehave::BadReply => {}
                }
            }
        }
        // "at" is the adapter's input: a start more than an hour away is refused.
        let wait = match req.get("at").and_then(Value::as_f64).map(|at| at - now()) {
            Some(d) if d > 0.0 => dhp_core::config::duration_from_secs("at (seconds from now)", d, 3_600.0).map(Some),
            _ => Ok(None),
        };
        let res = match (wait, clock_offset(&req)) {
            (Ok(wait), Ok(offset)) => {
                if let Some(d) = wait {
                    std::thread::sleep(d);
                }
                ad.clock_offset(offset);
                let res = ad.handle(&op, &args);
                ad.clock_idle();
                res
            }
            (Err(e), _) => Err(err(e.kind(), e.to_string())),
            (_, Err(e)) => Err(e),
        };
        if log_requests {
            match &res {
                Ok(_) => eprintln!("{program}: {op}: ok"),
                Err(e) => eprintln!("{program}: {op}: {} ({})", e.kind, e.message),
            }
        }
        let mut reply = match res {
            Ok(mut result) => {
                if op == "hello" {
                    if let Some(f) = result.get_mut("features").and_then(Value::as_array_mut) {
                        f.retain(|x| !without.iter().any(|w| x.as_str() == Some(w.as_str())));
                    }
                }
                json!({"id": id, "ok": true, "result": result})
            }
            Err(e) => json!({"id": id, "ok": false, "error": {"kind": e.kind, "message": e.message}}),
        };
        match &misbehave {
            Some((Misbehave::WrongId, t)) if misbehave::targets(t, &op) => reply["id"] = json!(id + 1000),
            Some((Misbehave::BadReply, t)) if misbehave::targets(t, &op) => {
                reply = json!({"id": id, "ok": true, "result": {"unexpected": "shape"}})
            }
            _ => {}
        }
        if writeln!(out, "{reply}").and_then(|_| out.flush()).is_err() {
            break;
        }
        if op == "shutdown" {
            break;
        }
    }
    ad.finish();
    0
}

/// The request's `clock_offset_s` (seconds the runner moved the clock
/// on; ADAPTERS.md §2): absent, or a finite number from 0 to 10 years.
fn clock_offset(req: &Value) -> R<Option<f64>> {
    const MAX: f64 = 10.0 * 365.0 * 86_400.0;
    match req.get("clock_offset_s") {
        None => Ok(None),
        Some(v) => match v.as_f64() {
            Some(o) if (0.0..=MAX).contains(&o) => Ok(Some(o)),
            _ => Err(bad(format!("clock_offset_s must be a number of seconds from 0 to {MAX}, not {v}"))),
        },
    }
}

/// `build_envelope`; `created_at` fixes the envelope's creation time (the
/// mutants' way in: the adapter protocol does not pass one).
pub(crate) fn build_envelope(a: &Value, created_at: Option<String>) -> R {
    let opts = BuildOptions {
        budget: a.get("budget").cloned(),
        capabilities: a.get("capabilities").cloned(),
        max_stall_retries: a.get("max_stall_retries").and_then(Value::as_i64),
        idempotency_key: a.get("idempotency_key").and_then(Value::as_str).map(String::from),
        created_by: a.get("created_by").and_then(Value::as_str).map(String::from),
        created_at,
        ..Default::default()
    };
    let env = envelope::build(s(a, "kind")?, v(a, "inputs")?.clone(), v(a, "output_schema")?.clone(), opts)?;
    Ok(json!({"envelope": env}))
}
