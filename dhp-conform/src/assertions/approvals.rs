//! Approval gates: financial and destructive actions fail closed until an
//! approver decides; approve, deny and expiry are each honoured, and a
//! decision is final.

use super::{new_handoff, OWNED_OR_STATE};
use crate::check::{Check, Fail};
use crate::client::Adapter;
use crate::ops::Token;
use crate::suite::Ctx;
use crate::{ensure, ensure_eq};
use serde_json::{json, Value};

/// `(approval_id, action_class, status)` of every approval of `hid`.
fn approvals(m: &mut Adapter, root: &str, hid: &str) -> Check<Vec<(String, String, String)>> {
    let v = m.op("approvals", json!({"root": root, "hid": hid}))?;
    let list = v["approvals"].as_array().ok_or_else(|| Fail::Errored("approvals: no list".into()))?;
    Ok(list
        .iter()
        .map(|a| {
            let f = |k: &str| a[k].as_str().unwrap_or_default().to_string();
            (f("approval_id"), f("action_class"), f("status"))
        })
        .collect())
}

fn status_of(m: &mut Adapter, root: &str, hid: &str, id: &str) -> Check<String> {
    let all = approvals(m, root, hid)?;
    all.into_iter().find(|a| a.0 == id).map(|a| a.2).ok_or_else(|| Fail::failed(format!("approval {id} is not listed")))
}

/// Request a gated action: it must fail closed and leave exactly one new
/// pending approval of that class, whose id is returned.
fn gated(m: &mut Adapter, t: &Token, class: &str, timeout_s: f64) -> Check<String> {
    let before = approvals(m, &t.root, &t.hid)?;
    let args = t.with("action_class", json!(class));
    let mut args = args;
    args["details"] = json!({"amount_usd": 120.5, "to": "acct-7"});
    args["timeout_s"] = json!(timeout_s);
    m.must_fail("request_approval", args, &["ApprovalRequired"], &format!("a {class} action without approval"))?;
    let after = approvals(m, &t.root, &t.hid)?;
    let new: Vec<_> = after.iter().filter(|a| !before.iter().any(|b| b.0 == a.0)).collect();
    ensure!(new.len() == 1, "a refused {class} action must leave exactly one new approval, found {new:?}");
    ensure_eq!((new[0].1.as_str(), new[0].2.as_str()), (class, "pending"), "the new approval's class and status");
    Ok(new[0].0.clone())
}

fn decide(m: &mut Adapter, root: &str, id: &str, approved: bool) -> Check<bool> {
    let v = m.op("decide_approval", json!({"root": root, "approval_id": id, "approved": approved}))?;
    v["decided"].as_bool().ok_or_else(|| Fail::Errored(format!("decide_approval: no boolean `decided` in {v}")))
}

fn ungated(m: &mut Adapter, t: &Token, class: &str) -> Check {
    let mut args = t.with("action_class", json!(class));
    args["details"] = json!({});
    args["timeout_s"] = json!(300.0);
    m.op("request_approval", args).map(drop).map_err(|f| f.context(&format!("a {class} action needs no approval")))
}

