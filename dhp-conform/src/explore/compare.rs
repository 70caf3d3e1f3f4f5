//! Comparing the implementation with the model: each reply (ok, or the
//! error kind), then each handoff as `status` reports it and as the store
//! holds it (ownership row, checkpoint seqs and hashes), and approvals.

use super::gen::Step;
use super::run::Got;
use super::world::{Expect, World};
use crate::check::Check;
use crate::protocol::feature;
use crate::suite::Ctx;
use dhp_model::state::Time;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::BTreeSet;

/// Where the implementation and the model parted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Divergence {
    /// The step (0-based) after which they differ.
    pub step: usize,
    /// What differs: `reply of claim by w1`, `h0 status.owner`, …
    pub what: String,
    /// The same, without worker or handoff names: what shrinking keeps.
    pub key: String,
    /// The model's value.
    pub want: String,
    /// The implementation's.
    pub got: String,
    /// The PROTOCOL.md rule it breaks.
    pub rule: String,
    /// A deadline of the model fell within the step's time: the
    /// implementation may have read the clock on its other side.
    pub timing: bool,
}

impl Divergence {
    fn new(what: String, key: String, want: String, got: String, rule: &str) -> Divergence {
        Divergence { step: 0, what, key, want, got, rule: rule.to_string(), timing: false }
    }

    /// Whether `other` shows the same divergence: the same key, or for a
    /// reply the same request and the same answer of the model, refused
    /// by another answer (a mutant may answer `ok` or `LeaseLost` to a
    /// stale token depending on how much time passed: both break the rule).
    pub fn same_as(&self, other: &Divergence) -> bool {
        let model_side =
            |k: &str| k.starts_with("reply of ").then(|| k.split(" vs ").next().map(String::from)).flatten();
        self.key == other.key || model_side(&self.key).is_some_and(|m| Some(m) == model_side(&other.key))
    }

    /// At step `i`, with the clock-race flag.
    pub fn at(mut self, i: usize, timing: bool) -> Divergence {
        self.step = i;
        self.timing = timing;
        self
    }
}

/// The request name of a step.
pub fn op_name(step: &Step) -> &'static str {
    match step {
        Step::Dispatch { .. } => "dispatch",
        Step::Tampered { .. } => "dispatch (tampered)",
        Step::Oversize { .. } => "dispatch (oversize)",
        Step::Claim { .. } => "claim",
        Step::ClaimRace { .. } => "claim (race)",
        Step::Heartbeat { .. } => "heartbeat",
        Step::Checkpoint { .. } => "checkpoint",
        Step::NoteStep { .. } => "note_step",
        Step::NoteSpend { .. } => "note_spend",
        Step::Complete { valid: true, .. } => "complete",
        Step::Complete { valid: false, .. } => "complete (invalid result)",
        Step::Release { .. } => "release",
        Step::Ack { .. } => "ack",
        Step::Advance { .. } => "clock",
        Step::Scan { .. } => "scan",
        Step::Recover { .. } => "recover",
        Step::Suspend { .. } => "suspend",
        Step::RequestApproval { .. } => "request_approval",
        Step::Decide { .. } => "decide_approval",
        Step::Await { .. } => "await_approval",
        Step::BadId { how, .. } => match how % 4 {
            0 => "claim (malformed worker id)",
            1 => "claim (worker id ending in a newline)",
            _ => "claim (reserved worker id)",
        },
        Step::CompleteIntegral { .. } => "complete (edge of its schema)",
        Step::Resume { .. } => "resume",
        Step::Ship { .. } => "ship_envelope",
        Step::Effect { .. } => "record_effect",
        Step::Capability { .. } => "require_capability",
        Step::Retune { .. } => "lease terms rewritten",
        Step::Lead { .. } => "ensure_leadership",
        Step::Crash { .. } => "claim (by a process then killed)",
        Step::Activity { .. } => "note_activity",
        Step::Canonical { .. } => "canonical",
        Step::OpenRace { .. } => "open (race to create)",
        Step::NewerSchema => "open (schema version 4)",
        Step::LockedWrite { .. } => "checkpoint (write lock held)",
    }
}

