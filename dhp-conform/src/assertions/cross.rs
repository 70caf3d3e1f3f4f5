//! Cross-implementation level: implementation A writes a store, a
//! transport log or a bundle; implementation B continues it to completion.

use super::core::check_log_format;
use super::new_handoff;
use crate::check::Check;
use crate::suite::{CrossAssertion, CrossCtx};
use crate::{ensure, ensure_eq};
use serde_json::json;

/// The cross-implementation assertions, as [`crate::catalogue::DESCRIPTORS`]
/// declares them.
pub fn all() -> Vec<CrossAssertion> {
    crate::catalogue::DESCRIPTORS
        .iter()
        .filter_map(|d| match d.run {
            crate::catalogue::Run::Cross { shares_store, run } => {
                Some(CrossAssertion { name: d.id, shares_store, needs: d.needs, about: d.rule, run })
            }
            crate::catalogue::Run::One(_) => None,
        })
        .collect()
}

pub(crate) fn cross_store(cx: &CrossCtx<'_>) -> Check {
    let root = cx.root("shared")?;
    let mut a = cx.a()?;
    let mut b = cx.b()?;
    a.open(&root)?;
    let hid = new_handoff(&mut a, &root, 1)?;
    let t = a.claim(&root, "w1", &hid)?;
    a.checkpoint(&t, json!({"s": 1}))?;
    a.checkpoint(&t, json!({"s": 2}))?;

    b.open(&root)?;
    let st = b.status(&root, &hid)?;
    ensure_eq!(
        (st["status"].clone(), st["owner"].clone(), st["checkpoints"].clone()),
        (json!("running"), json!("w1"), json!(2)),
        "B's view of A's running handoff"
    );
    b.orphan_via_scan(&t, "sb")?;
    let t2 = b.recover(&root, "w2", &hid)?;
    ensure_eq!(b.last_checkpoint(&root, &hid)?, Some(json!({"s": 2})), "B's last checkpoint");
    ensure_eq!(b.checkpoint(&t2, json!({"s": 3}))?, 2, "B's checkpoint seq");
    a.must_fail(
        "checkpoint",
        t.with("state", json!({"s": 99})),
        &["FencingError"],
        "A's stale token after B recovered",
    )?;
    b.complete(&t2, json!({"x": 3}))?;
    let st = a.status(&root, &hid)?;
    ensure_eq!(
        (st["status"].clone(), st["result"].clone()),
        (json!("completed"), json!({"x": 3})),
        "A's view of B's completion"
    );
    a.ack(&root, &hid)?;
    ensure_eq!(b.status(&root, &hid)?["acked"], json!(true), "B's view of A's ack");
    if let Some(db) = cx.store(&root)? {
        let states: Vec<_> = db.verified_states(&hid)?.into_iter().map(|(_, s)| s).collect();
        ensure_eq!(states, vec![json!({"s": 1}), json!({"s": 2}), json!({"s": 3})], "checkpoint rows written by both");
    }
    Ok(())
}

pub(crate) fn cross_log(cx: &CrossCtx<'_>) -> Check {
    let (ra, rb) = (cx.root("a")?, cx.root_b("b")?);
    let log = cx.path("t.log");
    let mut a = cx.a()?;
    let mut b = cx.b()?;
    a.open(&ra)?;
    b.open(&rb)?;
    let hid = new_handoff(&mut a, &ra, 1)?;
    let t = a.claim(&ra, "w1", &hid)?;
    a.ship_envelope(&ra, &hid, &log)?;
    for i in 0..2 {
        let seq = a.checkpoint(&t, json!({"s": i}))?;
        a.ship_checkpoint(&log, seq, json!({"s": i}))?;
    }
    check_log_format(&log, &hid, 2).map_err(|f| f.context("A's log"))?;
    let out = b.ingest(&rb, &log)?;
    ensure_eq!(out["handoff_id"], json!(hid), "B's ingest of A's log");
    ensure_eq!(out["checkpoints_ingested"], json!(2), "checkpoints B ingested");
    b.ingest(&rb, &log)?;
    ensure_eq!(b.last_checkpoint(&rb, &hid)?, Some(json!({"s": 1})), "B's last checkpoint");
    let t2 = b.claim(&rb, "w2", &hid)?;
    ensure_eq!(b.checkpoint(&t2, json!({"s": 2}))?, 2, "B's next checkpoint seq");
    b.complete(&t2, json!({"x": 2}))?;
    ensure_eq!(b.status(&rb, &hid)?["status"], json!("completed"), "status on B");
    Ok(())
}

pub(crate) fn cross_bundle(cx: &CrossCtx<'_>) -> Check {
    let (ra, rb) = (cx.root("a")?, cx.root_b("b")?);
    let bundle = cx.path("h.bundle");
    let mut a = cx.a()?;
    let mut b = cx.b()?;
    a.open(&ra)?;
    b.open(&rb)?;
    let hid = new_handoff(&mut a, &ra, 1)?;
    let t = a.claim(&ra, "w1", &hid)?;
    a.checkpoint(&t, json!({"s": 1}))?;
    a.suspend(&ra, &hid, &bundle)?;
    ensure!(std::path::Path::new(&bundle).exists(), "A's suspend wrote no bundle");
    ensure_eq!(b.resume(&rb, &bundle)?, hid, "hid B resumed");
    ensure_eq!(b.last_checkpoint(&rb, &hid)?, Some(json!({"s": 1})), "B's last checkpoint");
    let st = b.status(&rb, &hid)?;
    ensure_eq!((st["status"].clone(), st["attempt"].clone()), (json!("pending"), json!(1)), "B's status after resume");
    let t2 = b.claim(&rb, "w2", &hid)?;
    b.complete(&t2, json!({"x": 1}))?;
    ensure_eq!(b.status(&rb, &hid)?["status"], json!("completed"), "status on B");
    Ok(())
}
