//! The dhp-conform adapter for dhp-core (ADAPTERS.md): the `dhp-adapter`
//! binary, also reachable as `dhp-conform __adapter` (what `--impl ours`
//! runs, so `cargo run -p dhp-conform` needs no other binary).
//!
//! Reads one JSON request per line on stdin, answers one JSON reply per
//! line on stdout, logs on stderr, exits at EOF. `--mutant NAME` removes
//! one guarantee (see [`mutants`], `--list-mutants`); `--misbehave
//! MODE:OP` breaks the exchange on one operation (crash, hang, garbage,
//! wrong-id, bad-reply) — both exist to test the runner.

mod approvals;
pub mod mutants;

use dhp_core::envelope::{self, check_hid, now, utcnow_iso, BuildOptions, ORPHANED_HOLDER};
use dhp_core::store::{with_tx, Mode, Ownership};
use dhp_core::supervisor::{OrphanReason, Supervisor};
use dhp_core::transport::log;
use dhp_core::{json, liveness, Config, Error, Lease, Runner};
use mutants::{Misbehave, Mutant};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// An error reply.
#[derive(Debug)]
struct AErr {
    kind: String,
    message: String,
}

impl From<Error> for AErr {
    fn from(e: Error) -> Self {
        AErr { kind: e.kind().to_string(), message: e.to_string() }
    }
}

fn err(kind: &str, message: impl Into<String>) -> AErr {
    AErr { kind: kind.into(), message: message.into() }
}

fn bad(message: impl Into<String>) -> AErr {
    err("BadRequest", message)
}

type R<T = Value> = Result<T, AErr>;

fn s<'a>(a: &'a Value, key: &str) -> R<&'a str> {
    a.get(key).and_then(Value::as_str).ok_or_else(|| bad(format!("args.{key} must be a string")))
}

fn i(a: &Value, key: &str) -> R<i64> {
    a.get(key).and_then(Value::as_i64).ok_or_else(|| bad(format!("args.{key} must be an integer")))
}

fn f(a: &Value, key: &str) -> R<f64> {
    a.get(key).and_then(Value::as_f64).ok_or_else(|| bad(format!("args.{key} must be a number")))
}

fn v<'a>(a: &'a Value, key: &str) -> R<&'a Value> {
    a.get(key).ok_or_else(|| bad(format!("args.{key} is missing")))
}

/// The stored form of an envelope (checkpoints emptied), as Python writes it.
fn stored_text(env: &Value) -> R<String> {
    let mut env = env.clone();
    if let Some(ex) = env.get_mut("execution").and_then(Value::as_object_mut) {
        ex.insert("checkpoints".into(), json!([]));
    }
    Ok(json::dumps(&env)?)
}

/// Recompute an envelope's input_hash and handoff_id (what a mutant does
/// instead of verifying them).
fn reidentify(env: &mut Value) -> R<()> {
    let inputs = env.pointer("/task/inputs").cloned().unwrap_or(Value::Null);
    env["task"]["input_hash"] = json!(envelope::input_hash(&inputs)?);
    env["handoff_id"] = json!(envelope::handoff_id(env)?);
    Ok(())
}

struct Pending {
    root: String,
    worker: String,
    hid: String,
    fence: i64,
    state: Value,
}

struct Adapter {
    cfg: Config,
    mutant: Option<Mutant>,
    runners: HashMap<String, Runner>,
    sups: HashMap<(String, String), Supervisor>,
    tokens: Vec<dhp_core::store::LivenessToken>,
    pending: Vec<Pending>,
}

impl Adapter {
    fn is(&self, m: Mutant) -> bool {
        self.mutant == Some(m)
    }

    fn runner(&mut self, root: &str) -> R<Runner> {
        if let Some(r) = self.runners.get(root) {
            return Ok(r.clone());
        }
        let r = Runner::open(root, "dhp-adapter", self.cfg.clone())?;
        self.runners.insert(root.to_string(), r.clone());
        Ok(r)
    }

    fn id_arg(&self, a: &Value, key: &str) -> R<String> {
        let raw = s(a, key)?;
        if !self.is(Mutant::LenientIds) {
            return Ok(raw.to_string());
        }
        if key == "hid" {
            let h: String = raw.trim().to_lowercase().chars().filter(char::is_ascii_hexdigit).take(64).collect();
            return Ok(h);
        }
        let w: String = raw
            .chars()
            .take(128)
            .map(|c| if c.is_ascii_alphanumeric() || "_.-".contains(c) { c } else { '_' })
            .collect();
        Ok(if w.is_empty() { "anon".into() } else { w })
    }

