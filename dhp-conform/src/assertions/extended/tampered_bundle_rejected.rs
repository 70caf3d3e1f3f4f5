//! The `tampered-bundle-rejected` assertion.

use super::helpers::{untouched, write};
use crate::assertions::new_handoff;
use crate::check::{Check, Fail};
use crate::ensure_eq;
use crate::suite::Ctx;
use serde_json::{json, Value};

fn parse_file(path: &str) -> Check<Value> {
    let bytes = std::fs::read(path).map_err(|e| Fail::failed(format!("{path}: {e}")))?;
    serde_json::from_slice(&bytes).map_err(|e| Fail::failed(format!("{path} is not JSON: {e}")))
}

fn canonical(v: &Value) -> Check<Vec<u8>> {
    dhp_oracle::json::canonical(v).map(String::into_bytes).map_err(|e| Fail::Errored(e.to_string()))
}

/// A bundle whose envelope or checkpoint hash was tampered with is refused
/// and changes nothing; the untampered bundle resumes.
pub fn tampered_bundle_rejected(cx: &Ctx<'_>) -> Check {
    let (ra, rb, rc, rd) = (cx.root("a")?, cx.root("b")?, cx.root("c")?, cx.root("d")?);
    let mut m = cx.adapter()?;
    for r in [&ra, &rb, &rc, &rd] {
        m.open(r)?;
    }
    let hid = new_handoff(&mut m, &ra, 1)?;
    let t = m.claim(&ra, "w1", &hid)?;
    m.checkpoint(&t, json!({"s": 1}))?;
    let good = cx.path("good.bundle");
    m.suspend(&ra, &hid, &good)?;
    let doc = parse_file(&good)?;

    let mut inputs = doc.clone();
    inputs["envelope"]["task"]["inputs"]["inline"]["n"] = json!(999);
    let p1 = cx.path("inputs.bundle");
    write(&p1, &canonical(&inputs)?)?;
    m.must_fail("resume", json!({"root": rb, "path": p1}), &["TamperError"], "resume of a bundle with changed inputs")?;
    untouched(cx, &mut m, &rb, &hid, "a refused bundle")?;

    let mut forged = doc.clone();
    match forged["checkpoints"].as_array_mut() {
        Some(list) => list.push(json!({"seq": 7, "state": {"s": 2}, "state_hash": "0".repeat(64)})),
        None => return Err(Fail::failed(format!("bundle has no checkpoints list: {doc}"))),
    }
    let p2 = cx.path("forged.bundle");
    write(&p2, &canonical(&forged)?)?;
    m.must_fail(
        "resume",
        json!({"root": rc, "path": p2}),
        &["TamperError"],
        "resume of a bundle with a forged checkpoint hash",
    )?;
    untouched(cx, &mut m, &rc, &hid, "a refused bundle")?;

    ensure_eq!(m.resume(&rd, &good)?, hid, "hid of the untampered bundle");
    Ok(())
}
