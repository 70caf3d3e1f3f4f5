//! result: each completed result equals the census recomputed from scratch.

use crate::check::ctx::Ctx;
use crate::check::findings::Findings;
use crate::check::{census, opt, short};
use serde_json::Value;

pub(super) fn check(cx: &Ctx<'_>) -> Findings {
    let mut out = Findings::default();
    for (hid, f) in cx.hids.iter().filter_map(|hid| cx.facts.get(hid).map(|f| (hid, f))) {
        if f.h.status != "completed" {
            continue;
        }
        out.checked += 1;
        let got = f.h.env.pointer("/delivery/result").cloned().unwrap_or(Value::Null);
        let want = census::expected(f.lo, f.hi, f.chunk);
        for k in ["lo", "hi", "prime_count", "prime_sum"] {
            if got.get(k).and_then(Value::as_u64) != want.get(k).and_then(Value::as_u64) {
                out.of(
                    hid,
                    format!(
                        "{}: result {k} = {}, recomputed {}",
                        short(hid),
                        got.get(k).unwrap_or(&Value::Null),
                        want[k]
                    ),
                );
            }
        }
        // chunks_done depends on who completed it
        let Some(c) = &f.completer else { continue };
        let got_cd = got.get("chunks_done").and_then(Value::as_u64);
        if cx.imp_of(&c.process) == "python" {
            // The reference reports the chunks of its final run only.
            let final_run =
                f.ops.iter().filter(|o| o.process == c.process && o.op == "checkpoint" && o.ok == Some(true)).count()
                    as u64;
            if got_cd != Some(final_run) {
                out.of(
                    hid,
                    format!(
                        "{}: python completer {} reported chunks_done {}, its history shows {final_run}",
                        short(hid),
                        c.holder,
                        opt(got_cd)
                    ),
                );
            } else if final_run != want["chunks_done"].as_u64().unwrap_or(0) {
                out.note(format!(
                    "{}: reference semantics: chunks_done {final_run} counts the final run only (the handoff has {})",
                    short(hid),
                    want["chunks_done"]
                ));
            }
        } else if got_cd != want.get("chunks_done").and_then(Value::as_u64) {
            out.of(
                hid,
                format!("{}: result chunks_done = {}, recomputed {}", short(hid), opt(got_cd), want["chunks_done"]),
            );
        }
    }
    out
}