    fn worker(&mut self, a: &Value) -> R<Runner> {
        let root = s(a, "root")?.to_string();
        let w = self.id_arg(a, "worker")?;
        Ok(self.runner(&root)?.with_id(&w)?)
    }

    /// The runner, hid and fence a worker presents.
    fn token(&mut self, a: &Value) -> R<(Runner, String, i64)> {
        let r = self.worker(a)?;
        let hid = self.id_arg(a, "hid")?;
        let fence = i(a, "fence")?;
        if self.is(Mutant::NoFenceCheck) {
            if let Some(o) = r.ownership(&hid)? {
                return Ok((r.with_id(&o.holder)?, hid, o.fence));
            }
        }
        Ok((r, hid, fence))
    }

    fn supervisor(&mut self, root: &str, id: &str) -> R<&Supervisor> {
        let key = (root.to_string(), id.to_string());
        if !self.sups.contains_key(&key) {
            let sup = Supervisor::open(root, id, self.cfg.clone())?;
            self.sups.insert(key.clone(), sup);
        }
        Ok(&self.sups[&key])
    }

    /// Write buffered checkpoints (volatile-checkpoints mutant); a write
    /// that fails now is logged and lost, like a failed write-behind.
    fn flush(&mut self) {
        for p in std::mem::take(&mut self.pending) {
            let res = self
                .runner(&p.root)
                .and_then(|r| Ok(r.with_id(&p.worker)?.checkpoint(&Lease::presented(&p.hid, p.fence)?, &p.state)?));
            if let Err(e) = res {
                eprintln!("dhp-adapter: buffered checkpoint of {} lost: {}: {}", p.hid, e.kind, e.message);
            }
        }
    }

    fn handle(&mut self, op: &str, a: &Value) -> R {
        if op != "checkpoint" {
            self.flush();
        }
        match op {
            "hello" => Ok(json!({
                "implementation": match self.mutant {
                    None => "dhp-rs".to_string(),
                    Some(m) => format!("dhp-rs (mutant {})", mutants::name(m)),
                },
                "version": env!("CARGO_PKG_VERSION"),
                "protocol_version": "1.3",
                "adapter_protocol": 1,
                "features": ["standard-store", "env-config", "stall-detection", "effects", "capabilities", "canonical", "fast-death-detection", "approvals", "postgres-store"],
                "pid": std::process::id(),
            })),
            "shutdown" => Ok(json!({})),
            "open" => self.open(a),
            "build_envelope" => self.build(a),
            "dispatch" => self.dispatch(a),
            "claim" => self.claim(a),
            "recover" => self.recover(a),
            "checkpoint" => self.checkpoint(a),
            "heartbeat" => self.heartbeat(a),
            "note_step" | "note_spend" => {
                let (r, hid, fence) = self.token(a)?;
                if op == "note_step" && self.is(Mutant::NegativeStepsIgnored) && i(a, "n")? < 0 {
                    return Ok(json!({}));
                }
                let usd =
                    if op == "note_spend" && self.is(Mutant::LenientArguments) { f(a, "usd")?.max(0.0) } else { 0.0 };
                let res = match op {
                    "note_step" => r.note_step(&Lease::presented(&hid, fence)?, i(a, "n")?),
                    _ if self.is(Mutant::LenientArguments) => r.note_spend(&Lease::presented(&hid, fence)?, usd),
                    _ => r.note_spend(&Lease::presented(&hid, fence)?, f(a, "usd")?),
                };
                match res {
                    Err(Error::BudgetExceeded { .. }) if self.is(Mutant::NoBudgetCheck) => Ok(json!({})),
                    Err(e @ Error::BudgetExceeded { .. })
                        if self.is(Mutant::WallclockUnchecked) && e.to_string().contains("wallclock") =>
                    {
                        Ok(json!({}))
                    }
                    other => other.map(|_| json!({})).map_err(AErr::from),
                }
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
                let l = dhp_core::testing::leader(&r)?;
                Ok(json!({"leadership": l.map(|l| json!({"holder": l.holder, "expires_at": l.expires_at}))}))
            }
            "ensure_leadership" => {
                let (root, id) = (s(a, "root")?.to_string(), self.id_arg(a, "supervisor")?);
                self.two_leaders_prelude(&root, &id)?;
                Ok(json!({"leader": self.supervisor(&root, &id)?.ensure_leadership()?}))
            }
            "scan" => self.scan(a),
            "expire_lease" => {
                let r = self.runner(s(a, "root")?)?;
                Ok(json!({"updated": dhp_core::testing::expire_lease(&r, &self.id_arg(a, "hid")?)?}))
            }
            "expire_leadership" => {
                let r = self.runner(s(a, "root")?)?;
                Ok(json!({"updated": dhp_core::testing::expire_leadership(&r)?}))
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
                if !self.is(Mutant::NoLiveness) {
                    let w = self.id_arg(a, "worker")?;
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
                }
                Ok(json!({}))
            }
            "request_approval" => self.request_approval(a),
            "approvals" => self.approvals(a),
            "decide_approval" => self.decide_approval(a),
            "await_approval" => self.await_approval(a),
            other => Err(err("Unsupported", format!("unknown op {other:?}"))),
        }
    }

