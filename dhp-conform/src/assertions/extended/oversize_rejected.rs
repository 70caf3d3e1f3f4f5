//! The `oversize-rejected` assertion.

use super::helpers::{effect, write};
use crate::assertions::{new_handoff, padded_to, spec_with};
use crate::check::{Check, Fail};
use crate::client::Adapter;
use crate::suite::Ctx;
use crate::{ensure, ensure_eq};
use serde_json::json;

/// Checkpoints, results and envelopes over the DHP_MAX_* limits are
/// refused with OversizePayload and change nothing.
pub fn oversize_rejected(cx: &Ctx<'_>) -> Check {
    let root = cx.root("store")?;
    let mut m = cx.adapter()?;
    m.open(&root)?;
    let hid = new_handoff(&mut m, &root, 1)?;
    let t = m.claim(&root, "w1", &hid)?;
    m.must_fail(
        "checkpoint",
        t.with("state", json!({"blob": "x".repeat(70_000)})),
        &["OversizePayload"],
        "a 70 kB checkpoint (limit 64 KiB)",
    )?;
    ensure_eq!(m.checkpoint(&t, json!({"blob": "x".repeat(1000)}))?, 0, "seq of a small checkpoint after the refusal");
    // a limit bounds `size > limit`: exactly at it is within it
    ensure_eq!(
        m.checkpoint(&t, padded_to(json!({"blob": 1}), 65_536)?)?,
        1,
        "seq of a checkpoint whose sorted text is exactly DHP_MAX_CHECKPOINT_BYTES (65536)"
    );
    m.must_fail(
        "complete",
        t.with("result", json!({"x": 1, "pad": "y".repeat(70_000)})),
        &["OversizePayload"],
        "a 70 kB result (limit 64 KiB)",
    )?;
    let st = m.status(&root, &hid)?;
    ensure_eq!(st["status"], json!("running"), "status after an oversize result");
    ensure_eq!(st["checkpoints"], json!(2), "checkpoints after an oversize checkpoint");
    let big = m.build(spec_with(2, json!({"inputs": {"inline": {"n": 2, "pad": "z".repeat(300_000)}}})))?;
    let big_hid = big["handoff_id"].as_str().unwrap_or_default().to_string();
    m.must_fail(
        "dispatch",
        json!({"root": root, "envelope": big}),
        &["OversizePayload"],
        "a 300 kB envelope (limit 256 KiB)",
    )?;
    m.must_fail(
        "status",
        json!({"root": root, "hid": big_hid}),
        &["UnknownHandoff"],
        "the oversize envelope after dispatch",
    )?;
    if let Some(db) = cx.store(&root)? {
        ensure_eq!(db.verified_states(&hid)?.len(), 2, "checkpoint rows");
        ensure_eq!(db.handoff_count()?, 1, "handoffs rows");
    }
    // a bundle is bounded like an envelope: five 60 kB checkpoints make one
    // of about 300 kB, which suspend must refuse rather than write
    let big_hid = new_handoff(&mut m, &root, 3)?;
    let bt = m.claim(&root, "w1", &big_hid)?;
    for i in 0..5 {
        m.checkpoint(&bt, json!({"blob": "b".repeat(60_000), "i": i}))?;
    }
    let path = cx.path("oversize.bundle");
    m.must_fail(
        "suspend",
        json!({"root": root, "hid": big_hid, "path": path}),
        &["OversizePayload"],
        "suspend into a 300 kB bundle (limit 256 KiB)",
    )?;
    ensure!(!std::path::Path::new(&path).exists(), "a refused suspend left a bundle at {path}");
    m.complete(&t, padded_to(json!({"x": 1}), 65_536)?)
        .map_err(|f| f.context("complete with a result whose sorted text is exactly DHP_MAX_RESULT_BYTES (65536)"))?;
    ensure_eq!(m.status(&root, &hid)?["status"], json!("completed"), "status after a result exactly at the limit");
    bundle_limit(cx, &mut m, &root)?;
    if cx.has(crate::protocol::feature::EFFECTS) {
        effect_limit(&mut m, &root)?;
    }
    crate::assertions::shipping::line_limit(cx)
}

/// An effect result is bounded like a checkpoint (DHP_MAX_CHECKPOINT_BYTES,
/// `size > limit`): exactly at the limit it is recorded, one byte over not.
fn effect_limit(m: &mut Adapter, root: &str) -> Check {
    let h2 = new_handoff(m, root, 5)?;
    let t3 = m.claim(root, "w3", &h2)?;
    let r = effect(m, &t3, "record_effect", "big-1", Some(padded_to(json!({"id": 1}), 65_536)?))?;
    ensure_eq!(r["recorded"], json!(true), "record_effect of a result exactly DHP_MAX_CHECKPOINT_BYTES (65536) long");
    let mut over = t3.with("step_id", json!("big-2"));
    over["result"] = padded_to(json!({"id": 2}), 65_537)?;
    m.must_fail("record_effect", over, &["OversizePayload"], "record_effect of a result one byte over the limit")?;
    ensure_eq!(
        effect(m, &t3, "effect_done", "big-2", None)?["done"],
        json!(false),
        "effect_done of the refused oversize effect"
    );
    Ok(())
}

/// Resume applies the envelope limit to the bundle's bytes: a bundle of
/// exactly DHP_MAX_ENVELOPE_BYTES (262144) is resumed, one byte more is
/// refused with OversizePayload and imports nothing. The sizes are made
/// by a `"pad"` member at the top of a real bundle, which resume ignores.
fn bundle_limit(cx: &Ctx<'_>, m: &mut Adapter, root: &str) -> Check {
    const LIMIT: usize = 262_144;
    let hid = new_handoff(m, root, 4)?;
    let t = m.claim(root, "w1", &hid)?;
    m.checkpoint(&t, json!({"s": 1}))?;
    let small = cx.path("small.bundle");
    m.suspend(root, &hid, &small)?;
    let text = std::fs::read_to_string(&small).map_err(|e| Fail::failed(format!("{small}: {e}")))?;
    let body =
        text.trim_start().strip_prefix('{').ok_or_else(|| Fail::failed(format!("{small} is not a JSON object")))?;
    let sized = |bytes: usize| -> Check<String> {
        let around = "{\"pad\": \"\", ".len() + body.len();
        let n = bytes.checked_sub(around).ok_or_else(|| Fail::failed(format!("a {around}-byte bundle")))?;
        Ok(format!("{{\"pad\": \"{}\", {body}", "x".repeat(n)))
    };
    let (at, over) = (cx.path("at-limit.bundle"), cx.path("over-limit.bundle"));
    write(&at, sized(LIMIT)?.as_bytes())?;
    write(&over, sized(LIMIT + 1)?.as_bytes())?;
    let (r1, r2) = (cx.root("resumed")?, cx.root("refused")?);
    m.open(&r1)?;
    m.open(&r2)?;
    ensure_eq!(
        m.resume(&r1, &at).map_err(|f| f.context("resume of a bundle of exactly DHP_MAX_ENVELOPE_BYTES (262144)"))?,
        hid,
        "hid after resuming a bundle at the limit"
    );
    m.must_fail("resume", json!({"root": r2, "path": over}), &["OversizePayload"], "resume of a 262145-byte bundle")?;
    m.must_fail("status", json!({"root": r2, "hid": hid}), &["UnknownHandoff"], "the handoff of a refused bundle")?;
    Ok(())
}
