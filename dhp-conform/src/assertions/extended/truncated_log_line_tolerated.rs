//! The `truncated-log-line-tolerated` assertion.

use super::helpers::{edit_line, log_lines, opened, shipped_log, write};
use crate::check::{Check, Fail};
use crate::client::Adapter;
use crate::ensure_eq;
use crate::suite::Ctx;
use serde_json::json;

/// A crash leaves a garbage line and a truncated last line: both are
/// skipped and counted, everything valid is ingested.
pub fn truncated_log_line_tolerated(cx: &Ctx<'_>) -> Check {
    let (mut m, [ra, rb, rc]) = opened(cx, ["a", "b", "c"])?;
    let log = cx.path("t.log");
    let hid = shipped_log(&mut m, &ra, &log, 4)?;
    let lines = log_lines(&log)?;
    let cut = &lines[4][..lines[4].len() / 2];
    let text = format!("{}\n{}\n{}\n@@@ not json\n{}\n{cut}", lines[0], lines[1], lines[2], lines[3]);
    let crashed = cx.path("crashed.log");
    write(&crashed, text.as_bytes())?;
    let out = m.ingest(&rb, &crashed)?;
    ensure_eq!(out["handoff_id"], json!(hid), "ingested handoff_id");
    ensure_eq!(out["checkpoints_ingested"], json!(3), "checkpoints_ingested");
    ensure_eq!(out["lines_skipped"], json!(2), "lines_skipped (one garbage line, one truncated line)");
    ensure_eq!(m.last_checkpoint(&rb, &hid)?, Some(json!({"s": 2})), "last checkpoint");
    ensure_eq!(m.status(&rb, &hid)?["status"], json!("pending"), "status after ingest");
    if let Some(db) = cx.store(&rb)? {
        ensure_eq!(db.verified_states(&hid)?.len(), 3, "checkpoint rows");
    }
    unusable_records_skipped(cx, &mut m, &rc, &hid, &lines)
}

/// The other records §8.3 skips and counts: a checkpoint before the
/// header, an unknown type, a state that is not an object, a seq that is
/// not a non-negative integer, a line that is too long. Each edited line keeps a state that matches
/// its state_hash, so only the rule under test can refuse it.
fn unusable_records_skipped(cx: &Ctx<'_>, m: &mut Adapter, root: &str, hid: &str, lines: &[String]) -> Check {
    // DHP_TRANSPORT_MAX_LINE_BYTES bounds a line's bytes without its
    // newline (and the blanks around it): exactly the limit is read
    let padded = |line: &str, bytes: usize| -> Check<String> {
        let base = edit_line(line, |v| v["pad"] = json!(""))?.len();
        let n = bytes
            .checked_sub(base)
            .ok_or_else(|| Fail::Errored(format!("a {base}-byte line cannot be padded to {bytes}")))?;
        edit_line(line, |v| v["pad"] = json!("x".repeat(n)))
    };
    let text = [
        lines[1].clone(), // seq 0, before the header
        lines[0].clone(),
        lines[1].clone(),
        r#"{"seq": 1, "type": "mystery"}"#.to_string(),
        edit_line(&lines[2], |v| v["state"] = json!([1]))?,
        edit_line(&lines[2], |v| v["seq"] = json!(-1))?,
        edit_line(&lines[2], |v| v["seq"] = json!("1"))?,
        // seq 1 again, one byte past DHP_TRANSPORT_MAX_LINE_BYTES (256 KiB)
        padded(&lines[2], 262_145)?,
        lines[2].clone(),
        // seq 2, exactly DHP_TRANSPORT_MAX_LINE_BYTES long
        padded(&lines[3], 262_144)?,
    ]
    .join("\n");
    let path = cx.path("records.log");
    write(&path, format!("{text}\n").as_bytes())?;
    let out = m.ingest(root, &path)?;
    ensure_eq!(out["handoff_id"], json!(hid), "ingested handoff_id");
    ensure_eq!(
        out["checkpoints_ingested"],
        json!(3),
        "checkpoints_ingested (seq 0, 1, and 2 exactly at the line limit)"
    );
    ensure_eq!(
        out["lines_skipped"],
        json!(6),
        "lines_skipped (a checkpoint before the header, an unknown type, a list state, seq -1, seq \"1\", a line over \
         DHP_TRANSPORT_MAX_LINE_BYTES)"
    );
    ensure_eq!(m.last_checkpoint(root, hid)?, Some(json!({"s": 2})), "last checkpoint");
    if let Some(db) = cx.store(root)? {
        ensure_eq!(db.verified_states(hid)?.len(), 3, "checkpoint rows");
    }
    Ok(())
}