    fn open(&mut self, a: &Value) -> R {
        let root = s(a, "root")?.to_string();
        self.runners.remove(&root);
        self.sups.retain(|(r, _), _| r != &root);
        let db = Path::new(&root).join("dhp.sqlite3");
        if self.is(Mutant::IgnoreSchemaVersion) && db.exists() {
            let c = rusqlite::Connection::open(&db).map_err(|e| err("StoreError", e.to_string()))?;
            c.execute("DELETE FROM schema_version WHERE version > 3", [])
                .map_err(|e| err("StoreError", e.to_string()))?;
        }
        self.runner(&root)?;
        let canon = std::fs::canonicalize(&root).unwrap_or_else(|_| PathBuf::from(&root));
        Ok(json!({"store_file": canon.join("dhp.sqlite3").to_string_lossy()}))
    }

    fn build(&mut self, a: &Value) -> R {
        let opts = BuildOptions {
            budget: a.get("budget").cloned(),
            capabilities: a.get("capabilities").cloned(),
            max_stall_retries: a.get("max_stall_retries").and_then(Value::as_i64),
            idempotency_key: a.get("idempotency_key").and_then(Value::as_str).map(String::from),
            created_by: a.get("created_by").and_then(Value::as_str).map(String::from),
            ..Default::default()
        };
        let env = envelope::build(s(a, "kind")?, v(a, "inputs")?.clone(), v(a, "output_schema")?.clone(), opts)?;
        Ok(json!({"envelope": env}))
    }

    fn dispatch(&mut self, a: &Value) -> R {
        let r = self.runner(s(a, "root")?)?;
        let env = v(a, "envelope")?.clone();
        let skip = match self.mutant {
            Some(Mutant::NoIdCheck) => Some(envelope::verify_inputs(&env)),
            Some(Mutant::NoInputHashCheck) => Some(envelope::verify_id(&env)),
            _ => None,
        };
        let hid = match skip {
            None => r.dispatch(&env)?,
            Some(false) => return Err(err("TamperError", "envelope does not verify")),
            Some(true) => {
                let hid = check_hid(env["handoff_id"].as_str().unwrap_or_default())?.to_string();
                let text = stored_text(&env)?;
                if text.len() > self.cfg.max_envelope_bytes {
                    return Err(err("OversizePayload", "envelope exceeds max_envelope_bytes"));
                }
                with_tx(r.store().as_ref(), Mode::Write, |tx| tx.insert_envelope(&hid, &text, now()))?;
                hid
            }
        };
        Ok(json!({"hid": hid}))
    }

