//! The adapter's answer to each request: one arm per op of the typed
//! [`Request`], each through the dhp-core call the op names.

use super::{err, Adapter, R};
use dhp_adapter_proto::{args, Request};
use dhp_core::envelope::{self, BuildOptions};
use dhp_core::transport::log;
use dhp_core::{json, liveness, Lease, Runner};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// The features the adapter declares in `hello`.
const FEATURES: &[&str] = &[
    "standard-store",
    "env-config",
    "stall-detection",
    "effects",
    "capabilities",
    "canonical",
    "fast-death-detection",
    "approvals",
    "postgres-store",
    "clock-control",
];

impl Adapter {
    /// Answer one request: one arm per op (exhaustive, so a new op of the
    /// protocol does not compile without its answer).
    pub(crate) fn handle(&mut self, req: Request) -> R {
        match req {
            Request::Hello(_) => Ok(hello()),
            Request::Shutdown(_) => Ok(json!({})),
            Request::Open(a) => self.open(&a.root),
            Request::BuildEnvelope(a) => build_envelope(&a, self.clock.as_ref().map(|_| self.cfg.clock.now_iso())),
            Request::Dispatch(a) => Ok(json!({"hid": self.runner(&a.root)?.dispatch(&a.envelope)?})),
            Request::Claim(a) => Ok(json!({"fence": self.taker(&a)?.claim(&a.hid)?.fence()})),
            Request::Recover(a) => Ok(json!({"fence": self.taker(&a)?.recover(&a.hid)?.fence()})),
            Request::Checkpoint(a) => {
                self.with_lease(&a.token(), |r, l| Ok(json!({"seq": r.checkpoint(l, &a.state)?})))
            }
            Request::Heartbeat(a) => self.with_lease(&a, |r, l| Ok(json!({"expires_in_s": r.heartbeat(l)?}))),
            Request::NoteStep(a) => self.with_lease(&a.token(), |r, l| done(r.note_step(l, a.n))),
            Request::NoteSpend(a) => self.with_lease(&a.token(), |r, l| done(r.note_spend(l, a.usd))),
            Request::Complete(a) => self.with_lease(&a.token(), |r, l| done(r.complete(l, &a.result))),
            Request::Release(a) => self.with_lease(&a.token(), |r, l| done(r.release(l, &a.reason))),
            Request::Ack(a) => done(self.runner(&a.root)?.ack(&a.hid)),
            Request::LastCheckpoint(a) => Ok(json!({"state": self.runner(&a.root)?.last_checkpoint(&a.hid)?})),
            Request::Status(a) => status(&self.runner(&a.root)?, &a.hid),
            Request::LoadEnvelope(a) => Ok(json!({"envelope": self.runner(&a.root)?.envelope(&a.hid)?})),
            Request::Ownership(a) => self.ownership(&a),
            Request::Leadership(a) => self.leadership(&a.root),
            Request::EnsureLeadership(a) => {
                Ok(json!({"leader": self.supervisor(&a.root, &a.supervisor)?.ensure_leadership()?}))
            }
            Request::Scan(a) => Ok(json!({"actions": self.supervisor(&a.root, &a.supervisor)?.scan()?})),
            Request::ExpireLease(a) => {
                Ok(json!({"updated": dhp_testkit::store::expire_lease(&self.runner(&a.root)?, &a.hid)?}))
            }
            Request::ExpireLeadership(a) => {
                Ok(json!({"updated": dhp_testkit::store::expire_leadership(&self.runner(&a.root)?)?}))
            }
            Request::ShipEnvelope(a) => self.ship_envelope(&a),
            Request::ShipCheckpoint(a) => done(log::ship_checkpoint(Path::new(&a.log), a.seq, &a.state, &self.cfg)),
            Request::Ingest(a) => self.ingest(&a),
            // Through `suspend_to`, the path dhp-core recommends and `dhp
            // suspend` takes (the bundle is in place before the status change
            // commits), so the suite judges that path and not a wrapper of ours.
            Request::Suspend(a) => Ok(json!({"bytes": self.runner(&a.root)?.suspend_to(&a.hid, Path::new(&a.path))?})),
            Request::Resume(a) => self.resume(&a),
            Request::RecordEffect(a) => {
                self.with_lease(&a.token(), |r, l| Ok(json!({"recorded": r.record_effect(l, &a.step_id, &a.result)?})))
            }
            Request::EffectDone(a) => self.with_lease(&a.token(), |r, l| {
                let res = r.effect_done(l, &a.step_id)?;
                Ok(json!({"done": res.is_some(), "result": res}))
            }),
            Request::NoteActivity(a) => {
                self.with_lease(&a.token(), |r, l| Ok(json!({"repeat_count": r.note_activity(l, &a.digest)?})))
            }
            Request::RequireCapability(a) => {
                self.with_lease(&a.token(), |r, l| done(r.require_capability(l, &a.domain, &a.resource)))
            }
            Request::Canonical(a) => canonical(&a.text),
            Request::HandoffId(a) => handoff_id(&a.text),
            Request::LivenessPublish(a) => self.liveness_publish(&a),
            Request::RequestApproval(a) => self.request_approval(&a),
            Request::Approvals(a) => self.approvals(&a),
            Request::DecideApproval(a) => self.decide_approval(&a),
            Request::AwaitApproval(a) => self.await_approval(&a),
        }
    }

