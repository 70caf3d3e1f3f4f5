//! The `malformed-ids-rejected` assertion.

use crate::assertions::new_handoff;
use crate::check::Check;
use crate::suite::Ctx;
use crate::{ensure, ensure_eq};
use serde_json::json;

/// Malformed handoff, worker and supervisor ids are refused with
/// ValidationError before anything is touched.
pub fn malformed_ids_rejected(cx: &Ctx<'_>) -> Check {
    let root = cx.root("store")?;
    let mut m = cx.adapter()?;
    m.open(&root)?;
    let hid = new_handoff(&mut m, &root, 1)?;
    let bad_hids = [
        hid.to_uppercase(),
        format!("{hid}0"),
        hid[..63].to_string(),
        format!("{}g", &hid[..63]),
        String::new(),
        "../../etc/passwd".into(),
        "' OR '1'='1".into(),
    ];
    for bad in &bad_hids {
        m.must_fail(
            "claim",
            json!({"root": root, "worker": "w1", "hid": bad}),
            &["ValidationError"],
            &format!("claim of handoff id {bad:?}"),
        )?;
    }
    let bad_workers =
        [String::new(), "bad id".into(), "w/../x".into(), "w".repeat(129), "w\n1".into(), "wörker".into()];
    for bad in &bad_workers {
        m.must_fail(
            "claim",
            json!({"root": root, "worker": bad, "hid": hid}),
            &["ValidationError"],
            &format!("claim by worker id {bad:?}"),
        )?;
    }
    m.must_fail(
        "scan",
        json!({"root": root, "supervisor": "s 1"}),
        &["ValidationError"],
        "scan by supervisor id \"s 1\"",
    )?;
    let st = m.status(&root, &hid)?;
    ensure_eq!(st["status"], json!("pending"), "status after refused claims");
    ensure!(st["owner"].is_null(), "owner after refused claims: {}", st["owner"]);
    if let Some(db) = cx.store(&root)? {
        ensure!(db.ownership(&hid)?.is_none(), "an ownership row appeared after refused claims");
        ensure_eq!(db.handoff_count()?, 1, "handoffs rows");
    }
    // the edges of the rule are ids like any other: 128 characters, and
    // underscores at one end only
    for good in ["w".repeat(128), "__w".into(), "w__".into()] {
        let h = new_handoff(&mut m, &root, 2 + good.len() as i64)?;
        let t = m.claim(&root, &good, &h).map_err(|f| f.context(&format!("claim by worker id {good:?}")))?;
        m.checkpoint(&t, json!({"s": 1})).map_err(|f| f.context(&format!("checkpoint by worker id {good:?}")))?;
    }
    Ok(())
}
