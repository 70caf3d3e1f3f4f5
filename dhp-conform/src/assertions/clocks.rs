//! Supervisor clocks the runner moves itself in the standard store: a
//! leader's term near its end, a stall clock that ran out. Moving the
//! stored time instead of waiting keeps the defaults (a 5 s term, a 120 s
//! stall timeout) and the suite fast.

use super::new_handoff;
use crate::check::{Check, Fail};
use crate::ops::action_for;
use crate::suite::Ctx;
use crate::{ensure, ensure_eq};
use serde_json::json;

/// leader-renews-term: a leader that asks again while its term is live
/// but near its end stays leader and gets a new term; a live term keeps
/// every other supervisor out.
pub fn leader_renews_term(cx: &Ctx<'_>) -> Check {
    let root = cx.root("store")?;
    let mut m = cx.adapter()?;
    m.open(&root)?;
    let db = cx.store(&root)?.ok_or_else(|| Fail::Skipped("needs standard-store".into()))?;
    ensure!(m.ensure_leadership(&root, "s1")?, "s1 must take an absent leadership");
    // a term with 0.5 s left: live, but past any renew-ahead point
    let near = cx.now() + 0.5;
    ensure_eq!(db.set_leadership_expiry(near)?, 1, "leadership rows moved");
    ensure!(
        m.ensure_leadership(&root, "s1")?,
        "a leader whose term has 0.5 s left must stay leader when it asks again"
    );
    let (holder, renewed) =
        db.leadership()?.ok_or_else(|| Fail::failed("no leadership row after the leader asked again"))?;
    ensure_eq!(holder.as_str(), "s1", "leadership holder after the renewal");
    ensure!(
        renewed > near + 0.5,
        "the leader's term must be renewed: it ends at {renewed:.3}, {:.3} s from now (before: {near:.3})",
        renewed - cx.now()
    );
    // a new term of the leader TTL (5 s by default), not a longer one
    ensure!(
        renewed <= cx.now() + 6.0,
        "the renewed term ends {:.3} s from now: longer than a leader TTL (5 s)",
        renewed - cx.now()
    );
    ensure!(!m.ensure_leadership(&root, "s2")?, "s2 must not take a live term from s1");
    Ok(())
}

/// stall-by-age: a running handoff whose lease is live but whose last
/// checkpoint is older than stall_timeout_s (120 s by default) is orphaned
/// as stalled; one that checkpointed just now is left alone.
pub fn stall_by_age(cx: &Ctx<'_>) -> Check {
    let root = cx.root("store")?;
    let mut m = cx.adapter()?;
    m.open(&root)?;
    let db = cx.store(&root)?.ok_or_else(|| Fail::Skipped("needs standard-store".into()))?;
    let (old, fresh) = (new_handoff(&mut m, &root, 1)?, new_handoff(&mut m, &root, 2)?);
    let soon = new_handoff(&mut m, &root, 3)?;
    let (t_old, t_fresh) = (m.claim(&root, "w1", &old)?, m.claim(&root, "w2", &fresh)?);
    let t_soon = m.claim(&root, "w3", &soon)?;
    // claimed before the first scan, first checkpoint after it
    let late = new_handoff(&mut m, &root, 4)?;
    let t_late = m.claim(&root, "w4", &late)?;
    m.checkpoint(&t_old, json!({"k": 1}))?;
    m.checkpoint(&t_fresh, json!({"k": 1}))?;
    m.checkpoint(&t_soon, json!({"k": 1}))?;
    ensure_eq!(db.set_last_checkpoint_at(&old, cx.now() - 200.0)?, 1, "progress rows dated back");
    let acts = m.scan(&root, "s1")?;
    ensure_eq!(
        action_for(&acts, &old),
        Some("orphaned"),
        "§7.4 (the stall clock is progress.last_checkpoint_at, not the checkpoint row's at): the runner set the handoff's progress.last_checkpoint_at to now - 200 s (its checkpoint row's at left as written); scan action on it with stall_timeout_s 120 s (actions {})",
        serde_json::Value::from(acts.clone())
    );
    ensure!(action_for(&acts, &fresh).is_none(), "scan acted on a handoff that checkpointed just now: {acts:?}");
    ensure!(action_for(&acts, &soon).is_none(), "scan acted on a handoff that checkpointed just now: {acts:?}");
    ensure!(action_for(&acts, &late).is_none(), "scan acted on a handoff claimed just now: {acts:?}");
    // a first checkpoint after that pass, on a claim that is old news:
    // the next pass must see it, and that it is 200 s old
    ensure_eq!(db.backdate_stamps(&late, 60.0)?, 2, "handoffs and ownership rows backdated");
    m.checkpoint(&t_late, json!({"k": 1}))?;
    ensure_eq!(db.set_last_checkpoint_at(&late, cx.now() - 200.0)?, 1, "progress rows dated back");
    // a stall clock that runs out between two passes of one leader, with
    // nothing written in between: the later pass must find it too
    let dated = cx.now();
    ensure_eq!(db.set_last_checkpoint_at(&soon, dated - 118.0)?, 1, "progress rows dated back");
    m.heartbeat(&t_soon)?;
    // heartbeats are not progress (§7.4) but keep the fresh one's lease: a
    // slow run (a loaded machine) must not see it orphaned for its lease
    m.heartbeat(&t_fresh)?;
    let acts = m.scan(&root, "s1")?;
    ensure!(
        action_for(&acts, &soon).is_none(),
        "scan acted on a handoff whose last checkpoint is 118 s old (stall_timeout_s 120 s): {acts:?}"
    );
    ensure_eq!(
        action_for(&acts, &late),
        Some("orphaned"),
        "§7.4: the runner dated the handoff's claim stamps 60 s back and, after its first checkpoint (made since the last pass), its progress.last_checkpoint_at to now - 200 s; scan action on it (actions {})",
        serde_json::Value::from(acts.clone())
    );
    cx.wait_until(dated + 3.0);
    m.heartbeat(&t_fresh)?;
    let acts = m.scan(&root, "s1")?;
    ensure_eq!(
        action_for(&acts, &soon),
        Some("orphaned"),
        "§7.4: the runner set the handoff's progress.last_checkpoint_at to 118 s before the previous pass, 3 s ago; scan action on it now, 121 s after (actions {})",
        serde_json::Value::from(acts.clone())
    );
    let st = m.status(&root, &old)?;
    ensure_eq!(st["status"], json!("orphaned"), "status of the stalled handoff");
    if !st["orphan_reason"].is_null() {
        ensure_eq!(st["orphan_reason"], json!("stalled"), "orphan_reason");
    }
    ensure_eq!(m.status(&root, &fresh)?["status"], json!("running"), "status of the handoff that checkpointed");
    Ok(())
}