/// approval-gates
pub fn approval_gates(cx: &Ctx<'_>) -> Check {
    let root = cx.root("store")?;
    let mut m = cx.adapter()?;
    m.open(&root)?;
    let hid = new_handoff(&mut m, &root, 1)?;
    let t = m.claim(&root, "w1", &hid)?;
    ungated(&mut m, &t, "read")?;
    ungated(&mut m, &t, "write")?;
    ensure_eq!(approvals(&mut m, &root, &hid)?, vec![], "approvals after read and write actions");

    // approve: the worker may go on; the decision is final
    let a1 = gated(&mut m, &t, "financial", 300.0)?;
    // its timeout runs from the request: 300 s from now, so a leader's
    // scan leaves it pending
    if let Some(db) = cx.store(&root)? {
        let (created, expires) =
            db.approval_term(&a1)?.ok_or_else(|| Fail::failed(format!("approval {a1} has no approvals row")))?;
        ensure!(
            (expires - created - 300.0).abs() < 1.0,
            "an approval requested with timeout_s 300 expires {:.3} s after it was created",
            expires - created
        );
    }
    m.scan(&root, "s1")?;
    ensure_eq!(status_of(&mut m, &root, &hid, &a1)?, "pending", "a 300 s approval after a leader's scan");
    ensure!(decide(&mut m, &root, &a1, true)?, "approving a pending approval must be recorded");
    m.op("await_approval", t.with("approval_id", json!(a1))).map_err(|f| f.context("await of an approved approval"))?;
    ensure!(!decide(&mut m, &root, &a1, false)?, "an approved approval was decided again (denied)");
    ensure_eq!(status_of(&mut m, &root, &hid, &a1)?, "approved", "status after a second decision");

    // deny: fail closed, final
    let a2 = gated(&mut m, &t, "destructive", 300.0)?;
    ensure!(decide(&mut m, &root, &a2, false)?, "denying a pending approval must be recorded");
    m.must_fail("await_approval", t.with("approval_id", json!(a2)), &["ApprovalDenied"], "await of a denied approval")?;
    ensure!(!decide(&mut m, &root, &a2, true)?, "a denied approval was decided again (approved)");
    ensure_eq!(status_of(&mut m, &root, &hid, &a2)?, "denied", "status after a second decision");

    // expiry while awaited: denied, and not decidable any more
    let a3 = gated(&mut m, &t, "financial", 0.3)?;
    if cx.controls_clock() {
        // most of its timeout passes at once; the last 0.1 s while awaited
        cx.wait(0.2);
    }
    m.must_fail(
        "await_approval",
        t.with("approval_id", json!(a3)),
        &["ApprovalDenied"],
        "await of an approval that expires undecided",
    )?;
    ensure_eq!(status_of(&mut m, &root, &hid, &a3)?, "expired", "status of an approval that timed out");
    ensure!(!decide(&mut m, &root, &a3, true)?, "an expired approval was approved");

    // expiry found by the supervisor's scan, with nobody awaiting
    let a4 = gated(&mut m, &t, "destructive", 0.2)?;
    cx.wait(0.4);
    m.scan(&root, "s1")?;
    ensure_eq!(
        status_of(&mut m, &root, &hid, &a4)?,
        "expired",
        "status after the leader's scan, past the approval's timeout"
    );
    ensure!(!decide(&mut m, &root, &a4, true)?, "an expired approval was approved");

    // only the owner may ask: a forged token creates nothing
    let n = approvals(&mut m, &root, &hid)?.len();
    let mut forged = t.as_worker("intruder", t.fence).with("action_class", json!("financial"));
    forged["details"] = json!({});
    forged["timeout_s"] = json!(300.0);
    m.must_fail("request_approval", forged, OWNED_OR_STATE, "an approval request with another worker's token")?;
    ensure_eq!(approvals(&mut m, &root, &hid)?.len(), n, "approvals after a refused request");
    ensure!(!decide(&mut m, &root, "apr-000000000000", true)?, "deciding an approval that does not exist");
    let _: Value = m.status(&root, &hid)?;
    Ok(())
}

/// approval-class-validated: an action class the protocol does not know
/// is refused, not waved through as if it were harmless.
pub fn approval_class_validated(cx: &Ctx<'_>) -> Check {
    let root = cx.root("store")?;
    let mut m = cx.adapter()?;
    m.open(&root)?;
    let hid = new_handoff(&mut m, &root, 1)?;
    let t = m.claim(&root, "w1", &hid)?;
    for class in ["teleport", "Financial", ""] {
        let mut bad = t.with("action_class", json!(class));
        bad["details"] = json!({});
        bad["timeout_s"] = json!(300.0);
        m.must_fail("request_approval", bad, &["ValidationError"], &format!("the unknown action class {class:?}"))?;
    }
    ensure_eq!(approvals(&mut m, &root, &hid)?, vec![], "approvals after refused requests");
    Ok(())
}
