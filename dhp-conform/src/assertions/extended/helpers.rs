//! Helpers shared by several extended assertions: leases, files, shipped
//! logs and their tampered copies, pooled adapters, effects.

use crate::assertions::new_handoff;
use crate::check::{Check, Fail};
use crate::client::{Adapter, Lease};
use crate::ensure_eq;
use crate::ops::Token;
use crate::suite::Ctx;
use serde_json::{json, Value};

pub(super) fn lease_expiry(m: &mut Adapter, root: &str, hid: &str) -> Check<f64> {
    let own = m.ownership(root, hid)?.ok_or_else(|| Fail::failed("no ownership for a claimed handoff"))?;
    own["lease_expires_at"].as_f64().ok_or_else(|| Fail::Errored(format!("ownership without lease_expires_at: {own}")))
}

pub(super) fn write(path: &str, bytes: &[u8]) -> Check {
    std::fs::write(path, bytes).map_err(|e| Fail::Errored(format!("writing {path}: {e}")))
}

/// Nothing of `hid` reached `root`.
pub(super) fn untouched(cx: &Ctx<'_>, m: &mut Adapter, root: &str, hid: &str, what: &str) -> Check {
    m.must_fail(
        "status",
        json!({"root": root, "hid": hid}),
        &["UnknownHandoff"],
        &format!("the handoff after {what}"),
    )?;
    if let Some(db) = cx.store(root)? {
        ensure_eq!(db.handoff_count()?, 0, "handoffs rows after {what}");
    }
    Ok(())
}

/// Ship a handoff with `n` checkpoints (`{"s": i}`) from `root` to `log`.
pub(super) fn shipped_log(m: &mut Adapter, root: &str, log: &str, n: i64) -> Check<String> {
    let hid = new_handoff(m, root, 1)?;
    let t = m.claim(root, "w1", &hid)?;
    m.ship_envelope(root, &hid, log)?;
    for i in 0..n {
        let seq = m.checkpoint(&t, json!({"s": i}))?;
        m.ship_checkpoint(log, seq, json!({"s": i}))?;
    }
    Ok(hid)
}

pub(super) fn log_lines(log: &str) -> Check<Vec<String>> {
    let text = std::fs::read_to_string(log).map_err(|e| Fail::failed(format!("{log}: {e}")))?;
    Ok(text.lines().map(String::from).collect())
}

/// Rewrite one log line's JSON with `f`, as Python would have written it.
pub(super) fn edit_line(line: &str, f: impl FnOnce(&mut Value)) -> Check<String> {
    let mut v: Value = serde_json::from_str(line).map_err(|e| Fail::failed(format!("log line is not JSON: {e}")))?;
    f(&mut v);
    dhp_oracle::json::sorted(&v).map_err(|e| Fail::Errored(e.to_string()))
}

/// A copy of `log` (as `tampered.log`) with line `i` rewritten by `f`.
pub(super) fn tampered_copy(cx: &Ctx<'_>, log: &str, i: usize, f: impl FnOnce(&mut Value)) -> Check<String> {
    let mut lines = log_lines(log)?;
    lines[i] = edit_line(&lines[i], f)?;
    let bad = cx.path("tampered.log");
    write(&bad, (lines.join("\n") + "\n").as_bytes())?;
    Ok(bad)
}

/// A pooled adapter with the store roots `names` created and opened.
pub(super) fn opened<'a, const N: usize>(cx: &Ctx<'a>, names: [&str; N]) -> Check<(Lease<'a>, [String; N])> {
    let mut m = cx.adapter()?;
    let mut roots = Vec::with_capacity(N);
    for n in names {
        let r = cx.root(n)?;
        m.open(&r)?;
        roots.push(r);
    }
    Ok((m, roots.try_into().expect("one root per name")))
}

pub(super) fn effect(m: &mut Adapter, t: &Token, op: &str, step: &str, result: Option<Value>) -> Check<Value> {
    let mut args = t.with("step_id", json!(step));
    if let Some(r) = result {
        args["result"] = r;
    }
    m.op(op, args)
}
