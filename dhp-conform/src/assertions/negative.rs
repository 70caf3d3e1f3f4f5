//! Negative paths: operations in the wrong state, and arguments no
//! implementation may accept. Each is refused with the kind the reference
//! uses, and changes nothing.

use super::{new_handoff, OWNED_OR_STATE};
use crate::check::Check;
use crate::suite::Ctx;
use crate::{ensure, ensure_eq};
use serde_json::json;

/// The fields of `status` that any refused operation must leave alone.
fn snapshot(m: &mut crate::client::Adapter, root: &str, hid: &str) -> Check<serde_json::Value> {
    let st = m.status(root, hid)?;
    Ok(json!([
        st["status"],
        st["owner"],
        st["fence"],
        st["checkpoints"],
        st["attempt"],
        st["steps"],
        st["spend_usd"],
        st["result"]
    ]))
}

/// wrong-state-operations
pub fn wrong_state_operations(cx: &Ctx<'_>) -> Check {
    let root = cx.root("store")?;
    let mut m = cx.adapter()?;
    m.open(&root)?;
    let hid = new_handoff(&mut m, &root, 1)?;
    // recover is for orphans only
    m.must_fail(
        "recover",
        json!({"root": root, "worker": "w9", "hid": hid}),
        &["StateError"],
        "recover of a pending handoff",
    )?;
    ensure_eq!(m.status(&root, &hid)?["status"], json!("pending"), "status after a refused recover");
    let t = m.claim(&root, "w1", &hid)?;
    m.checkpoint(&t, json!({"s": 1}))?;
    let before = snapshot(&mut m, &root, &hid)?;
    m.must_fail(
        "claim",
        json!({"root": root, "worker": "w2", "hid": hid}),
        OWNED_OR_STATE,
        "claim of a running handoff",
    )?;
    m.must_fail(
        "recover",
        json!({"root": root, "worker": "w2", "hid": hid}),
        &["StateError", "OwnershipLost"],
        "recover of a running handoff",
    )?;
    let other = t.as_worker("w2", t.fence);
    m.must_fail(
        "release",
        other.with("reason", json!("not mine")),
        &["FencingError", "OwnershipLost"],
        "release by a non-owner",
    )?;
    m.must_fail(
        "complete",
        other.with("result", json!({"x": 9})),
        &["FencingError", "OwnershipLost"],
        "complete by a non-owner",
    )?;
    m.must_fail(
        "checkpoint",
        other.with("state", json!({"s": 9})),
        &["FencingError", "OwnershipLost"],
        "checkpoint by a non-owner",
    )?;
    m.must_fail("ack", json!({"root": root, "hid": hid}), &["StateError"], "ack before complete")?;
    ensure_eq!(snapshot(&mut m, &root, &hid)?, before, "status after refused operations on a running handoff");
    m.complete(&t, json!({"x": 1}))?;
    let done = snapshot(&mut m, &root, &hid)?;
    m.must_fail(
        "claim",
        json!({"root": root, "worker": "w2", "hid": hid}),
        OWNED_OR_STATE,
        "claim of a completed handoff",
    )?;
    m.must_fail(
        "recover",
        json!({"root": root, "worker": "w2", "hid": hid}),
        &["StateError", "OwnershipLost"],
        "recover of a completed handoff",
    )?;
    m.must_refuse("checkpoint", t.with("state", json!({"s": 2})), "checkpoint after complete")?;
    ensure_eq!(snapshot(&mut m, &root, &hid)?, done, "status after refused operations on a completed handoff");
    let ghost = "0".repeat(64);
    for op in ["claim", "recover"] {
        m.must_fail(
            op,
            json!({"root": root, "worker": "w1", "hid": ghost}),
            &["UnknownHandoff"],
            &format!("{op} of a handoff that does not exist"),
        )?;
    }
    m.must_fail(
        "status",
        json!({"root": root, "hid": ghost}),
        &["UnknownHandoff"],
        "status of a handoff that does not exist",
    )?;
    Ok(())
}

/// invalid-arguments
pub fn invalid_arguments(cx: &Ctx<'_>) -> Check {
    let root = cx.root("store")?;
    let mut m = cx.adapter()?;
    m.open(&root)?;
    let hid = new_handoff(&mut m, &root, 1)?;
    let t = m.claim(&root, "w1", &hid)?;
    let before = snapshot(&mut m, &root, &hid)?;
    m.must_fail(
        "note_spend",
        t.with("usd", json!(-5.0)),
        &["ValidationError"],
        "§6.4 (negative spend is ValidationError): note_spend of -5.0",
    )?;
    for bad in [json!([1, 2]), json!("state"), json!(7), json!(null)] {
        m.must_fail(
            "checkpoint",
            t.with("state", bad.clone()),
            &["ValidationError"],
            &format!("checkpoint state {bad} (not an object)"),
        )?;
    }
    ensure_eq!(snapshot(&mut m, &root, &hid)?, before, "status after refused arguments");
    ensure!(m.last_checkpoint(&root, &hid)?.is_none(), "a refused checkpoint was stored");
    Ok(())
}

