//! Sending the steps of [`super::gen_extra`], and what the runner checks
//! after them from what it reads itself: the bundle file suspend wrote,
//! the transport log and what an ingest of it made, a resumed handoff,
//! the effects rows.

use super::compare::Divergence;
use super::gen::Step;
use super::gen_extra::{bad_worker, CAPABILITY};
use super::run::Got;
use super::world::World;
use super::world_extra::{effect_result, effect_step};
use crate::check::{Check, Fail};
use crate::client::Adapter;
use crate::suite::Ctx;
use serde_json::{json, Value};

/// What a step of this module needs of its run.
pub struct Io<'r, 'a> {
    /// The run's context.
    pub cx: &'r Ctx<'a>,
    /// The adapter.
    pub m: &'r mut Adapter,
    /// The sequence's store.
    pub root: &'r str,
    /// The sequence's name (file names).
    pub name: &'r str,
    /// The step's index.
    pub i: usize,
}

/// Whether this module sends `step`.
pub fn handles(step: &Step) -> bool {
    matches!(
        step,
        Step::Await { .. }
            | Step::BadId { .. }
            | Step::CompleteIntegral { .. }
            | Step::Resume { .. }
            | Step::Ship { .. }
            | Step::Effect { .. }
            | Step::Capability { .. }
            | Step::Retune { .. }
            | Step::Activity { .. }
            | Step::Canonical { .. }
            | Step::OpenRace { .. }
            | Step::NewerSchema
            | Step::LockedWrite { .. }
            | Step::Lead { .. }
    )
}

fn token(w: &World, root: &str, h: u8, worker: &str) -> Value {
    let n: u8 = worker.strip_prefix('w').and_then(|x| x.parse().ok()).unwrap_or(0);
    json!({"root": root, "worker": worker, "hid": w.hid(h), "fence": w.presented_fence(h, n, false)})
}

/// The paths a step writes.
pub fn path(io: &Io<'_, '_>, what: &str) -> String {
    io.cx.path(&format!("{}-{what}-{}", io.name, io.i))
}

/// Send `step` (the world is the model's state before it).
pub fn send(io: &mut Io<'_, '_>, w: &mut World, step: &Step) -> Check<Vec<(u8, Got)>> {
    let root = io.root.to_string();
    let one = |g: Got| Ok(vec![(0, g)]);
    match step {
        Step::Await { h, nth } => {
            let Some((holder, id, _)) = w.await_plan(*h, *nth) else { return Ok(Vec::new()) };
            let mut a = token(w, &root, *h, &format!("w{holder}"));
            a["approval_id"] = json!(id);
            one(io.m.try_op("await_approval", a)?)
        }
        Step::BadId { h, w: x, how } => {
            let a = json!({"root": root, "worker": bad_worker(*x, *how), "hid": w.hid(*h)});
            one(io.m.try_op("claim", a)?)
        }
        Step::CompleteIntegral { h, w: x } => {
            let mut a = token(w, &root, *h, &format!("w{x}"));
            a["result"] = super::gen_extra::edge_result(*h);
            one(io.m.try_op("complete", a)?)
        }
        Step::Resume { h, tamper } => {
            let Some(b) = w.bundles.get(h) else { return Ok(Vec::new()) };
            let Some(file) = b.path.clone() else { return Ok(Vec::new()) };
            let file = if *tamper % 3 == 0 { file } else { tampered_bundle(io, &file, *tamper)? };
            let fresh = io.cx.root(&format!("{}-resumed-{}", io.name, io.i))?;
            io.m.open(&fresh)?;
            w.side_root = Some(fresh.clone());
            one(io.m.try_op("resume", json!({"root": fresh, "path": file}))?)
        }
        Step::Ship { h, how } => {
            let log = if *how == 4 { path(io, &"x".repeat(300)) } else { path(io, "log") + ".log" };
            one(io.m.try_op("ship_envelope", json!({"root": root, "hid": w.hid(*h), "log": log}))?)
        }
        Step::Effect { h, w: x, step, r } => {
            let mut a = token(w, &root, *h, &format!("w{x}"));
            a["step_id"] = json!(effect_step(*step));
            a["result"] = effect_result(*r);
            one(io.m.try_op("record_effect", a)?)
        }
        Step::Capability { h, w: x, which } => {
            let (domain, resource) = CAPABILITY[usize::from(*which) % CAPABILITY.len()];
            let mut a = token(w, &root, *h, &format!("w{x}"));
            a["domain"] = json!(domain);
            a["resource"] = json!(resource);
            one(io.m.try_op("require_capability", a)?)
        }
        Step::Activity { h, w: x, n } => {
            let mut a = token(w, &root, *h, &format!("w{x}"));
            a["digest"] = json!(super::gen_extra::activity_digest(*h));
            let mut last = Ok(json!({}));
            for _ in 0..*n {
                last = io.m.try_op("note_activity", a.clone())?;
            }
            one(last)
        }
        Step::Canonical { which } => {
            let text = super::gen_extra::CANONICAL_TEXTS[usize::from(*which) % super::gen_extra::CANONICAL_TEXTS.len()];
            one(io.m.try_op("canonical", json!({"text": text}))?)
        }
        Step::OpenRace { .. } | Step::NewerSchema | Step::LockedWrite { .. } => super::store_steps::send(io, w, step),
        Step::Retune { h, long } => {
            let db = io.cx.store(io.root)?.ok_or_else(|| Fail::Errored("retune needs standard-store".into()))?;
            let n = db.set_lease_terms(w.hid(*h), if *long { 100.0 } else { 1.0 }, 2)?;
            one(Ok(json!({"updated": n})))
        }
        Step::Lead { s } => {
            one(io.m.try_op("ensure_leadership", json!({"root": root, "supervisor": format!("s{s}")}))?)
        }
        _ => Ok(Vec::new()),
    }
}