    /// Take ownership with a plain read-then-write (non-atomic mutants).
    fn overwrite_owner(&mut self, r: &Runner, hid: &str, fence: i64, recovering: bool) -> R<()> {
        std::thread::sleep(Duration::from_millis(100));
        let cfg = self.cfg.clone();
        with_tx(r.store().as_ref(), Mode::Write, |tx| {
            let t = now();
            let own = Ownership {
                hid: hid.to_string(),
                holder: r.id().to_string(),
                fence,
                lease_expires_at: t + cfg.lease_ttl_s(),
                heartbeat_interval_s: cfg.lease_interval_s,
                max_missed: cfg.lease_max_missed,
            };
            tx.delete_ownership(hid)?;
            tx.insert_ownership(&own, t)?;
            let mut env = tx.envelope(hid)?.ok_or_else(|| Error::UnknownHandoff { hid: hid.to_string() })?;
            let ex = &mut env["execution"];
            ex["status"] = json!("running");
            ex["runner_id"] = json!(r.id());
            ex["claimed_at"] = json::float(t);
            ex["fence"] = json!(fence);
            if recovering {
                ex["attempt"] = json!(ex["attempt"].as_i64().unwrap_or(0) + 1);
            }
            let text = json::dumps(&env)?;
            tx.update_envelope(hid, &text, t)?;
            Ok(())
        })?;
        Ok(())
    }

    fn claim(&mut self, a: &Value) -> R {
        let r = self.worker(a)?;
        let hid = self.id_arg(a, "hid")?;
        if self.is(Mutant::NonAtomicClaim) {
            let st = envelope::status(&r.envelope_bare(&hid)?).to_string();
            if st != "pending" {
                return Err(err("StateError", format!("claim rejected: status is {st}")));
            }
            self.overwrite_owner(&r, &hid, 0, false)?;
            return Ok(json!({"fence": 0}));
        }
        Ok(json!({"fence": r.claim(&hid)?.fence()}))
    }

    fn recover(&mut self, a: &Value) -> R {
        let r = self.worker(a)?;
        let hid = self.id_arg(a, "hid")?;
        if self.is(Mutant::NonAtomicRecover) {
            let st = envelope::status(&r.envelope_bare(&hid)?).to_string();
            if matches!(st.as_str(), "completed" | "failed" | "pending") {
                return Err(err("StateError", format!("recover rejected: status is {st}")));
            }
            let own = r.ownership(&hid)?.filter(|o| o.holder == ORPHANED_HOLDER);
            let Some(own) = own else { return Err(err("OwnershipLost", "not orphaned")) };
            self.overwrite_owner(&r, &hid, own.fence + 1, true)?;
            return Ok(json!({"fence": own.fence + 1}));
        }
        if self.is(Mutant::RecoverPending) && envelope::status(&r.envelope_bare(&hid)?) == "pending" {
            self.overwrite_owner(&r, &hid, 1, true)?;
            return Ok(json!({"fence": 1}));
        }
        Ok(json!({"fence": r.recover(&hid)?.fence()}))
    }

    /// Renew an expired lease of the presented token (ignore-lease-expiry).
    fn renew(&self, r: &Runner, hid: &str) -> R<()> {
        let ttl = self.cfg.lease_ttl_s();
        with_tx(r.store().as_ref(), Mode::Write, |tx| {
            if let Some(mut o) = tx.ownership(hid)? {
                o.lease_expires_at = now() + ttl;
                tx.update_ownership(&o, now())?;
            }
            Ok(())
        })?;
        Ok(())
    }

    fn checkpoint(&mut self, a: &Value) -> R {
        let (r, hid, fence) = self.token(a)?;
        let mut state = v(a, "state")?.clone();
        if self.is(Mutant::LenientArguments) && !state.is_object() {
            state = json!({"value": state});
        }
        if self.is(Mutant::VolatileCheckpoints) {
            // Validated now (state, token, lease), written at the next request.
            dhp_core::runner::checked_state(&state, &self.cfg)?;
            r.effect_done(&Lease::presented(&hid, fence)?, "volatile-checkpoints probe")?; // the owner check, no writes
            let stored = r.last_checkpoint_row(&hid)?.map(|c| c.seq + 1).unwrap_or(0);
            let buffered = self.pending.iter().filter(|p| p.hid == hid).count() as i64;
            self.pending.push(Pending { root: s(a, "root")?.into(), worker: r.id().into(), hid, fence, state });
            return Ok(json!({"seq": stored + buffered}));
        }
        match r.checkpoint(&Lease::presented(&hid, fence)?, &state) {
            Err(Error::LeaseLost { .. }) if self.is(Mutant::IgnoreLeaseExpiry) => {
                self.renew(&r, &hid)?;
                Ok(json!({"seq": r.checkpoint(&Lease::presented(&hid, fence)?, &state)?}))
            }
            other => Ok(json!({"seq": other?})),
        }
    }

