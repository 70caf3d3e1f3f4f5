//! The `fast-death-detection` assertion. It runs only for an adapter that
//! declares the feature: a runtime without a kernel-released lock declares
//! none and is judged on lease expiry alone (impl-defined:
//! liveness-without-flock, PROTOCOL §17).

use super::helpers::lease_expiry;
use crate::assertions::new_handoff;
use crate::check::{Check, Fail};
use crate::ops::action_for;
use crate::suite::Ctx;
use crate::{ensure, ensure_eq};
use serde_json::json;
use std::time::{Duration, Instant};

/// How long the supervisor may take to orphan a SIGKILLed worker's
/// handoff (the lease is 6 s).
pub const FAST_DEATH_LIMIT: Duration = Duration::from_millis(1500);

/// A worker process holding a handoff is SIGKILLed; the supervisor orphans
/// it in well under the lease time, and a standby recovers and completes it.
pub fn fast_death_detection(cx: &Ctx<'_>) -> Check {
    let root = cx.root("store")?;
    let mut m = cx.adapter()?;
    m.open(&root)?;
    let hid = new_handoff(&mut m, &root, 1)?;
    let mut w = cx.fresh()?;
    w.open(&root)?;
    w.op("liveness_publish", json!({"root": root, "worker": "w1"}))?;
    let t = w.claim(&root, "w1", &hid)?;
    let expiry = lease_expiry(&mut m, &root, &hid)?;
    let acts = m.scan(&root, "s1")?;
    ensure!(action_for(&acts, &hid).is_none(), "a live worker's handoff was orphaned: {acts:?}");
    w.kill();
    drop(w);
    let killed = Instant::now();
    let lease_left = expiry - cx.now();
    loop {
        let acts = m.scan(&root, "s1")?;
        match action_for(&acts, &hid) {
            Some("orphaned") => break,
            None => {}
            Some(other) => {
                return Err(Fail::failed(format!("scan after the kill: action {other:?}, want \"orphaned\"")))
            }
        }
        if killed.elapsed() > FAST_DEATH_LIMIT {
            return Err(Fail::failed(format!(
                "the SIGKILLed worker's handoff was not orphaned within {:.1} s (its lease had {lease_left:.1} s left)",
                FAST_DEATH_LIMIT.as_secs_f64()
            )));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let took = killed.elapsed().as_secs_f64();
    ensure!(took < lease_left, "orphaned after {took:.2} s, not before the lease ran out ({lease_left:.2} s)");
    ensure_eq!(m.status(&root, &hid)?["status"], json!("orphaned"), "status after the kill");
    let t2 = m.recover(&root, "w2", &hid)?;
    ensure!(t2.fence > t.fence, "recover must bump the fence");
    m.complete(&t2, json!({"x": 1}))?;
    // a worker restarted under the dead one's id, publishing no token,
    // is alive: its live lease keeps its handoff
    let h2 = new_handoff(&mut m, &root, 2)?;
    m.claim(&root, "w1", &h2)?;
    let acts = m.scan(&root, "s1")?;
    ensure!(
        action_for(&acts, &h2).is_none(),
        "a handoff claimed under the dead worker's id (live lease, no token) was acted on: {acts:?}"
    );
    Ok(())
}