/// The rule a reply of `step` answers to.
fn reply_rule(step: &Step) -> &'static str {
    match step {
        Step::Dispatch { .. } => "§6.1 dispatch stores a verified envelope; again is a no-op [idempotent-dispatch]",
        Step::Tampered { .. } => {
            "§1.2 an envelope that does not match its id and input_hash is refused [no-crossed-inputs]"
        }
        Step::Oversize { .. } => "§12 an envelope over DHP_MAX_ENVELOPE_BYTES is refused [oversize-rejected]",
        Step::Claim { .. } | Step::ClaimRace { .. } => {
            "§5.3 claim only in pending, one ownership row, one winner [claim-race] [wrong-state-operations]"
        }
        Step::Heartbeat { .. } => "§5.2 the ownership check, then §5.5 heartbeat [fencing] [lease-expiry-lease-lost]",
        Step::Checkpoint { .. } => "§5.2 the ownership check, then §6.2 checkpoint [fencing]",
        Step::NoteStep { .. } | Step::NoteSpend { .. } => {
            "§6.4 usage is recorded, then checked: over budget is BudgetExceeded [no-silent-budget-overrun]"
        }
        Step::Complete { valid: true, .. } => "§6.3 complete once, the first result stands [idempotent-complete]",
        Step::Complete { valid: false, .. } => {
            "§6.3 a result violating the output schema fails the handoff [no-untyped-results]"
        }
        Step::Release { .. } => "§5.5 release by the owner [release-to-pending]",
        Step::Ack { .. } => "§6.3 ack only after completion [ack-after-complete]",
        Step::Advance { .. } => "§5 time",
        Step::Scan { .. } => "§7 a supervisor scan [leader-election]",
        Step::Recover { .. } => {
            "§5.4 recover: a compare-and-set on the orphaned fence, exactly one wins [exactly-one-wins]"
        }
        Step::Suspend { .. } => "§4 suspend only running (or suspended) work [no-runner-lock-in]",
        Step::RequestApproval { .. } => "§6.6 gated classes fail closed until approved [approval-gates]",
        Step::Decide { .. } => "§6.6 only a pending approval is decided, once [approval-gates]",
        Step::Await { .. } => "§6.6 await: approved passes; denied or expired is ApprovalDenied [approval-gates]",
        Step::BadId { .. } => {
            "§5.1 a malformed, newline-ended or reserved worker id is a ValidationError [malformed-ids-rejected] [reserved-worker-ids-refused]"
        }
        Step::CompleteIntegral { .. } => {
            "§6.3 1.0 is an integer; a schema is read as the draft its $schema names [output-schema-reading]"
        }
        Step::Resume { .. } => "§10 resume verifies the bundle and carries its usage [tampered-bundle-rejected] [suspend-resume-round-trip]",
        Step::Ship { .. } => "§8 shipping reports a log it cannot write [ship-failure-reported]",
        Step::Effect { .. } => "§6.5 record_effect: first write wins [effects-first-write-wins]",
        Step::Capability { .. } => "§6.5 capabilities fail closed [capabilities-fail-closed]",
        Step::Retune { .. } => "§5.1 the ownership row stores its lease terms [heartbeat-extends-lease]",
        Step::Lead { .. } => "§7.1 one leader: a live term keeps others out, a leader renews its own [leader-election] [leader-renews-term]",
        Step::Crash { .. } => "§5.3 claim only in pending [claim-race] [wrong-state-operations]",
        Step::Activity { .. } => "§6.5 note_activity after the ownership check [stall-orphan-then-dlq]",
        Step::Canonical { .. } => "§2.2 canonical JSON of any JSON text [canonical-vectors]",
        Step::OpenRace { .. } => "§3.1 every opener of a new store opens it: the losers of the race to create it open the winner's [concurrent-create]",
        Step::NewerSchema => "§3.1 a store whose schema_version is newer than 3 is refused, unchanged [newer-schema-refused]",
        Step::LockedWrite { .. } => "§3.1 a writer that finds the write lock held waits for it (busy timeout) [write-lock-wait]",
    }
}

