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
    // a checkpoint shipped to a log that does not exist yet creates it
    let fresh = format!("{dir}/fresh.log");
    m.ship_checkpoint(&fresh, seq, json!({"s": 1})).map_err(|f| f.context("ship_checkpoint to a new log"))?;
    let text = std::fs::read_to_string(&fresh).map_err(|e| Fail::failed(format!("{fresh} after an ok ship: {e}")))?;
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()
        .map_err(|e| Fail::failed(format!("{fresh}: a line is not JSON: {e}")))?;
    ensure!(
        lines.len() == 1 && lines[0]["type"] == "checkpoint" && lines[0]["seq"] == json!(seq),
        "{fresh} after one ship_checkpoint holds {lines:?}"
    );
    // and so does one shipped to a log that exists and is empty
    let empty = format!("{dir}/empty.log");
    std::fs::write(&empty, b"")?;
    m.ship_checkpoint(&empty, seq, json!({"s": 1})).map_err(|f| f.context("ship_checkpoint to an empty log"))?;
    let text = std::fs::read_to_string(&empty).map_err(|e| Fail::failed(format!("{empty} after an ok ship: {e}")))?;
    ensure!(text.lines().count() == 1 && text.ends_with('\n'), "{empty} after one ship_checkpoint holds {text:?}");
    let mut names: Vec<String> =
        std::fs::read_dir(&dir)?.filter_map(|d| d.ok()).map(|d| d.file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    ensure!(
        names == ["empty.log", "fresh.log", "ok.log"],
        "the log directory holds {names:?}, want only empty.log, fresh.log and ok.log"
    );
    Ok(())
}

/// The line limit (`DHP_TRANSPORT_MAX_LINE_BYTES`, the short-lines
/// profile's 4096 bytes) counts a shipped line with its newline: a
/// checkpoint line of 4095 bytes ships, one of 4096 is refused with
/// OversizePayload and leaves the log as it was. A header already in the
/// log is left alone, even once the handoff's envelope has outgrown the
/// limit (first writer wins). Part of oversize-rejected.
pub fn line_limit(cx: &crate::suite::Ctx<'_>) -> Check {
    const LIMIT: usize = 4096;
    let root = cx.root("lines")?;
    let dir = cx.path("line-logs");
    std::fs::create_dir_all(&dir)?;
    let mut m = cx.adapter_with(crate::client::Profile::ShortLines)?;
    m.open(&root)?;
    let hid = new_handoff(&mut m, &root, 1)?;
    let t = m.claim(&root, "w1", &hid)?;
    let seq = m.checkpoint(&t, json!({"s": 1}))?;
    let log = format!("{dir}/lines.log");
    m.ship_envelope(&root, &hid, &log)?;
    let last_len = |log: &str| -> Check<usize> {
        let text = std::fs::read_to_string(log).map_err(|e| Fail::failed(format!("{log}: {e}")))?;
        Ok(text.lines().last().map_or(0, str::len))
    };
    // a probe line gives the bytes around the padding (`at` is a
    // microsecond time, the same width on every line of this run)
    m.ship_checkpoint(&log, seq, json!({"pad": ""}))?;
    let around = last_len(&log)?;
    let fits =
        (LIMIT - 1).checked_sub(around).ok_or_else(|| Fail::failed(format!("a {around}-byte checkpoint line")))?;
    m.ship_checkpoint(&log, seq, json!({"pad": "x".repeat(fits)}))
        .map_err(|f| f.context("ship_checkpoint of a line of 4095 bytes (4096 with its newline, the limit)"))?;
    ensure!(last_len(&log)? == LIMIT - 1, "the line shipped to fit the limit is {} bytes, want 4095", last_len(&log)?);
    let before = std::fs::read(&log)?;
    m.must_fail(
        "ship_checkpoint",
        json!({"log": log, "seq": seq, "state": {"pad": "x".repeat(fits + 1)}}),
        &["OversizePayload"],
        "ship_checkpoint of a line of 4096 bytes (4097 with its newline)",
    )?;
    ensure!(std::fs::read(&log)? == before, "a refused ship_checkpoint changed the log");
    // the envelope outgrows the limit; its header is in the log already
    m.complete(&t, json!({"x": 1, "pad": "r".repeat(2 * LIMIT)}))?;
    m.ship_envelope(&root, &hid, &log)
        .map_err(|f| f.context("ship_envelope again once the envelope is over the line limit"))?;
    ensure!(std::fs::read(&log)? == before, "shipping the header again changed the log");
    Ok(())
}