    fn heartbeat(&mut self, a: &Value) -> R {
        let (r, hid, fence) = self.token(a)?;
        if self.is(Mutant::HeartbeatNoop) {
            return match r.ownership(&hid)? {
                Some(o) if o.holder == r.id() && o.fence == fence && o.lease_expires_at < now() => {
                    Err(err("LeaseLost", "lease expired"))
                }
                Some(o) if o.holder == r.id() && o.fence == fence => {
                    Ok(json!({"expires_in_s": o.lease_expires_at - now()}))
                }
                _ => Err(err("FencingError", "stale token")),
            };
        }
        match r.heartbeat(&Lease::presented(&hid, fence)?) {
            Err(Error::LeaseLost { .. }) if self.is(Mutant::IgnoreLeaseExpiry) => {
                self.renew(&r, &hid)?;
                Ok(json!({"expires_in_s": r.heartbeat(&Lease::presented(&hid, fence)?)?}))
            }
            other => Ok(json!({"expires_in_s": other?})),
        }
    }

    fn complete(&mut self, a: &Value) -> R {
        let (r, hid, fence) = self.token(a)?;
        let result = v(a, "result")?.clone();
        if self.is(Mutant::CompleteNotIdempotent) && envelope::status(&r.envelope_bare(&hid)?) == "completed" {
            return Err(err("StateError", "already completed"));
        }
        if self.is(Mutant::NoSchemaValidation) {
            with_tx(r.store().as_ref(), Mode::Write, |tx| {
                if let Some(mut env) = tx.envelope(&hid)? {
                    env["contract"]["output_schema"] = json!({});
                    let text = json::dumps(&env)?;
                    tx.update_envelope(&hid, &text, now())?;
                }
                Ok(())
            })?;
        }
        match r.complete(&Lease::presented(&hid, fence)?, &result) {
            Err(Error::LeaseLost { .. }) if self.is(Mutant::IgnoreLeaseExpiry) => {
                self.renew(&r, &hid)?;
                r.complete(&Lease::presented(&hid, fence)?, &result)?;
            }
            other => other?,
        }
        Ok(json!({}))
    }

    fn release(&mut self, a: &Value) -> R {
        let (r, hid, fence) = self.token(a)?;
        let before = r.ownership(&hid)?;
        r.release(&Lease::presented(&hid, fence)?, s(a, "reason")?)?;
        if let (true, Some(o)) = (self.is(Mutant::ReleaseKeepsLease), before) {
            with_tx(r.store().as_ref(), Mode::Write, |tx| tx.insert_ownership(&o, now()))?;
        }
        Ok(json!({}))
    }