/// The rule a stored field answers to.
fn field_rule(field: &str) -> &'static str {
    match field {
        "status" => "§4 the status state machine [wrong-state-operations]",
        "owner" | "fence" | "store ownership" => "§5.1 the ownership row: holder and fence [fencing]",
        "attempt" => "§5.3/§5.4 attempt: only recover (and resume) add to it [status-reporting]",
        "checkpoints" | "store checkpoints" => "§6.2 checkpoints: seq = max + 1, kept [no-lost-results]",
        "steps" | "spend_usd" => "§6.4 usage recorded, then checked [no-silent-budget-overrun]",
        "result" | "acked" => "§6.3 the delivered result and its ack [idempotent-complete] [ack-after-complete]",
        "error" => "§4 a failed handoff says why [no-untyped-results] [dead-letter-queue]",
        "exists" => "§6.1 only a verified, dispatched envelope is stored [no-crossed-inputs]",
        "leadership" => "§7.1 one leader: a live term keeps others out, a leader renews its own [leader-election] [leader-renews-term]",
        _ => "§6.6 an approval's status [approval-gates]",
    }
}

fn show(g: &Got) -> String {
    match g {
        Ok(v) => format!("ok {v}"),
        Err(e) => format!("{} ({})", e.kind, e.message),
    }
}

fn show_expect(e: &Expect) -> String {
    match e {
        Ok(None) => "ok".into(),
        Ok(Some(b)) => format!("ok {b}"),
        Err("*") => "an error".into(),
        Err(k) => (*k).to_string(),
    }
}

fn matches(e: &Expect, g: &Got) -> bool {
    match (e, g) {
        (Ok(None), Ok(_)) => true,
        (Ok(Some(b)), Ok(v)) => {
            v.get("decided").or(v.get("recorded")).or(v.get("leader")).and_then(Value::as_bool) == Some(*b)
        }
        // `*`: any refusal (which kind is the implementation's)
        (Err("*"), Err(_)) => true,
        // `A|B`: either kind is right (an order the spec leaves open)
        (Err(k), Err(r)) => k.split('|').any(|k| r.kind == k),
        (Err(k), Ok(_)) => k.split('|').any(|k| k == "ok"),
        _ => false,
    }
}

/// Each reply against the model's.
pub fn replies(step: &Step, got: &[(u8, Got)], want: &[(u8, Expect)]) -> Option<Divergence> {
    let op = op_name(step);
    for (w, e) in want {
        let g = got.iter().find(|(x, _)| x == w).map(|(_, g)| g);
        let by = if matches!(step, Step::Recover { .. } | Step::ClaimRace { .. } | Step::OpenRace { .. }) {
            format!(" by w{w}")
        } else {
            String::new()
        };
        match g {
            Some(g) if matches(e, g) => {}
            Some(g) => {
                let d = Divergence::new(
                    format!("reply of {op}{by}"),
                    format!(
                        "reply of {op}: {} vs {}",
                        show_expect(e),
                        g.as_ref().map_or_else(|e| e.kind.clone(), |_| "ok".into())
                    ),
                    show_expect(e),
                    show(g),
                    reply_rule(step),
                );
                return Some(d);
            }
            None => {
                let d = Divergence::new(
                    format!("reply of {op}{by}"),
                    format!("reply of {op}: missing"),
                    show_expect(e),
                    "no reply".into(),
                    reply_rule(step),
                );
                return Some(d);
            }
        }
    }
    None
}

fn field(h: usize, name: &str, want: Value, got: &Value) -> Option<Divergence> {
    (want != *got).then(|| {
        Divergence::new(format!("h{h} {name}"), name.to_string(), want.to_string(), got.to_string(), field_rule(name))
    })
}

/// The model's `status` object fields for `hid`.
fn model_status(w: &World, hid: &str) -> Option<Vec<(&'static str, Value)>> {
    let h = w.s.handoffs.get(hid)?;
    let own = w.s.ownership.get(hid);
    let cps = w.s.checkpoints.get(hid).map_or(0, Vec::len);
    let result = h.delivery.as_ref().map_or(Value::Null, |d| serde_json::from_str(&d.result).unwrap_or(Value::Null));
    Some(vec![
        ("status", json!(h.status.as_str())),
        ("attempt", json!(h.attempt)),
        ("owner", own.map_or(Value::Null, |o| json!(o.holder))),
        ("fence", own.map_or(Value::Null, |o| json!(o.fence))),
        ("checkpoints", json!(cps)),
        ("steps", json!(h.steps)),
        ("spend_usd", json!(h.spend_micro)),
        ("result", result),
        ("acked", json!(h.delivery.as_ref().is_some_and(|d| d.acked))),
        ("error", json!(h.error.is_some())),
    ])
}

