//! The `supervisor-budget-kill` assertion.

use crate::assertions::{new_handoff_with, spec_with};
use crate::check::Check;
use crate::ops::action_for;
use crate::suite::Ctx;
use crate::{ensure, ensure_eq};
use serde_json::json;

/// The supervisor fails an over-budget handoff closed and fences its
/// worker out, leaving work within budget alone.
pub fn supervisor_budget_kill(cx: &Ctx<'_>) -> Check {
    let root = cx.root("store")?;
    let mut m = cx.adapter()?;
    m.open(&root)?;
    let budget = json!({"max_steps": 2, "max_spend_usd": 1.0, "max_wallclock_s": 600.0, "max_attempts": 3});
    let hid = new_handoff_with(&mut m, &root, spec_with(1, json!({"budget": budget})))?;
    let ok_hid = new_handoff_with(&mut m, &root, spec_with(2, json!({"budget": budget})))?;
    let t = m.claim(&root, "w1", &hid)?;
    let t_ok = m.claim(&root, "w2", &ok_hid)?;
    m.note_step(&t_ok, 1)?;
    // a pass before the overrun: the overrun must be found by a leader's
    // later pass too, not only by its first
    let acts = m.scan(&root, "s1")?;
    ensure!(
        action_for(&acts, &hid).is_none() && action_for(&acts, &ok_hid).is_none(),
        "scan acted on handoffs within budget: {acts:?}"
    );
    // The worker is told (BudgetExceeded) — judged by no-silent-budget-overrun; here
    // only the supervisor's side counts.
    let _ = m.try_op("note_step", t.with("n", json!(3)))?;
    let acts = m.scan(&root, "s1")?;
    ensure_eq!(
        action_for(&acts, &hid),
        Some("budget-killed"),
        "scan action on an over-budget handoff (actions {acts:?})"
    );
    ensure!(action_for(&acts, &ok_hid).is_none(), "scan acted on a handoff within budget: {acts:?}");
    let st = m.status(&root, &hid)?;
    ensure_eq!(st["status"], json!("failed"), "status after the budget kill");
    ensure!(
        st["error"].as_str().is_some_and(|e| e.contains("budget")),
        "error should name the budget: {}",
        st["error"]
    );
    ensure!(st["owner"].is_null(), "a budget-killed handoff keeps no owner: {}", st["owner"]);
    m.must_refuse("checkpoint", t.with("state", json!({"s": 1})), "checkpoint by the budget-killed worker")?;
    ensure_eq!(m.status(&root, &ok_hid)?["status"], json!("running"), "status of the handoff within budget");
    if let Some(db) = cx.store(&root)? {
        ensure_eq!(db.status(&hid)?, "failed", "stored status");
        ensure!(db.ownership(&hid)?.is_none(), "ownership row of a budget-killed handoff");
    }
    Ok(())
}
