//! A ship that could not write its line must say so: `ship_envelope` and
//! `ship_checkpoint` answer ok only when the line is in the log (or, for
//! the header, an earlier writer's header is: first writer wins).
//!
//! The log the runner names cannot be created: its file name is longer than
//! any Linux or macOS file system allows (NAME_MAX 255 bytes), in a
//! directory that exists. Permissions would be the obvious way, but they
//! do not bind the root user a CI runner often is; an overlong name fails
//! for everyone (ENAMETOOLONG), and only at the file's creation, after the
//! directory was made.

use super::new_handoff;
use crate::check::{Check, Fail};
use crate::ensure;
use serde_json::json;

/// Bytes of the uncreatable log's file name (over NAME_MAX, 255).
const OVERLONG: usize = 300;

/// ship-failure-reported
pub fn ship_failure_reported(cx: &crate::suite::Ctx<'_>) -> Check {
    let root = cx.root("store")?;
    let dir = cx.path("logs");
    std::fs::create_dir_all(&dir)?;
    let mut m = cx.adapter()?;
    m.open(&root)?;
    let hid = new_handoff(&mut m, &root, 1)?;
    let t = m.claim(&root, "w1", &hid)?;
    let seq = m.checkpoint(&t, json!({"s": 1}))?;

    let bad = format!("{dir}/{}.log", "x".repeat(OVERLONG));
    let e = m.must_refuse(
        "ship_envelope",
        json!({"root": root, "hid": hid, "log": bad}),
        "ship_envelope to a log that cannot be created (its name is over 255 bytes)",
    )?;
    ensure!(
        e.kind != "BadRequest",
        "ship_envelope to an uncreatable log: the adapter called the request malformed: {e}"
    );
    m.must_refuse(
        "ship_checkpoint",
        json!({"log": bad, "seq": seq, "state": {"s": 1}}),
        "ship_checkpoint to a log that cannot be created (its name is over 255 bytes)",
    )?;

    // The same calls succeed where the log can be written (the refusals
    // above were about the path, not the handoff).
    let good = format!("{dir}/ok.log");
    m.ship_envelope(&root, &hid, &good)?;
    m.ship_checkpoint(&good, seq, json!({"s": 1}))?;
    let text = std::fs::read_to_string(&good).map_err(|e| Fail::failed(format!("{good} after an ok ship: {e}")))?;
    let kinds: Vec<String> = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).map(|v| v["type"].as_str().unwrap_or("").to_string()))
        .collect::<Result<_, _>>()
        .map_err(|e| Fail::failed(format!("{good}: a line is not JSON: {e}")))?;
    ensure!(kinds == ["envelope", "checkpoint"], "{good} after shipping a header and one checkpoint holds {kinds:?}");
    let names: Vec<String> =
        std::fs::read_dir(&dir)?.filter_map(|d| d.ok()).map(|d| d.file_name().to_string_lossy().into_owned()).collect();
    ensure!(names == ["ok.log"], "the log directory holds {names:?}, want only ok.log");
    Ok(())
}