/// What the implementation reports, in the model's terms (spend in
/// micro-dollars, error as whether there is one).
fn got_field(st: &Value, name: &str) -> Value {
    match name {
        "spend_usd" => st[name].as_f64().map_or(Value::Null, |x| json!((x * 1e6).round() as i64)),
        "error" => json!(!st[name].is_null()),
        "acked" => json!(st[name].as_bool().unwrap_or(false)),
        _ => st[name].clone(),
    }
}

/// Every handoff (and every refused envelope) as the implementation and
/// its store show it, against the model.
pub fn observe(
    cx: &Ctx<'_>,
    m: &mut crate::client::Adapter,
    root: &str,
    w: &mut World,
    refused: &BTreeSet<String>,
    lag: Time,
) -> Check<Option<Divergence>> {
    // The store first, before any request: what an implementation
    // acknowledged must already be written, not flushed by the next call.
    if let Some(db) = cx.store(root)? {
        for (h, hid) in w.hids.iter().enumerate() {
            if let Some(d) = stored(&db, w, hid, h, lag)? {
                return Ok(Some(d));
            }
        }
    }
    // The leadership row: who holds it (its end is a time of the
    // implementation's clock, compared through the scans' effects).
    let row = m.leadership(root)?;
    let lead = row.as_ref().map(|l| l["holder"].clone());
    let want = w.s.leadership.as_ref().map(|l| json!(l.holder));
    if lead != want {
        let (want, got) = (json!(want).to_string(), json!(lead).to_string());
        return Ok(Some(Divergence::new(
            "leadership holder".into(),
            "leadership".into(),
            want,
            got,
            field_rule("leadership"),
        )));
    }
    // Its end. A leader may renew lazily (dhp-rs writes a new term only
    // once less than half of DHP_LEADER_TTL_S is left), so the stored end
    // may fall short of the model's by up to half a term; the model then
    // adopts it. A renewal not written when due is further off
    // (impl-defined: leader-renewal-time, PROTOCOL §17).
    if let (Some(l), Some(at)) = (w.s.leadership.as_mut(), row.as_ref().and_then(|r| r["expires_at"].as_f64())) {
        let got = ((at - w.origin) * 1000.0).round() as i64;
        let short = super::world::LEADER_TTL_MS / 2 + 300;
        // the longest step so far (the clock race) or this step's own length
        if got - l.expires_at < -short || got - l.expires_at > late(lag, 1000).max(1000 + w.step_ms.max(0)) {
            let (want, got) = (format!("{:.1} s", l.expires_at as f64 / 1e3), format!("{:.1} s", got as f64 / 1e3));
            let what = "leadership expires_at (from the sequence's start)".to_string();
            return Ok(Some(Divergence::new(what, "leadership term".into(), want, got, field_rule("leadership"))));
        }
        l.expires_at = got;
    }
    let all: BTreeSet<&String> = w.hids.iter().chain(refused).collect();
    for (i, hid) in all.iter().enumerate() {
        let h = w.hids.iter().position(|x| x == *hid).unwrap_or(w.hids.len() + i);
        let got = m.try_op("status", json!({"root": root, "hid": hid}))?;
        let Some(want) = model_status(w, hid) else {
            if let Ok(v) = got {
                let what = format!("h{h} exists");
                return Ok(Some(Divergence::new(
                    what,
                    "exists".into(),
                    "UnknownHandoff".into(),
                    v.to_string(),
                    field_rule("exists"),
                )));
            }
            continue;
        };
        let st = match got {
            Ok(v) => v,
            Err(e) => {
                let d = Divergence::new(
                    format!("h{h} status"),
                    "status".into(),
                    json!(want[0].1).to_string(),
                    format!("{} ({})", e.kind, e.message),
                    field_rule("status"),
                );
                return Ok(Some(d));
            }
        };
        for (name, v) in want {
            if let Some(d) = field(h, name, v, &got_field(&st, name)) {
                return Ok(Some(d));
            }
        }
        if cx.has(feature::APPROVALS) {
            if let Some(d) = approvals(m, root, w, hid, h)? {
                return Ok(Some(d));
            }
        }
    }
    Ok(None)
}

