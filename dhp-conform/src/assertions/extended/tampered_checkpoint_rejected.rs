//! The `tampered-checkpoint-rejected` assertion.

use super::helpers::{opened, shipped_log, tampered_copy};
use crate::check::{Check, Fail};
use crate::ensure;
use crate::suite::Ctx;
use serde_json::json;

/// A checkpoint line whose state does not match its hash is refused, and
/// nothing at or after it is ingested.
pub fn tampered_checkpoint_rejected(cx: &Ctx<'_>) -> Check {
    let (mut m, [ra, rb]) = opened(cx, ["a", "b"])?;
    let log = cx.path("t.log");
    let hid = shipped_log(&mut m, &ra, &log, 3)?;
    let bad = tampered_copy(cx, &log, 2, |v| v["state"] = json!({"s": 100}))?;
    m.must_fail(
        "ingest",
        json!({"root": rb, "log": bad}),
        &["TamperError"],
        "ingest of a log with a tampered checkpoint",
    )?;
    match m.try_op("status", json!({"root": rb, "hid": hid}))? {
        Err(e) if e.kind == "UnknownHandoff" => {}
        Err(e) => return Err(Fail::failed(format!("status after a refused ingest: {e}"))),
        Ok(st) => {
            ensure!(
                st["checkpoints"].as_i64().unwrap_or(99) <= 1,
                "checkpoints past the tampered line were ingested: {st}"
            );
            let last = m.last_checkpoint(&rb, &hid)?;
            ensure!(
                last.is_none() || last == Some(json!({"s": 0})),
                "last checkpoint after a refused ingest: {last:?}"
            );
        }
    }
    if let Some(db) = cx.store(&rb)? {
        let rows = db.verified_states(&hid)?;
        ensure!(rows.iter().all(|(seq, _)| *seq < 1), "rows at or past the tampered seq 1 were stored: {rows:?}");
    }
    Ok(())
}
