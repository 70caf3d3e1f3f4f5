//! After a ship step: the log's bytes against the wire format, then an
//! ingest of it (as written, tampered, or torn) on a fresh root and what
//! that root holds. After a resume: the resumed handoff against the
//! model's resume of the bundle. All read by the runner itself.

use super::compare::Divergence;
use super::run_extra::{path, Io};
use super::world::World;
use crate::check::{Check, Fail};
use dhp_model::ops;
use dhp_model::state::State;
use serde_json::{json, Value};

const WIRE: &str = "§8.1 a transport log is json.dumps(obj, sort_keys=True) lines: the envelope, then one verified line per checkpoint [transport]";
const INGEST: &str = "§8.3 ingest verifies the envelope and every checkpoint line (TamperError), skips torn lines, and the handoff arrives pending with its checkpoints [transport] [tampered-log-rejected] [tampered-checkpoint-rejected] [truncated-log-line-tolerated]";
const RESUME: &str = "§10 a resumed handoff is pending, attempt + 1, with the bundle's usage and checkpoints [suspend-resume-round-trip]";

fn div(what: &str, want: String, got: String, rule: &str) -> Option<Divergence> {
    Some(Divergence { step: 0, what: what.into(), key: what.into(), want, got, rule: rule.into(), timing: false })
}

/// The state shipped as checkpoint `seq` of `h`.
fn shipped_state(h: u8, seq: usize) -> Value {
    json!({"h": h, "shipped": seq, "city": "Zürich"})
}

/// `lines` written back with line `i` changed by `f` (sorted keys, as
/// Python writes a log line).
fn edited(lines: &[String], i: usize, f: impl FnOnce(&mut Value)) -> Check<String> {
    let mut out: Vec<String> = lines.to_vec();
    let mut v: Value = serde_json::from_str(&out[i]).map_err(|e| Fail::failed(format!("log line: {e}")))?;
    f(&mut v);
    out[i] = dhp_oracle::json::sorted(&v).map_err(|e| Fail::Errored(e.to_string()))?;
    Ok(out.join("\n") + "\n")
}

/// `h` was shipped to `<name>-log-<i>.log`; ship its checkpoints, check
/// the log, ingest it (`how`) on a fresh root.
pub fn shipped(io: &mut Io<'_, '_>, w: &World, h: u8, how: u8) -> Check<Option<Divergence>> {
    let log = path(io, "log") + ".log";
    let hid = w.hid(h).to_string();
    let k = w.checkpoint_count(h);
    for seq in 0..k {
        let r = io.m.try_op("ship_checkpoint", json!({"log": log, "seq": seq, "state": shipped_state(h, seq)}))?;
        if let Err(e) = r {
            return Ok(div("reply of ship_checkpoint", "ok".into(), format!("{} ({})", e.kind, e.message), WIRE));
        }
    }
    match crate::assertions::core::check_log_format(&log, &hid, k as i64) {
        Err(Fail::Failed(why)) => return Ok(div("transport log", "the wire format".into(), why, WIRE)),
        Err(f) => return Err(f),
        Ok(()) => {}
    }
    let text = std::fs::read_to_string(&log).map_err(|e| Fail::Errored(format!("{log}: {e}")))?;
    let lines: Vec<String> = text.lines().map(String::from).collect();
    let how = if how == 2 && k == 0 { 0 } else { how };
    let (bytes, tampered) = match how {
        1 => (edited(&lines, 0, |v| v["envelope"]["task"]["inputs"]["inline"]["n"] = json!(999))?, true),
        2 => (edited(&lines, 1, |v| v["state"] = json!({"s": 100}))?, true),
        3 => {
            let last = lines.last().cloned().unwrap_or_default();
            (format!("{text}{}", &last[..last.len() / 2]), false)
        }
        _ => (text.clone(), false),
    };
    let copy = path(io, "ingest") + ".log";
    std::fs::write(&copy, bytes).map_err(|e| Fail::Errored(format!("{copy}: {e}")))?;
    let fresh = io.cx.root(&format!("{}-ingested-{}", io.name, io.i))?;
    io.m.open(&fresh)?;
    let got = io.m.try_op("ingest", json!({"root": fresh, "log": copy}))?;
    let show = |g: Result<&Value, &crate::client::ErrorReply>| match g {
        Ok(v) => format!("ok {v}"),
        Err(e) => format!("{} ({})", e.kind, e.message),
    };
    if tampered {
        if !matches!(&got, Err(e) if e.kind == "TamperError") {
            return Ok(div("reply of ingest (tampered log)", "TamperError".into(), show(got.as_ref()), INGEST));
        }
        // nothing at or past the tampered line (the first checkpoint's)
        let limit = 0;
        return match io.m.try_op("status", json!({"root": fresh, "hid": hid}))? {
            Ok(st) if how == 1 || st["checkpoints"].as_i64().unwrap_or(99) > limit => Ok(div(
                "handoff after a refused ingest",
                format!("at most {limit} checkpoints"),
                st.to_string(),
                INGEST,
            )),
            _ => Ok(None),
        };
    }
    let skipped = if how == 3 { 1 } else { 0 };
    let want = json!({"handoff_id": hid, "checkpoints_ingested": k, "lines_skipped": skipped});
    let summary = got.as_ref().map(|v| {
        json!({"handoff_id": v["handoff_id"], "checkpoints_ingested": v["checkpoints_ingested"],
               "lines_skipped": v["lines_skipped"]})
    });
    if summary.as_ref().ok() != Some(&want) {
        return Ok(div("reply of ingest", want.to_string(), show(summary.as_ref().map_err(|e| *e)), INGEST));
    }
    let st = io.m.try_op("status", json!({"root": fresh, "hid": hid}))?;
    let got = st.as_ref().map(|v| json!([v["status"], v["checkpoints"]]));
    let want = json!(["pending", k]);
    if got.as_ref().ok() != Some(&want) {
        return Ok(div(
            "ingested handoff [status, checkpoints]",
            want.to_string(),
            show(got.as_ref().map_err(|e| *e)),
            INGEST,
        ));
    }
    Ok(None)
}

/// The bundle of `h` resumed on the world's side root: its status there
/// against the model's resume of the bundle on an empty store. Other
/// `execution` members and the checkpoints' `at` are the implementation's
/// (impl-defined: resume-execution-members, impl-defined:
/// resumed-checkpoint-at, PROTOCOL §17).
pub fn resumed(io: &mut Io<'_, '_>, w: &World, h: u8) -> Check<Option<Divergence>> {
    let (Some(b), Some(root)) = (w.bundles.get(&h), w.side_root.clone()) else { return Ok(None) };
    let hid = w.hid(h).to_string();
    let mut fresh = State::default();
    if ops::resume(&mut fresh, &hid, &b.handoff).is_err() {
        return Ok(None);
    }
    let Some(m) = fresh.handoffs.get(&hid) else { return Ok(None) };
    let want = json!({"status": m.status.as_str(), "attempt": m.attempt, "steps": m.steps,
                      "spend_usd": m.spend_micro, "checkpoints": b.checkpoints.len()});
    let got = match io.m.try_op("status", json!({"root": root, "hid": hid}))? {
        Ok(st) => json!({"status": st["status"], "attempt": st["attempt"], "steps": st["steps"],
                         "spend_usd": st["spend_usd"].as_f64().map(|x| (x * 1e6).round() as i64),
                         "checkpoints": st["checkpoints"]}),
        Err(e) => json!(format!("{} ({})", e.kind, e.message)),
    };
    if got != want {
        return Ok(div("resumed handoff", want.to_string(), got.to_string(), RESUME));
    }
    Ok(None)
}