/// The ownership row and checkpoint rows, read by the runner itself.
fn stored(db: &crate::store_view::StoreView, w: &World, hid: &str, h: usize, lag: Time) -> Check<Option<Divergence>> {
    let own = db.ownership(hid)?.map(|o| json!([o.holder, o.fence]));
    let want = w.s.ownership.get(hid).map(|o| json!([o.holder, o.fence]));
    if let Some(d) = field(h, "store ownership", json!(want), &json!(own)) {
        return Ok(Some(d));
    }
    if let Some(d) = lease_end(db, w, hid, h, lag)? {
        return Ok(Some(d));
    }
    let rows: Vec<Value> = db.checkpoints(hid)?.into_iter().map(|c| json!([c.seq, c.state_hash])).collect();
    let want: Vec<Value> =
        w.s.checkpoints.get(hid).map_or(Vec::new(), |v| v.iter().map(|c| json!([c.seq, c.hash])).collect());
    Ok(field(h, "store checkpoints", json!(want), &json!(rows)))
}

/// Slack of a stored lease end against the model's: the step's own time
/// and a loaded machine.
const LEASE_SLACK_MS: i64 = 1500;

/// How much later than the model's an implementation's stamp (a lease
/// end, a term end) may be: the model stamps a step at its start, the
/// implementation when it handles the request, up to `lag` (the longest
/// step of the sequence so far, run.rs) later; at least `slack`. Under
/// load a racing claim of fresh processes took 2.3 s (seed 19) and a term
/// was stored 1.1 s after the model's (seed 1): both not divergences.
pub(super) fn late(lag: Time, slack: Time) -> Time {
    slack.max(lag + 300)
}

/// A live lease's stored end against the model's: claim, recover and
/// heartbeat set it from the row's own TTL (§5.5).
fn lease_end(
    db: &crate::store_view::StoreView,
    w: &World,
    hid: &str,
    h: usize,
    lag: Time,
) -> Check<Option<Divergence>> {
    let (Some(o), Some(m)) = (db.ownership(hid)?, w.s.ownership.get(hid)) else { return Ok(None) };
    if m.holder == dhp_model::state::ORPHANED {
        return Ok(None);
    }
    let got = ((o.lease_expires_at - w.origin) * 1000.0).round() as i64;
    let d = got - m.lease_expires_at;
    if d >= -LEASE_SLACK_MS && d <= late(lag, LEASE_SLACK_MS).max(LEASE_SLACK_MS + w.step_ms.max(0)) {
        return Ok(None);
    }
    let s = |t: i64| format!("{:.1} s", t as f64 / 1e3);
    let rule = "§5.5 claim, recover and heartbeat set lease_expires_at = now + the row's heartbeat_interval_s × max_missed [heartbeat-extends-lease]";
    Ok(Some(Divergence::new(
        format!("h{h} store lease_expires_at (from the sequence's start)"),
        "store lease_expires_at".into(),
        s(m.lease_expires_at),
        s(got),
        rule,
    )))
}

/// The handoff's approvals and their statuses.
fn approvals(m: &mut crate::client::Adapter, root: &str, w: &World, hid: &str, h: usize) -> Check<Option<Divergence>> {
    let v = m.op("approvals", json!({"root": root, "hid": hid}))?;
    let got: Vec<Value> = v["approvals"]
        .as_array()
        .map(|a| a.iter().map(|x| json!([x["approval_id"], x["status"]])).collect())
        .unwrap_or_default();
    let ids =
        w.hids.iter().position(|x| x == hid).and_then(|i| w.approvals.get(&(i as u8))).cloned().unwrap_or_default();
    let want: Vec<Value> = ids
        .iter()
        .filter_map(|id| w.s.approvals.get(id).map(|a| json!([id, format!("{:?}", a.status).to_lowercase()])))
        .collect();
    Ok(field(h, "approvals", json!(want), &json!(got)))
}