/// negative-steps-refused: a step count below zero would hand budget back.
pub fn negative_steps_refused(cx: &Ctx<'_>) -> Check {
    let root = cx.root("store")?;
    let mut m = cx.adapter()?;
    m.open(&root)?;
    let hid = new_handoff(&mut m, &root, 1)?;
    let t = m.claim(&root, "w1", &hid)?;
    m.note_step(&t, 2)?;
    m.note_step(&t, 0).map_err(|f| f.context("note_step of 0 steps (not negative)"))?;
    m.must_fail("note_step", t.with("n", json!(-1)), &["ValidationError"], "a negative step count")?;
    ensure_eq!(m.status(&root, &hid)?["steps"], json!(2), "steps after a refused negative count");
    Ok(())
}

/// budget-kinds: spend and wall-clock budgets bind like the step budget —
/// the worker is told, the supervisor fails the work closed — and a spend
/// exactly at the limit is still within it.
pub fn budget_kinds(cx: &Ctx<'_>) -> Check {
    use super::{new_handoff_with, spec_with};
    use crate::ops::action_for;
    let root = cx.root("store")?;
    let mut m = cx.adapter()?;
    m.open(&root)?;
    let budget = json!({"max_steps": 100, "max_spend_usd": 1.0, "max_wallclock_s": 600.0, "max_attempts": 3});
    let spend = new_handoff_with(&mut m, &root, spec_with(1, json!({"budget": budget})))?;
    let mut short = budget.clone();
    short["max_wallclock_s"] = json!(0.5);
    let wall = new_handoff_with(&mut m, &root, spec_with(2, json!({"budget": short})))?;
    let at_limit = new_handoff_with(&mut m, &root, spec_with(3, json!({"budget": budget})))?;
    // a handoff whose wall clock runs out while nothing is written to it:
    // a leader's later pass must find it from the claim alone
    let mut two = budget.clone();
    two["max_wallclock_s"] = json!(2.0);
    let idle = new_handoff_with(&mut m, &root, spec_with(4, json!({"budget": two})))?;
    m.claim(&root, "w4", &idle)?;
    let c0 = cx.now();
    for _ in 0..2 {
        let acts = m.scan(&root, "s1")?;
        ensure!(action_for(&acts, &idle).is_none(), "scan acted on a handoff 2 s within its wall clock: {acts:?}");
    }
    let ts = m.claim(&root, "w1", &spend)?;
    let tw = m.claim(&root, "w2", &wall)?;
    let tl = m.claim(&root, "w3", &at_limit)?;
    m.must_fail("note_spend", ts.with("usd", json!(2.0)), &["BudgetExceeded"], "spend over max_spend_usd")?;
    m.op("note_spend", tl.with("usd", json!(1.0))).map_err(|f| f.context("spend exactly at max_spend_usd"))?;
    cx.wait(0.8);
    m.must_fail(
        "note_step",
        tw.with("n", json!(1)),
        &["BudgetExceeded"],
        "a step 0.8 s after the claim, past max_wallclock_s 0.5 s",
    )?;
    cx.wait_until(c0 + 2.6);
    let acts = m.scan(&root, "s1")?;
    ensure_eq!(action_for(&acts, &spend), Some("budget-killed"), "scan action on spend over budget (actions {acts:?})");
    ensure_eq!(
        action_for(&acts, &wall),
        Some("budget-killed"),
        "scan action on wall clock over budget (actions {acts:?})"
    );
    ensure!(action_for(&acts, &at_limit).is_none(), "scan acted on a handoff exactly at its spend limit: {acts:?}");
    ensure_eq!(
        action_for(&acts, &idle),
        Some("budget-killed"),
        "scan action on a handoff 0.6 s past its 2 s wall clock, written nothing since its claim (actions {acts:?})"
    );
    for (hid, what) in [(&spend, "spend"), (&wall, "wallclock"), (&idle, "wallclock")] {
        let st = m.status(&root, hid)?;
        ensure_eq!(st["status"], json!("failed"), "status after a {what} budget kill");
        ensure!(
            st["error"].as_str().is_some_and(|e| e.contains(what)),
            "the error should name the {what} budget: {}",
            st["error"]
        );
    }
    ensure_eq!(m.status(&root, &at_limit)?["status"], json!("running"), "status of the handoff at its limit");
    Ok(())
}