fn read_json(file: &str) -> Check<Result<Value, String>> {
    let bytes = match std::fs::read(file) {
        Ok(b) => b,
        Err(e) => return Ok(Err(format!("{file}: {e}"))),
    };
    Ok(serde_json::from_slice(&bytes).map_err(|e| format!("{file} is not JSON: {e}")))
}

/// A copy of bundle `file` with its inputs changed (1) or a forged
/// checkpoint added (2).
fn tampered_bundle(io: &Io<'_, '_>, file: &str, tamper: u8) -> Check<String> {
    let mut doc = read_json(file)?.map_err(Fail::failed)?;
    if tamper % 3 == 1 {
        doc["envelope"]["task"]["inputs"]["inline"]["n"] = json!(999);
    } else if let Some(list) = doc["checkpoints"].as_array_mut() {
        list.push(json!({"seq": 7, "state": {"s": 2}, "state_hash": "0".repeat(64)}));
    }
    let out = path(io, "tampered.bundle");
    let text = dhp_oracle::json::canonical(&doc).map_err(|e| Fail::Errored(e.to_string()))?;
    std::fs::write(&out, text).map_err(|e| Fail::Errored(format!("{out}: {e}")))?;
    Ok(out)
}

fn div(what: &str, want: String, got: String, rule: &str) -> Option<Divergence> {
    Some(Divergence {
        step: 0,
        what: what.to_string(),
        key: what.to_string(),
        want,
        got,
        rule: rule.to_string(),
        timing: false,
    })
}

/// What the runner checks itself after `step` (the model has applied
/// it; `replies` were the implementation's).
pub fn after(io: &mut Io<'_, '_>, w: &mut World, step: &Step, replies: &[(u8, Got)]) -> Check<Option<Divergence>> {
    let ok = replies.first().is_some_and(|(_, r)| r.is_ok());
    match step {
        Step::Suspend { h } if ok => {
            let file = io.cx.path(&format!("{}-bundle-{}.json", io.name, io.i));
            if let Some(b) = w.bundles.get_mut(h) {
                b.path = Some(file.clone());
            }
            bundle_file(w, *h, &file)
        }
        Step::Resume { h, tamper: 0 } if ok => super::ship::resumed(io, w, *h),
        Step::Ship { h, how } if ok && *how != 4 => super::ship::shipped(io, w, *h, *how),
        Step::Effect { h, .. } => effects(io, w, *h),
        Step::Activity { h, .. } if ok => {
            let got = replies.first().and_then(|(_, r)| r.as_ref().ok()).map(|v| v["repeat_count"].clone());
            let want = json!(w.repeats(*h));
            let rule = "§6.5 note_activity counts repeats of the same digest in a row [stall-orphan-then-dlq]";
            Ok((got.as_ref() != Some(&want))
                .then(|| div("repeat_count", want.to_string(), json!(got).to_string(), rule))
                .flatten())
        }
        Step::Canonical { which } if ok => canonical(*which, replies),
        _ => Ok(None),
    }
}

