//! The `tampered-log-rejected` assertion.

use super::helpers::{opened, shipped_log, tampered_copy, untouched};
use crate::check::Check;
use crate::ensure_eq;
use crate::suite::Ctx;
use serde_json::json;

/// A log whose envelope does not match its id is refused; nothing is created.
pub fn tampered_log_rejected(cx: &Ctx<'_>) -> Check {
    let (mut m, [ra, rb, rc]) = opened(cx, ["a", "b", "c"])?;
    let log = cx.path("t.log");
    let hid = shipped_log(&mut m, &ra, &log, 2)?;
    let bad = tampered_copy(cx, &log, 0, |v| v["envelope"]["task"]["inputs"]["inline"]["n"] = json!(999))?;
    m.must_fail(
        "ingest",
        json!({"root": rb, "log": bad}),
        &["TamperError"],
        "ingest of a log whose envelope was changed",
    )?;
    untouched(cx, &mut m, &rb, &hid, "a refused log")?;
    let out = m.ingest(&rc, &log)?;
    ensure_eq!(out["handoff_id"], json!(hid), "ingest of the untampered log");
    Ok(())
}