    fn ack(&mut self, a: &Value) -> R {
        let r = self.runner(s(a, "root")?)?;
        let hid = self.id_arg(a, "hid")?;
        if self.is(Mutant::AckBeforeComplete) {
            with_tx(r.store().as_ref(), Mode::Write, |tx| {
                let mut env = tx.envelope(&hid)?.ok_or_else(|| Error::UnknownHandoff { hid: hid.clone() })?;
                env["delivery"]["outbox"]["ack"] = json!(true);
                let text = json::dumps(&env)?;
                tx.update_envelope(&hid, &text, now())
            })?;
        } else {
            r.ack(&hid)?;
        }
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
            "fence": if self.is(Mutant::StatusFenceFromEnvelope) { ex.get("fence").cloned().unwrap_or(Value::Null) } else { json!(own.as_ref().map(|o| o.fence)) },
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

    fn two_leaders_prelude(&mut self, root: &str, id: &str) -> R<()> {
        if self.is(Mutant::TwoLeaders) {
            let r = self.runner(root)?;
            if dhp_core::testing::leader(&r)?.is_some_and(|l| l.holder != id) {
                dhp_core::testing::expire_leadership(&r)?;
            }
        }
        Ok(())
    }

    fn scan(&mut self, a: &Value) -> R {
        let root = s(a, "root")?.to_string();
        let id = self.id_arg(a, "supervisor")?;
        self.two_leaders_prelude(&root, &id)?;
        let r = self.runner(&root)?;
        let cfg = self.cfg.clone();
        let mutant = self.mutant;
        let sup = self.supervisor(&root, &id)?;
        let mut actions = Vec::new();
        match mutant {
            Some(Mutant::NoDlq) => {
                if sup.ensure_leadership()? {
                    let expired = with_tx(r.store().as_ref(), Mode::Read, |tx| tx.expired_leases(now()))?;
                    for hid in expired {
                        actions.push(orphan_without_dlq(&r, &hid)?);
                    }
                }
                actions.extend(sup.scan()?);
            }
            Some(Mutant::NoBudgetKill) => {
                if sup.ensure_leadership()? {
                    let t = now();
                    let (expired, stalled) = with_tx(r.store().as_ref(), Mode::Read, |tx| {
                        Ok((tx.expired_leases(t)?, tx.stalled(t, t - cfg.stall_timeout_s, cfg.stall_max_repeats)?))
                    })?;
                    for hid in expired {
                        actions.push(sup.orphan(&hid, OrphanReason::LeaseExpired, None)?);
                    }
                    actions.extend(sup.dead_workers()?);
                    for hid in stalled {
                        actions.push(sup.orphan(&hid, OrphanReason::Stalled, None)?);
                    }
                    actions.retain(|a| a["action"] != "already-orphaned-or-released");
                    // everything else a scan does still happens
                    with_tx(r.store().as_ref(), Mode::Write, |tx| tx.expire_approvals(now()))?;
                }
            }
            _ => actions = sup.scan()?,
        }
        Ok(json!({"actions": actions}))
    }

    fn ship_checkpoint(&mut self, a: &Value) -> R {
        let path = PathBuf::from(s(a, "log")?);
        let seq = i(a, "seq")?;
        let state = v(a, "state")?.clone();
        if self.is(Mutant::ShipCompactJson) {
            let (_, hash) = json::state_text_and_hash(&state)?;
            let rec = json!({"type": "checkpoint", "seq": seq, "state": state, "state_hash": hash, "at": utcnow_iso()});
            let line = String::from_utf8(json::canonical(&rec)?).map_err(|e| err("Internal", e.to_string()))?;
            log::append_line(&path, &line, &self.cfg, false)?;
        } else {
            log::ship_checkpoint(&path, seq, &state, &self.cfg)?;
        }
        Ok(json!({}))
    }

    fn ingest(&mut self, a: &Value) -> R {
        let r = self.runner(s(a, "root")?)?;
        let mut path = PathBuf::from(s(a, "log")?);
        if matches!(self.mutant, Some(Mutant::IngestNoIdCheck | Mutant::IngestNoHashCheck | Mutant::IngestStrict)) {
            let text = std::fs::read_to_string(&path).map_err(|e| err("TransportError", e.to_string()))?;
            let mut out = Vec::new();
            for line in text.split('\n') {
                let parsed = json::parse(line.trim()).ok().filter(|v| v.get("type").is_some());
                match (self.mutant, parsed) {
                    (Some(Mutant::IngestStrict), None) if !line.trim().is_empty() => {
                        return Err(err("TransportError", format!("malformed log line {line:?}")));
                    }
                    (Some(Mutant::IngestNoIdCheck), Some(mut v)) if v["type"] == "envelope" => {
                        reidentify(&mut v["envelope"])?;
                        out.push(json::dumps_sorted(&v)?);
                    }
                    (Some(Mutant::IngestNoHashCheck), Some(mut v)) if v["type"] == "checkpoint" => {
                        v["state_hash"] = json!(json::state_text_and_hash(&v["state"])?.1);
                        out.push(json::dumps_sorted(&v)?);
                    }
                    _ => out.push(line.to_string()),
                }
            }
            path.set_extension("mutant");
            std::fs::write(&path, out.join("\n")).map_err(|e| err("TransportError", e.to_string()))?;
        }
        let rep = log::ingest(r.store().as_ref(), &path, &self.cfg)?;
        Ok(
            json!({"handoff_id": rep.handoff_id, "checkpoints_ingested": rep.checkpoints_ingested, "lines_skipped": rep.lines_skipped}),
        )
    }

    fn suspend(&mut self, a: &Value) -> R {
        let r = self.runner(s(a, "root")?)?;
        let mut bundle = r.suspend(&self.id_arg(a, "hid")?)?;
        if self.is(Mutant::BundleDropsCheckpoints) {
            let mut doc = json::parse_bytes(&bundle)?;
            doc["checkpoints"] = json!([]);
            bundle = json::canonical(&doc)?;
        }
        if self.is(Mutant::BundleKeepsLastCheckpoint) {
            let mut doc = json::parse_bytes(&bundle)?;
            if let Some(list) = doc["checkpoints"].as_array_mut() {
                let keep = list.len().saturating_sub(1);
                list.drain(..keep);
            }
            if let Some(list) = doc.pointer_mut("/envelope/execution/checkpoints").and_then(Value::as_array_mut) {
                let keep = list.len().saturating_sub(1);
                list.drain(..keep);
            }
            bundle = json::canonical(&doc)?;
        }
        std::fs::write(s(a, "path")?, &bundle).map_err(|e| err("StoreError", e.to_string()))?;
        Ok(json!({"bytes": bundle.len()}))
    }

    fn resume(&mut self, a: &Value) -> R {
        let r = self.runner(s(a, "root")?)?;
        let mut bundle = std::fs::read(s(a, "path")?).map_err(|e| err("ValidationError", e.to_string()))?;
        if self.is(Mutant::ResumeNoVerify) {
            let mut doc = json::parse_bytes(&bundle)?;
            reidentify(&mut doc["envelope"])?;
            for c in doc["checkpoints"].as_array_mut().into_iter().flatten() {
                if let Some(m) = c.as_object_mut() {
                    m.remove("state_hash");
                }
            }
            bundle = json::canonical(&doc)?;
        }
        let hid = r.resume(&bundle)?;
        if self.is(Mutant::ResumeResetsUsage) {
            with_tx(r.store().as_ref(), Mode::Write, |tx| {
                let mut env = tx.envelope(&hid)?.ok_or_else(|| Error::UnknownHandoff { hid: hid.clone() })?;
                env["execution"]["steps"] = json!(0);
                env["execution"]["spend_usd"] = json::float(0.0);
                tx.update_envelope(&hid, &json::dumps(&env)?, now())
            })?;
        }
        Ok(json!({"hid": hid}))
    }

    fn record_effect(&mut self, a: &Value) -> R {
        let (r, hid, fence) = self.token(a)?;
        let step = s(a, "step_id")?;
        let result = v(a, "result")?;
        let mut recorded = r.record_effect(&Lease::presented(&hid, fence)?, step, result)?;
        if !recorded && self.is(Mutant::EffectsLastWriteWins) {
            let db = Path::new(s(a, "root")?).join("dhp.sqlite3");
            let c = rusqlite::Connection::open(db).map_err(|e| err("StoreError", e.to_string()))?;
            c.busy_timeout(Duration::from_secs(10)).map_err(|e| err("StoreError", e.to_string()))?;
            c.execute(
                "UPDATE effects SET result_json=?1 WHERE hid=?2 AND step_id=?3",
                rusqlite::params![json::dumps_sorted(result)?, hid, step],
            )
            .map_err(|e| err("StoreError", e.to_string()))?;
            recorded = true;
        }
        Ok(json!({"recorded": recorded}))
    }

    fn require_capability(&mut self, a: &Value) -> R {
        let (r, hid, fence) = self.token(a)?;
        match r.require_capability(&Lease::presented(&hid, fence)?, s(a, "domain")?, s(a, "resource")?) {
            Err(Error::CapabilityDenied { .. })
                if self.is(Mutant::CapabilitiesFailOpen)
                    && r.envelope_bare(&hid)?.pointer("/contract/capabilities").is_none() =>
            {
                Ok(json!({}))
            }
            other => other.map(|_| json!({})).map_err(AErr::from),
        }
    }

    fn canonical(&mut self, a: &Value) -> R {
        let value = json::parse(s(a, "text")?)?;
        let bytes = if self.is(Mutant::CanonicalSerde) {
            serde_json::to_vec(&value).map_err(|e| err("Internal", e.to_string()))?
        } else {
            json::canonical(&value)?
        };
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

/// Orphan for retry whatever the attempt count (the no-dlq mutant).
fn orphan_without_dlq(r: &Runner, hid: &str) -> R {
    let t = now();
    with_tx(r.store().as_ref(), Mode::Write, |tx| {
        let Some(mut own) = tx.ownership(hid)? else { return Ok(()) };
        own.holder = ORPHANED_HOLDER.into();
        own.fence += 1;
        own.lease_expires_at = 0.0;
        tx.update_ownership(&own, t)?;
        if let Some(mut env) = tx.envelope(hid)? {
            env["execution"]["status"] = json!("orphaned");
            env["execution"]["orphaned_at"] = json::float(t);
            env["execution"]["orphan_reason"] = json!("lease-expired");
            let text = json::dumps(&env)?;
            tx.update_envelope(hid, &text, t)?;
        }
        Ok(())
    })?;
    Ok(json!({"hid": hid, "action": "orphaned"}))
}

/// Start `sleep 600` in this process's group and append its pid to `file`.
fn spawn_grandchild(file: &str) -> std::io::Result<()> {
    let child = std::process::Command::new("sleep").arg("600").stdin(std::process::Stdio::null()).spawn()?;
    let mut f = std::fs::OpenOptions::new().create(true).append(true).open(file)?;
    writeln!(f, "{}", child.id())
}

fn usage() -> ! {
    eprintln!("usage: dhp-adapter [--mutant NAME] [--misbehave MODE:OP] [--spawn-grandchild PIDFILE] [--log-requests] [--list-mutants]");
    std::process::exit(2);
}

/// Run the adapter over stdin/stdout with command-line `args` (without
/// the program name). Returns the exit status.
pub fn run(args: impl IntoIterator<Item = String>) -> i32 {
    let mut mutant = None;
    let mut misbehave: Option<(Misbehave, String)> = None;
    let mut log_requests = false;
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--mutant" => mutant = Some(mutants::parse(&args.next().unwrap_or_default()).unwrap_or_else(|| usage())),
            "--misbehave" => {
                misbehave = Some(mutants::parse_misbehave(&args.next().unwrap_or_default()).unwrap_or_else(|| usage()))
            }
            // a bad adapter for the runner's tests: leaves a process behind
            // (appending its pid to PIDFILE) that only a kill of the whole
            // process group ends
            "--spawn-grandchild" => {
                let file = args.next().unwrap_or_else(|| usage());
                if let Err(e) = spawn_grandchild(&file) {
                    eprintln!("dhp-adapter: --spawn-grandchild: {e}");
                    return 2;
                }
            }
            // one stderr line per request: what the runner's reports show
            "--log-requests" => log_requests = true,
            "--list-mutants" => {
                for (name, _, what) in mutants::ALL {
                    println!("{name}\t{what}");
                }
                return 0;
            }
            _ => usage(),
        }
    }
    let mut cfg = match Config::from_env() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("dhp-adapter: {e}");
            return 2;
        }
    };
    if mutant == Some(Mutant::NoSizeLimits) {
        // The largest limits a valid configuration allows.
        let huge = dhp_core::config::MAX_BYTES;
        cfg.max_checkpoint_bytes = huge;
        cfg.max_result_bytes = huge;
        cfg.max_envelope_bytes = huge;
        cfg.transport_max_line_bytes = huge;
    }
    if mutant == Some(Mutant::NoStallDetection) {
        cfg.stall_max_repeats = dhp_core::config::MAX_STALL_REPEATS;
        cfg.stall_timeout_s = dhp_core::config::MAX_KNOB_S;
    }
    if let Some(m) = mutant {
        eprintln!("dhp-adapter: mutant {} active", mutants::name(m));
    }
    let mut ad =
        Adapter { cfg, mutant, runners: HashMap::new(), sups: HashMap::new(), tokens: Vec::new(), pending: Vec::new() };
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
            if mutants::targets(target, &op) {
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
        let res = match wait {
            Ok(wait) => {
                if let Some(d) = wait {
                    std::thread::sleep(d);
                }
                ad.handle(&op, &args)
            }
            Err(e) => Err(err(e.kind(), e.to_string())),
        };
        if log_requests {
            match &res {
                Ok(_) => eprintln!("dhp-adapter: {op}: ok"),
                Err(e) => eprintln!("dhp-adapter: {op}: {} ({})", e.kind, e.message),
            }
        }
        let mut reply = match res {
            Ok(result) => json!({"id": id, "ok": true, "result": result}),
            Err(e) => json!({"id": id, "ok": false, "error": {"kind": e.kind, "message": e.message}}),
        };
        match &misbehave {
            Some((Misbehave::WrongId, t)) if mutants::targets(t, &op) => reply["id"] = json!(id + 1000),
            Some((Misbehave::BadReply, t)) if mutants::targets(t, &op) => {
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
    ad.flush();
    0
}