/// The bundle file's checkpoints against the model's at suspend (§10:
/// a bundle carries every checkpoint, verified).
fn bundle_file(w: &World, h: u8, file: &str) -> Check<Option<Divergence>> {
    let rule = "§10 a bundle carries the envelope and every checkpoint [no-runner-lock-in] [suspend-resume-round-trip]";
    let doc = match read_json(file)? {
        Ok(d) => d,
        Err(e) => return Ok(div("bundle file", "a JSON bundle".into(), e, rule)),
    };
    let want: Vec<Value> =
        w.bundles.get(&h).map_or(Vec::new(), |b| b.checkpoints.iter().map(|c| json!([c.seq, c.hash])).collect());
    let got: Vec<Value> = doc["checkpoints"]
        .as_array()
        .map_or(Vec::new(), |a| a.iter().map(|c| json!([c["seq"], bundle_hash(c)])).collect());
    if want != got {
        return Ok(div("bundle checkpoints", json!(want).to_string(), json!(got).to_string(), rule));
    }
    let env = &doc["envelope"];
    if env["handoff_id"] != json!(w.hid(h)) || !dhp_oracle::verifies(env) {
        let got = format!("handoff_id {}, verifies: {}", env["handoff_id"], dhp_oracle::verifies(env));
        return Ok(div("bundle envelope", format!("{}, verifies", w.hid(h)), got, rule));
    }
    Ok(None)
}

/// A bundle checkpoint's hash: the oracle's of its state (a bundle may
/// carry `state_hash` too; resume verifies it).
fn bundle_hash(c: &Value) -> Value {
    match dhp_oracle::state_hash(&c["state"]) {
        Ok(h) if c.get("state_hash").is_none_or(|x| *x == json!(h)) => json!(h),
        Ok(h) => json!(format!("{h} (its state_hash: {})", c["state_hash"])),
        Err(e) => json!(format!("(no state: {e})")),
    }
}

/// The `canonical` op's bytes against the oracle's (§2.2).
fn canonical(which: u8, replies: &[(u8, Got)]) -> Check<Option<Divergence>> {
    let text = super::gen_extra::CANONICAL_TEXTS[usize::from(which) % super::gen_extra::CANONICAL_TEXTS.len()];
    let v: Value = serde_json::from_str(text).map_err(|e| Fail::Errored(e.to_string()))?;
    let bytes = dhp_oracle::json::canonical(&v).map_err(|e| Fail::Errored(e.to_string()))?.into_bytes();
    let want: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    let got = replies.first().and_then(|(_, r)| r.as_ref().ok()).map(|v| v["canonical_hex"].clone());
    if got == Some(json!(want)) {
        return Ok(None);
    }
    let rule =
        "§2.2 canonical JSON: sorted keys, no spaces, numbers as Python writes them, non-ASCII raw [canonical-vectors]";
    Ok(div("canonical bytes", want, json!(got).to_string(), rule))
}

/// The effects rows of `h` against the model's (values compared as JSON).
fn effects(io: &mut Io<'_, '_>, w: &World, h: u8) -> Check<Option<Divergence>> {
    let Some(db) = io.cx.store(io.root)? else { return Ok(None) };
    let hid = w.hid(h).to_string();
    let parse = |t: &str| serde_json::from_str::<Value>(t).unwrap_or(Value::Null);
    let got: Vec<Value> = db.effects(&hid)?.into_iter().map(|(k, v)| json!([k, parse(&v)])).collect();
    let want: Vec<Value> =
        w.s.effects.iter().filter(|((x, _), _)| *x == hid).map(|((_, k), v)| json!([k, parse(v)])).collect();
    let mut got = got;
    got.sort_by_key(|v| v[0].to_string());
    if got != want {
        let rule = "§6.5 effects: the first recorded result stands [effects-first-write-wins]";
        return Ok(div("store effects", json!(want).to_string(), json!(got).to_string(), rule));
    }
    Ok(None)
}
