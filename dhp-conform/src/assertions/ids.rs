//! The edges of the id rules of docs/PROTOCOL.md §1.2 that a pattern
//! check gets wrong: an id followed by a newline (a regex anchored with
//! `$` matches before a trailing `\n`), and the worker ids reserved for the
//! protocol's own holders (`__orphaned__`) or confusable with paths
//! (dots only).

use super::new_handoff;
use crate::check::Check;
use crate::client::Adapter;
use crate::suite::Ctx;
use crate::{ensure, ensure_json};
use serde_json::json;

/// The handoff is still pending with no owner, and (standard store) has no
/// ownership row.
fn untouched(cx: &Ctx<'_>, m: &mut Adapter, root: &str, hid: &str, rule: &str) -> Check {
    let st = m.status(root, hid)?;
    ensure_json!(
        json!([st["status"], st["owner"]]),
        json!(["pending", null]),
        "{rule}: [status, owner] after refused claims"
    );
    if let Some(db) = cx.store(root)? {
        let o = db.ownership(hid)?;
        ensure!(
            o.is_none(),
            "{rule}: after refused claims the store holds an ownership row for the handoff (holder {}), want none",
            json!(o.map(|o| o.holder))
        );
    }
    Ok(())
}

/// trailing-newline-ids-refused (§1.2): an id is refused with
/// ValidationError when a newline follows it.
pub fn trailing_newline_ids_refused(cx: &Ctx<'_>) -> Check {
    const RULE: &str = "§1.2 (a handoff id is exactly 64 characters of [0-9a-f], a worker or supervisor id 1–128 of [A-Za-z0-9_.-], nothing after them)";
    let root = cx.root("store")?;
    let mut m = cx.adapter()?;
    m.open(&root)?;
    let hid = new_handoff(&mut m, &root, 1)?;
    let nl = format!("{hid}\n");
    for (op, args) in [
        ("claim", json!({"root": root, "worker": "w1", "hid": nl})),
        ("status", json!({"root": root, "hid": nl})),
        ("ack", json!({"root": root, "hid": nl})),
    ] {
        m.must_fail(op, args, &["ValidationError"], &format!("{RULE}: {op} of handoff id {}", json!(nl)))?;
    }
    m.must_fail(
        "claim",
        json!({"root": root, "worker": "w1\n", "hid": hid}),
        &["ValidationError"],
        &format!("{RULE}: claim by worker id {}", json!("w1\n")),
    )?;
    m.must_fail(
        "scan",
        json!({"root": root, "supervisor": "s1\n"}),
        &["ValidationError"],
        &format!("{RULE}: scan by supervisor id {}", json!("s1\n")),
    )?;
    untouched(cx, &mut m, &root, &hid, RULE)
}

/// reserved-worker-ids-refused (§1.2, dhp-rs): `__name__` ids and ids made
/// only of dots are refused with ValidationError; ids that merely contain
/// them work.
pub fn reserved_worker_ids_refused(cx: &Ctx<'_>) -> Check {
    const RULE: &str = "§1.2 (a worker or supervisor id that starts and ends with \"__\", such as the tombstone holder \"__orphaned__\", or is made only of dots, is reserved and refused)";
    let root = cx.root("store")?;
    let mut m = cx.adapter()?;
    m.open(&root)?;
    let hid = new_handoff(&mut m, &root, 1)?;
    for bad in ["__orphaned__", "__w__", "___", ".", "..", "..."] {
        m.must_fail(
            "claim",
            json!({"root": root, "worker": bad, "hid": hid}),
            &["ValidationError"],
            &format!("{RULE}: claim by worker id {}", json!(bad)),
        )?;
    }
    for bad in ["__orphaned__", ".."] {
        m.must_fail(
            "scan",
            json!({"root": root, "supervisor": bad}),
            &["ValidationError"],
            &format!("{RULE}: scan by supervisor id {}", json!(bad)),
        )?;
    }
    untouched(cx, &mut m, &root, &hid, RULE)?;
    for (n, good) in ["__w", "w__", ".w", "w..", "_"].into_iter().enumerate() {
        let h = new_handoff(&mut m, &root, 10 + n as i64)?;
        let t = m
            .claim(&root, good, &h)
            .map_err(|f| f.context(&format!("{RULE}: claim by worker id {} (not reserved)", json!(good))))?;
        m.checkpoint(&t, json!({"s": 1}))
            .map_err(|f| f.context(&format!("{RULE}: checkpoint by worker id {} (not reserved)", json!(good))))?;
    }
    Ok(())
}