    /// Run `f` with the runner and lease a holder presents.
    fn with_lease(&mut self, t: &args::Token, f: impl FnOnce(&Runner, &Lease) -> R) -> R {
        let (r, l) = self.held(t)?;
        f(&r, &l)
    }

    fn ownership(&mut self, a: &args::Handoff) -> R {
        let o = self.runner(&a.root)?.ownership(&a.hid)?;
        let o = o.map(|o| json!({"holder": o.holder, "fence": o.fence, "lease_expires_at": o.lease_expires_at}));
        Ok(json!({ "ownership": o }))
    }

    fn leadership(&mut self, root: &str) -> R {
        let l = dhp_testkit::store::leader(&self.runner(root)?)?;
        Ok(json!({"leadership": l.map(|l| json!({"holder": l.holder, "expires_at": l.expires_at}))}))
    }

    fn ship_envelope(&mut self, a: &args::ShipEnvelope) -> R {
        let env = self.runner(&a.root)?.envelope(&a.hid)?;
        done(log::ship_envelope(Path::new(&a.log), &env, &self.cfg))
    }

    fn ingest(&mut self, a: &args::Ingest) -> R {
        let r = self.runner(&a.root)?;
        let rep = log::ingest(r.store().as_ref(), Path::new(&a.log), &self.cfg)?;
        Ok(
            json!({"handoff_id": rep.handoff_id, "checkpoints_ingested": rep.checkpoints_ingested, "lines_skipped": rep.lines_skipped}),
        )
    }

    fn resume(&mut self, a: &args::Resume) -> R {
        let r = self.runner(&a.root)?;
        let bundle = std::fs::read(&a.path).map_err(|e| err("ValidationError", e.to_string()))?;
        Ok(json!({"hid": r.resume(&bundle)?}))
    }

    /// The runner of a worker that asks for a handoff.
    fn taker(&mut self, a: &args::Take) -> R<Runner> {
        Ok(self.runner(&a.root)?.with_id(&a.worker)?)
    }

    /// The runner and lease a holder presents.
    pub(super) fn held(&mut self, t: &args::Token) -> R<(Runner, Lease)> {
        let r = self.runner(&t.root)?.with_id(&t.worker)?;
        Ok((r, Lease::presented(&t.hid, t.fence)?))
    }

    /// Drop this process's handles on the store at `root` and open it again.
    fn open(&mut self, root: &str) -> R {
        self.close(root);
        self.runner(root)?;
        let canon = std::fs::canonicalize(root).unwrap_or_else(|_| PathBuf::from(root));
        Ok(json!({"store_file": canon.join("dhp.sqlite3").to_string_lossy()}))
    }

    fn liveness_publish(&mut self, a: &args::Liveness) -> R {
        let w = dhp_core::WorkerId::parse(&a.worker)?;
        // the backend's own token (PostgreSQL: an advisory lock), else a flock file
        let token = match self.runner(&a.root)?.store().publish_liveness(&w)? {
            Some(t) => t,
            None => {
                let root = std::fs::canonicalize(&a.root).map_err(|e| err("StoreError", e.to_string()))?;
                Box::new(liveness::publish(&root, &w)?)
            }
        };
        self.tokens.push(token);
        Ok(json!({}))
    }
}

/// The `hello` result.
fn hello() -> Value {
    json!({
        "implementation": "dhp-rs",
        "version": env!("CARGO_PKG_VERSION"),
        "protocol_version": "1.3",
        "adapter_protocol": dhp_adapter_proto::ADAPTER_PROTOCOL,
        "features": FEATURES,
        "pid": std::process::id(),
    })
}

/// An op that answers nothing but success.
fn done<E>(res: Result<(), E>) -> R
where
    super::AErr: From<E>,
{
    res?;
    Ok(json!({}))
}

/// `handoff_id`: an envelope text's id and input hash.
fn handoff_id(text: &str) -> R {
    let env = json::parse(text)?;
    let inputs = env.pointer("/task/inputs").cloned().unwrap_or(Value::Null);
    Ok(json!({"handoff_id": envelope::handoff_id(&env)?, "input_hash": envelope::input_hash(&inputs)?}))
}

/// `status`: the handoff's envelope and ownership as ADAPTERS.md has them.
fn status(r: &Runner, hid: &str) -> R {
    let env = r.envelope_bare(hid)?;
    let own = r.ownership(hid)?;
    let n = r.checkpoints(hid)?.len();
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

/// `canonical`: the canonical bytes of a JSON text, and an object's state
/// rendering.
fn canonical(text: &str) -> R {
    let value = json::parse(text)?;
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

/// `build_envelope`; `created_at` fixes the envelope's creation time (the
/// mutants' way in: the adapter protocol does not pass one).
pub(crate) fn build_envelope(a: &args::BuildEnvelope, created_at: Option<String>) -> R {
    let opts = BuildOptions {
        budget: a.budget.clone().map(Value::Object),
        capabilities: a.capabilities.clone().map(Value::Object),
        max_stall_retries: a.max_stall_retries,
        idempotency_key: a.idempotency_key.clone(),
        created_by: a.created_by.clone(),
        created_at,
        ..Default::default()
    };
    let env = envelope::build(&a.kind, a.inputs.clone(), a.output_schema.clone(), opts)?;
    Ok(json!({"envelope": env}))
}
