//! Beyond the reference's ten: leases, release, idempotency, races,
//! tamper and crash tolerance of the portable formats, limits, stalls,
//! budget enforcement by the supervisor, effects, capabilities,
//! canonical-JSON vectors, and fast death detection.

use super::core::{race, RACERS};
use super::{new_handoff, new_handoff_with, now, padded_to, sleep_until, spec_with, OWNED_OR_STATE};
use crate::check::{Check, Fail};
use crate::client::{Adapter, Lease, Profile, Reply};
use crate::ops::{action_for, Token};
use crate::suite::Ctx;
use crate::{ensure, ensure_eq};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// A live token whose lease ran out cannot write: LeaseLost, nothing stored.
pub fn lease_expiry_lease_lost(cx: &Ctx<'_>) -> Check {
    let root = cx.root("store")?;
    let mut m = cx.adapter()?;
    m.open(&root)?;
    let hid = new_handoff(&mut m, &root, 1)?;
    let t = m.claim(&root, "w1", &hid)?;
    m.checkpoint(&t, json!({"s": 1}))?;
    // the seconds a heartbeat reports left are the stored lease's
    let left = m.heartbeat(&t)?;
    let stored = lease_expiry(&mut m, &root, &hid)? - now();
    ensure!((left - stored).abs() < 0.5, "heartbeat reported {left:.3} s left; the stored lease has {stored:.3} s");
    ensure!(m.expire_lease(&root, &hid)?, "expire_lease changed nothing");
    m.must_fail("checkpoint", t.with("state", json!({"s": 2})), &["LeaseLost"], "checkpoint after the lease ran out")?;
    m.must_fail("heartbeat", t.args(), &["LeaseLost"], "heartbeat after the lease ran out")?;
    m.must_fail("complete", t.with("result", json!({"x": 1})), &["LeaseLost"], "complete after the lease ran out")?;
    let st = m.status(&root, &hid)?;
    ensure_eq!(st["status"], json!("running"), "status (only the supervisor may act on an expired lease)");
    ensure_eq!(st["checkpoints"], json!(1), "checkpoints after refused writes");
    if let Some(db) = cx.store(&root)? {
        ensure_eq!(db.verified_states(&hid)?, vec![(0, json!({"s": 1}))], "checkpoint rows");
    }
    Ok(())
}

fn lease_expiry(m: &mut Adapter, root: &str, hid: &str) -> Check<f64> {
    let own = m.ownership(root, hid)?.ok_or_else(|| Fail::failed("no ownership for a claimed handoff"))?;
    own["lease_expires_at"].as_f64().ok_or_else(|| Fail::Errored(format!("ownership without lease_expires_at: {own}")))
}

/// A heartbeat pushes the lease out: past the original expiry (real time,
/// 1 s leases) the worker still writes.
pub fn heartbeat_extends_lease(cx: &Ctx<'_>) -> Check {
    let root = cx.root("store")?;
    let mut m = cx.adapter_with(Profile::ShortLease)?;
    m.open(&root)?;
    let hid = new_handoff(&mut m, &root, 1)?;
    let t = m.claim(&root, "w1", &hid)?;
    let e0 = lease_expiry(&mut m, &root, &hid)?;
    let ttl = e0 - now();
    ensure!(
        (0.3..=1.2).contains(&ttl),
        "with DHP_LEASE_INTERVAL_S=0.5 and DHP_LEASE_MAX_MISSED=2 a fresh lease should run ~1.0 s, it runs {ttl:.3} s"
    );
    sleep_until(e0 - 0.4);
    let left = m.heartbeat(&t)?;
    let e1 = lease_expiry(&mut m, &root, &hid)?;
    ensure!(e1 > e0 + 0.3, "heartbeat must push the lease out: expiry {e0:.3} -> {e1:.3}");
    ensure!(
        left > 0.5 && left <= e1 - now() + 0.1,
        "heartbeat reports {left:.3} s left, want about the lease TTL (the stored lease ends {:.3} s from now)",
        e1 - now()
    );
    if let Some(db) = cx.store(&root)? {
        let o = db.ownership(&hid)?.ok_or_else(|| Fail::failed("no ownership row"))?;
        ensure!(
            (o.lease_expires_at - e1).abs() < 0.01,
            "stored lease_expires_at {} != reported {e1}",
            o.lease_expires_at
        );
    }
    sleep_until(e0 + 0.2);
    m.checkpoint(&t, json!({"s": 1}))
        .map_err(|f| f.context("checkpoint past the original expiry, within the extended lease"))?;
    Ok(())
}

/// Release hands the handoff back: pending, no owner, checkpoints kept,
/// the old token dead, claimable again.
pub fn release_to_pending(cx: &Ctx<'_>) -> Check {
    let root = cx.root("store")?;
    let mut m = cx.adapter()?;
    m.open(&root)?;
    let hid = new_handoff(&mut m, &root, 1)?;
    let t = m.claim(&root, "w1", &hid)?;
    m.checkpoint(&t, json!({"s": 1}))?;
    m.release(&t, "shutting down")?;
    let st = m.status(&root, &hid)?;
    ensure_eq!(st["status"], json!("pending"), "status after release");
    ensure!(st["owner"].is_null(), "owner after release: {}", st["owner"]);
    if let Some(db) = cx.store(&root)? {
        ensure_eq!(db.status(&hid)?, "pending", "stored status after release");
        ensure!(db.ownership(&hid)?.is_none(), "the ownership row must be deleted by release");
    }
    m.must_refuse("checkpoint", t.with("state", json!({"s": 9})), "checkpoint with a released token")?;
    let t2 = m.claim(&root, "w2", &hid).map_err(|f| f.context("claim after release"))?;
    ensure_eq!(m.last_checkpoint(&root, &hid)?, Some(json!({"s": 1})), "checkpoints kept across release");
    m.complete(&t2, json!({"x": 1}))?;
    ensure_eq!(m.status(&root, &hid)?["status"], json!("completed"), "status after the second claim completes");
    Ok(())
}

/// Completing a completed handoff again is a no-op: no error, and the
/// first result stands.
pub fn idempotent_complete(cx: &Ctx<'_>) -> Check {
    let root = cx.root("store")?;
    let mut m = cx.adapter()?;
    m.open(&root)?;
    let hid = new_handoff(&mut m, &root, 1)?;
    let t = m.claim(&root, "w1", &hid)?;
    m.complete(&t, json!({"x": 1}))?;
    m.complete(&t, json!({"x": 2})).map_err(|f| f.context("a retried complete must be a no-op"))?;
    let st = m.status(&root, &hid)?;
    ensure_eq!(st["status"], json!("completed"), "status");
    ensure_eq!(st["result"], json!({"x": 1}), "result after a retried complete");
    if let Some(db) = cx.store(&root)? {
        ensure_eq!(db.must_envelope(&hid)?.pointer("/delivery/result"), Some(&json!({"x": 1})), "stored result");
    }
    Ok(())
}

/// The parent's ack is refused until the handoff completed, then recorded.
pub fn ack_after_complete(cx: &Ctx<'_>) -> Check {
    let root = cx.root("store")?;
    let mut m = cx.adapter()?;
    m.open(&root)?;
    let hid = new_handoff(&mut m, &root, 1)?;
    m.must_fail("ack", json!({"root": root, "hid": hid}), &["StateError"], "ack of a pending handoff")?;
    let t = m.claim(&root, "w1", &hid)?;
    m.must_fail("ack", json!({"root": root, "hid": hid}), &["StateError"], "ack of a running handoff")?;
    ensure_eq!(m.status(&root, &hid)?["acked"], json!(false), "acked before completion");
    m.complete(&t, json!({"x": 1}))?;
    m.ack(&root, &hid)?;
    m.ack(&root, &hid).map_err(|f| f.context("a second ack"))?;
    ensure_eq!(m.status(&root, &hid)?["acked"], json!(true), "acked after ack");
    if let Some(db) = cx.store(&root)? {
        ensure_eq!(
            db.must_envelope(&hid)?.pointer("/delivery/outbox/ack"),
            Some(&json!(true)),
            "stored delivery.outbox.ack"
        );
    }
    Ok(())
}

/// N processes claim one pending handoff at one instant: exactly one wins.
pub fn claim_race(cx: &Ctx<'_>) -> Check {
    let root = cx.root("store")?;
    let mut m = cx.adapter()?;
    m.open(&root)?;
    let hid = new_handoff(&mut m, &root, 1)?;
    let mut racers = cx.fresh_many(RACERS)?;
    for r in racers.iter_mut() {
        r.open(&root)?;
    }
    let outcomes = race(&mut racers, "claim", |i| json!({"root": root, "worker": format!("c{i}"), "hid": hid}))?;
    let winners: Vec<usize> =
        outcomes.iter().enumerate().filter(|(_, r)| matches!(r, Reply::Ok(_))).map(|(i, _)| i).collect();
    ensure!(winners.len() == 1, "{} of {RACERS} racing claimers won (want exactly 1): {outcomes:?}", winners.len());
    for (i, r) in outcomes.iter().enumerate() {
        if let Reply::Err(e) = r {
            ensure!(
                OWNED_OR_STATE.contains(&e.kind.as_str()),
                "loser c{i} was refused with {e}, want an ownership or state error"
            );
        }
    }
    let w = format!("c{}", winners[0]);
    let st = m.status(&root, &hid)?;
    ensure_eq!(st["owner"], json!(w), "owner after the race");
    ensure_eq!(st["status"], json!("running"), "status after the race");
    if let Some(db) = cx.store(&root)? {
        let o = db.ownership(&hid)?.ok_or_else(|| Fail::failed("no ownership row after the race"))?;
        ensure_eq!((o.holder.as_str(), o.fence), (w.as_str(), 0), "stored holder and fence");
    }
    // a row already there (a claim killed between its two writes) is an
    // owner: a claim of that handoff is refused and changes nothing
    if let Some(db) = cx.store(&root)? {
        let h2 = new_handoff(&mut m, &root, 2)?;
        db.insert_ownership(&h2, "ghost", 0, now())?;
        let before = db.must_envelope(&h2)?;
        m.must_fail(
            "claim",
            json!({"root": root, "worker": "w9", "hid": h2}),
            &["OwnershipLost"],
            "claim of a pending handoff whose ownership row exists",
        )?;
        ensure_eq!(db.must_envelope(&h2)?, before, "the envelope after the refused claim");
        let own = db.ownership(&h2)?.ok_or_else(|| Fail::failed("the ownership row is gone after a refused claim"))?;
        ensure_eq!((own.holder.as_str(), own.fence), ("ghost", 0), "the ownership row after the refused claim");
    }
    Ok(())
}

fn write(path: &str, bytes: &[u8]) -> Check {
    std::fs::write(path, bytes).map_err(|e| Fail::Errored(format!("writing {path}: {e}")))
}

fn parse_file(path: &str) -> Check<Value> {
    let bytes = std::fs::read(path).map_err(|e| Fail::failed(format!("{path}: {e}")))?;
    serde_json::from_slice(&bytes).map_err(|e| Fail::failed(format!("{path} is not JSON: {e}")))
}

fn canonical(v: &Value) -> Check<Vec<u8>> {
    dhp_oracle::json::canonical(v).map(String::into_bytes).map_err(|e| Fail::Errored(e.to_string()))
}

/// Nothing of `hid` reached `root`.
fn untouched(cx: &Ctx<'_>, m: &mut Adapter, root: &str, hid: &str, what: &str) -> Check {
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

/// Ship a handoff with `n` checkpoints (`{"s": i}`) from `root` to `log`.
fn shipped_log(m: &mut Adapter, root: &str, log: &str, n: i64) -> Check<String> {
    let hid = new_handoff(m, root, 1)?;
    let t = m.claim(root, "w1", &hid)?;
    m.ship_envelope(root, &hid, log)?;
    for i in 0..n {
        let seq = m.checkpoint(&t, json!({"s": i}))?;
        m.ship_checkpoint(log, seq, json!({"s": i}))?;
    }
    Ok(hid)
}

fn log_lines(log: &str) -> Check<Vec<String>> {
    let text = std::fs::read_to_string(log).map_err(|e| Fail::failed(format!("{log}: {e}")))?;
    Ok(text.lines().map(String::from).collect())
}

/// Rewrite one log line's JSON with `f`, as Python would have written it.
fn edit_line(line: &str, f: impl FnOnce(&mut Value)) -> Check<String> {
    let mut v: Value = serde_json::from_str(line).map_err(|e| Fail::failed(format!("log line is not JSON: {e}")))?;
    f(&mut v);
    dhp_oracle::json::sorted(&v).map_err(|e| Fail::Errored(e.to_string()))
}

/// A copy of `log` (as `tampered.log`) with line `i` rewritten by `f`.
fn tampered_copy(cx: &Ctx<'_>, log: &str, i: usize, f: impl FnOnce(&mut Value)) -> Check<String> {
    let mut lines = log_lines(log)?;
    lines[i] = edit_line(&lines[i], f)?;
    let bad = cx.path("tampered.log");
    write(&bad, (lines.join("\n") + "\n").as_bytes())?;
    Ok(bad)
}

/// A pooled adapter with the store roots `names` created and opened.
fn opened<'a, const N: usize>(cx: &Ctx<'a>, names: [&str; N]) -> Check<(Lease<'a>, [String; N])> {
    let mut m = cx.adapter()?;
    let mut roots = Vec::with_capacity(N);
    for n in names {
        let r = cx.root(n)?;
        m.open(&r)?;
        roots.push(r);
    }
    Ok((m, roots.try_into().expect("one root per name")))
}

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

/// A store whose schema_version is newer than 3 is refused, and left as
/// it is.
pub fn newer_schema_refused(cx: &Ctx<'_>) -> Check {
    let root = cx.root("store")?;
    let mut m = cx.adapter()?;
    m.open(&root)?;
    let hid = new_handoff(&mut m, &root, 1)?;
    let db = cx.store(&root)?.ok_or_else(|| Fail::Skipped("needs standard-store".into()))?;
    let before = db.must_envelope(&hid)?;
    ensure_eq!(db.max_schema_version()?, Some(3), "schema_version written by the implementation");
    // an older store is brought to 3 on open (§3.1), and keeps its handoffs
    db.set_schema_version(2, now())?;
    cx.adapter()?.open(&root).map_err(|f| f.context("opening a store whose schema_version is 2"))?;
    ensure_eq!(db.max_schema_version()?, Some(3), "schema_version after opening a v2 store");
    ensure_eq!(db.must_envelope(&hid)?, before, "the envelope after the upgrade to v3");
    db.add_schema_version(4, now())?;
    let mut other = cx.adapter()?;
    other.must_fail("open", json!({"root": root}), &["ValidationError"], "opening a store with schema v4")?;
    m.must_fail("open", json!({"root": root}), &["ValidationError"], "re-opening a store after it moved to schema v4")?;
    m.must_refuse("status", json!({"root": root, "hid": hid}), "status on a store with schema v4")?;
    ensure_eq!(db.max_schema_version()?, Some(4), "schema_version after the refusals (must not be downgraded)");
    ensure_eq!(db.handoff_count()?, 1, "handoffs rows after the refusals");
    ensure_eq!(db.must_envelope(&hid)?, before, "the stored envelope after the refusals");
    Ok(())
}

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
    super::shipping::line_limit(cx)
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

/// Malformed handoff, worker and supervisor ids are refused with
/// ValidationError before anything is touched.
pub fn malformed_ids_rejected(cx: &Ctx<'_>) -> Check {
    let root = cx.root("store")?;
    let mut m = cx.adapter()?;
    m.open(&root)?;
    let hid = new_handoff(&mut m, &root, 1)?;
    let bad_hids = [
        hid.to_uppercase(),
        format!("{hid}0"),
        hid[..63].to_string(),
        format!("{}g", &hid[..63]),
        String::new(),
        "../../etc/passwd".into(),
        "' OR '1'='1".into(),
    ];
    for bad in &bad_hids {
        m.must_fail(
            "claim",
            json!({"root": root, "worker": "w1", "hid": bad}),
            &["ValidationError"],
            &format!("claim of handoff id {bad:?}"),
        )?;
    }
    let bad_workers =
        [String::new(), "bad id".into(), "w/../x".into(), "w".repeat(129), "w\n1".into(), "wörker".into()];
    for bad in &bad_workers {
        m.must_fail(
            "claim",
            json!({"root": root, "worker": bad, "hid": hid}),
            &["ValidationError"],
            &format!("claim by worker id {bad:?}"),
        )?;
    }
    m.must_fail(
        "scan",
        json!({"root": root, "supervisor": "s 1"}),
        &["ValidationError"],
        "scan by supervisor id \"s 1\"",
    )?;
    let st = m.status(&root, &hid)?;
    ensure_eq!(st["status"], json!("pending"), "status after refused claims");
    ensure!(st["owner"].is_null(), "owner after refused claims: {}", st["owner"]);
    if let Some(db) = cx.store(&root)? {
        ensure!(db.ownership(&hid)?.is_none(), "an ownership row appeared after refused claims");
        ensure_eq!(db.handoff_count()?, 1, "handoffs rows");
    }
    // the edges of the rule are ids like any other: 128 characters, and
    // underscores at one end only
    for good in ["w".repeat(128), "__w".into(), "w__".into()] {
        let h = new_handoff(&mut m, &root, 2 + good.len() as i64)?;
        let t = m.claim(&root, &good, &h).map_err(|f| f.context(&format!("claim by worker id {good:?}")))?;
        m.checkpoint(&t, json!({"s": 1})).map_err(|f| f.context(&format!("checkpoint by worker id {good:?}")))?;
    }
    Ok(())
}

fn repeat_activity(m: &mut Adapter, t: &Token, times: usize) -> Check<i64> {
    let mut last = 0;
    for _ in 0..times {
        let v = m.op("note_activity", t.with("digest", json!("tool:search q=same")))?;
        last = v["repeat_count"].as_i64().unwrap_or(0);
    }
    Ok(last)
}

/// A live worker repeating the same activity is orphaned as stalled; after
/// max_stall_retries stalls it is dead-lettered instead of retried.
pub fn stall_orphan_then_dlq(cx: &Ctx<'_>) -> Check {
    let root = cx.root("store")?;
    let mut m = cx.adapter()?;
    m.open(&root)?;
    let hid = new_handoff_with(&mut m, &root, spec_with(1, json!({"max_stall_retries": 1})))?;
    let t = m.claim(&root, "w1", &hid)?;
    // progress just made: its stall clock (stall_timeout_s, 120 s) is far
    // from running out, and a checkpoint starts the repeat count afresh
    ensure_eq!(m.checkpoint(&t, json!({"k": 1}))?, 0, "seq of the first checkpoint");
    ensure_eq!(repeat_activity(&mut m, &t, 5)?, 5, "repeat count after 5 identical activities");
    let other = m.op("note_activity", t.with("digest", json!("tool:fetch url=other")))?;
    ensure_eq!(other["repeat_count"], json!(1), "repeat count of a different activity");
    ensure_eq!(repeat_activity(&mut m, &t, 5)?, 5, "repeat count after 5 identical activities");
    let acts = m.scan(&root, "s1")?;
    ensure!(
        action_for(&acts, &hid).is_none(),
        "scan acted on a worker that checkpointed just now (well within stall_timeout_s) and is below the repeat \
         limit (5 < 10): {acts:?}"
    );
    ensure_eq!(repeat_activity(&mut m, &t, 5)?, 10, "repeat count after 10 identical activities");
    let acts = m.scan(&root, "s1")?;
    ensure_eq!(action_for(&acts, &hid), Some("orphaned"), "scan action after 10 repeats (actions {acts:?})");
    let st = m.status(&root, &hid)?;
    ensure_eq!(st["status"], json!("orphaned"), "status after the first stall");
    if !st["orphan_reason"].is_null() {
        ensure_eq!(st["orphan_reason"], json!("stalled"), "orphan_reason");
    }
    let t2 = m.recover(&root, "w2", &hid)?;
    repeat_activity(&mut m, &t2, 10)?;
    let acts = m.scan(&root, "s1")?;
    ensure_eq!(
        action_for(&acts, &hid),
        Some("dlq"),
        "scan action on the second stall with max_stall_retries=1 (actions {acts:?})"
    );
    let st = m.status(&root, &hid)?;
    ensure_eq!(st["status"], json!("failed"), "status after the second stall");
    ensure!(st["error"].as_str().is_some_and(|e| !e.is_empty()), "a dead-lettered handoff must say why: {st}");
    if let Some(db) = cx.store(&root)? {
        let env = db.must_envelope(&hid)?;
        ensure_eq!(env.pointer("/execution/stall_count"), Some(&json!(2)), "stored execution.stall_count");
        ensure_eq!(env.pointer("/execution/status"), Some(&json!("failed")), "stored status");
    }
    Ok(())
}

/// The supervisor fails an over-budget handoff closed and fences its
/// worker out, leaving work within budget alone.
pub fn supervisor_budget_kill(cx: &Ctx<'_>) -> Check {
    let root = cx.root("store")?;
    let mut m = cx.adapter()?;
    m.open(&root)?;
    let budget = json!({"max_steps": 2, "max_spend_usd": 1.0, "max_wallclock_s": 600.0, "max_attempts": 3});
    let hid = new_handoff_with(&mut m, &root, spec_with(1, json!({"budget": budget})))?;
    let ok_hid = new_handoff_with(&mut m, &root, spec_with(2, json!({"budget": budget})))?;
    let t = m.claim(&root, "w1", &hid)?;
    let t_ok = m.claim(&root, "w2", &ok_hid)?;
    m.note_step(&t_ok, 1)?;
    // a pass before the overrun: the overrun must be found by a leader's
    // later pass too, not only by its first
    let acts = m.scan(&root, "s1")?;
    ensure!(
        action_for(&acts, &hid).is_none() && action_for(&acts, &ok_hid).is_none(),
        "scan acted on handoffs within budget: {acts:?}"
    );
    // The worker is told (BudgetExceeded) — judged by no-silent-budget-overrun; here
    // only the supervisor's side counts.
    let _ = m.try_op("note_step", t.with("n", json!(3)))?;
    let acts = m.scan(&root, "s1")?;
    ensure_eq!(
        action_for(&acts, &hid),
        Some("budget-killed"),
        "scan action on an over-budget handoff (actions {acts:?})"
    );
    ensure!(action_for(&acts, &ok_hid).is_none(), "scan acted on a handoff within budget: {acts:?}");
    let st = m.status(&root, &hid)?;
    ensure_eq!(st["status"], json!("failed"), "status after the budget kill");
    ensure!(
        st["error"].as_str().is_some_and(|e| e.contains("budget")),
        "error should name the budget: {}",
        st["error"]
    );
    ensure!(st["owner"].is_null(), "a budget-killed handoff keeps no owner: {}", st["owner"]);
    m.must_refuse("checkpoint", t.with("state", json!({"s": 1})), "checkpoint by the budget-killed worker")?;
    ensure_eq!(m.status(&root, &ok_hid)?["status"], json!("running"), "status of the handoff within budget");
    if let Some(db) = cx.store(&root)? {
        ensure_eq!(db.status(&hid)?, "failed", "stored status");
        ensure!(db.ownership(&hid)?.is_none(), "ownership row of a budget-killed handoff");
    }
    Ok(())
}

fn effect(m: &mut Adapter, t: &Token, op: &str, step: &str, result: Option<Value>) -> Check<Value> {
    let mut args = t.with("step_id", json!(step));
    if let Some(r) = result {
        args["result"] = r;
    }
    m.op(op, args)
}

/// A side effect is recorded once: the first write wins, across workers
/// and recoveries.
pub fn effects_first_write_wins(cx: &Ctx<'_>) -> Check {
    let root = cx.root("store")?;
    let mut m = cx.adapter()?;
    m.open(&root)?;
    let hid = new_handoff(&mut m, &root, 1)?;
    let t = m.claim(&root, "w1", &hid)?;
    let r = effect(&mut m, &t, "record_effect", "charge-1", Some(json!({"charge_id": "ch_1"})))?;
    ensure_eq!(r["recorded"], json!(true), "first record_effect");
    let r = effect(&mut m, &t, "record_effect", "charge-1", Some(json!({"charge_id": "ch_2"})))?;
    ensure_eq!(r["recorded"], json!(false), "second record_effect of the same step");
    let d = effect(&mut m, &t, "effect_done", "charge-1", None)?;
    ensure_eq!((d["done"].clone(), d["result"].clone()), (json!(true), json!({"charge_id": "ch_1"})), "effect_done");
    ensure_eq!(
        effect(&mut m, &t, "effect_done", "refund-1", None)?["done"],
        json!(false),
        "effect_done of a step never run"
    );
    m.orphan_via_scan(&t, "s1")?;
    let t2 = m.recover(&root, "w2", &hid)?;
    let d = effect(&mut m, &t2, "effect_done", "charge-1", None)?;
    ensure_eq!(d["result"], json!({"charge_id": "ch_1"}), "effect_done seen by the recovering worker");
    let r = effect(&mut m, &t2, "record_effect", "charge-1", Some(json!({"charge_id": "ch_3"})))?;
    ensure_eq!(r["recorded"], json!(false), "record_effect by the recovering worker");
    if let Some(db) = cx.store(&root)? {
        let want = dhp_oracle::json::sorted(&json!({"charge_id": "ch_1"})).map_err(|e| Fail::Errored(e.to_string()))?;
        ensure_eq!(db.effects(&hid)?, vec![("charge-1".to_string(), want)], "effects rows");
    }
    Ok(())
}

/// Capabilities fail closed: only what the contract declares (and the
/// `dhp` domain) is granted, every check audited.
pub fn capabilities_fail_closed(cx: &Ctx<'_>) -> Check {
    let root = cx.root("store")?;
    let mut m = cx.adapter()?;
    m.open(&root)?;
    let caps = json!({"network": ["api.example.com"], "filesystem": ["/tmp/work"]});
    let h1 = new_handoff_with(&mut m, &root, spec_with(1, json!({"capabilities": caps})))?;
    let h2 = new_handoff(&mut m, &root, 2)?;
    let t1 = m.claim(&root, "w1", &h1)?;
    let t2 = m.claim(&root, "w1", &h2)?;
    let checks: [(&Token, &str, &str, bool); 7] = [
        (&t1, "network", "api.example.com", true),
        (&t1, "network", "evil.example.com", false),
        (&t1, "filesystem", "/etc", false),
        (&t1, "secrets", "aws", false),
        (&t1, "dhp", "checkpoint", true),
        (&t2, "network", "api.example.com", false),
        (&t2, "dhp", "checkpoint", true),
    ];
    for (t, domain, resource, granted) in checks {
        let mut args = t.with("domain", json!(domain));
        args["resource"] = json!(resource);
        let what = format!(
            "require_capability {domain}:{resource} ({} capabilities)",
            if t.hid == h1 { "declared" } else { "no" }
        );
        if granted {
            m.op("require_capability", args).map_err(|f| f.context(&what))?;
        } else {
            m.must_fail("require_capability", args, &["CapabilityDenied"], &what)?;
        }
    }
    if let Some(db) = cx.store(&root)? {
        let want1: Vec<(String, String, bool)> =
            checks[..5].iter().map(|(_, d, r, g)| (d.to_string(), r.to_string(), *g)).collect();
        let want2: Vec<(String, String, bool)> =
            checks[5..].iter().map(|(_, d, r, g)| (d.to_string(), r.to_string(), *g)).collect();
        ensure_eq!(db.capability_audit(&h1)?, want1, "capability_audit rows of the handoff with capabilities");
        ensure_eq!(db.capability_audit(&h2)?, want2, "capability_audit rows of the handoff without");
    }
    Ok(())
}

const CANONICAL_VECTORS: &str = include_str!("../../../dhp-core/tests/vectors/canonical.json");
const ENVELOPE_VECTORS: &str = include_str!("../../../dhp-core/tests/vectors/envelopes.json");

/// Canonical JSON, state hashes and handoff ids agree with vectors
/// generated from the reference (`scripts/pyref/gen_vectors.py`).
pub fn canonical_vectors(cx: &Ctx<'_>) -> Check {
    let mut m = cx.adapter()?;
    let vectors: Vec<Value> = serde_json::from_str(CANONICAL_VECTORS).map_err(|e| Fail::Errored(e.to_string()))?;
    let envelopes: Vec<Value> = serde_json::from_str(ENVELOPE_VECTORS).map_err(|e| Fail::Errored(e.to_string()))?;
    let mut bad = Vec::new();
    for v in &vectors {
        let name = v["name"].as_str().unwrap_or("?");
        match m.try_op("canonical", json!({"text": v["input"]}))? {
            Err(e) => bad.push(format!("{name}: refused: {e}")),
            Ok(r) => {
                let mut diffs = Vec::new();
                if r["canonical_hex"] != v["canonical_hex"] {
                    diffs.push(format!("canonical {} want {}", hex_text(&r["canonical_hex"]), v["canonical_text"]));
                }
                if r["sha256"] != v["sha256_canonical"] {
                    diffs.push("sha256".to_string());
                }
                let want_state = v.get("state_json").cloned().unwrap_or(Value::Null);
                if r["state_json"] != want_state {
                    diffs.push(format!("state_json {} want {}", r["state_json"], want_state));
                }
                if r["state_hash"] != v.get("state_hash").cloned().unwrap_or(Value::Null) {
                    diffs.push("state_hash".to_string());
                }
                if !diffs.is_empty() {
                    bad.push(format!("{name}: {}", diffs.join(", ")));
                }
            }
        }
    }
    for e in &envelopes {
        let name = e["name"].as_str().unwrap_or("?");
        match m.try_op("handoff_id", json!({"text": e["envelope_text"]}))? {
            Err(err) => bad.push(format!("{name}: refused: {err}")),
            Ok(r) => {
                if r["handoff_id"] != e["handoff_id"] || r["input_hash"] != e["input_hash"] {
                    bad.push(format!(
                        "{name}: handoff_id/input_hash {}/{} want {}/{}",
                        r["handoff_id"], r["input_hash"], e["handoff_id"], e["input_hash"]
                    ));
                }
            }
        }
    }
    ensure!(
        bad.is_empty(),
        "{} of {} vectors differ from the reference; first: {}",
        bad.len(),
        vectors.len() + envelopes.len(),
        bad.iter().take(4).cloned().collect::<Vec<_>>().join(" | ")
    );
    Ok(())
}

fn hex_text(v: &Value) -> String {
    let h = v.as_str().unwrap_or_default();
    let bytes: Vec<u8> =
        (0..h.len() / 2).filter_map(|i| u8::from_str_radix(h.get(2 * i..2 * i + 2)?, 16).ok()).collect();
    let s = String::from_utf8_lossy(&bytes);
    let s: String = s.chars().take(60).collect();
    format!("{s:?}")
}

/// How long the supervisor may take to orphan a SIGKILLed worker's
/// handoff (the lease is 6 s).
pub const FAST_DEATH_LIMIT: Duration = Duration::from_millis(1500);

/// A worker process holding a handoff is SIGKILLed; the supervisor orphans
/// it in well under the lease time, and a standby recovers and completes it.
pub fn fast_death_detection(cx: &Ctx<'_>) -> Check {
    let root = cx.root("store")?;
    let mut m = cx.adapter()?;
    m.open(&root)?;
    let hid = new_handoff(&mut m, &root, 1)?;
    let mut w = cx.fresh()?;
    w.open(&root)?;
    w.op("liveness_publish", json!({"root": root, "worker": "w1"}))?;
    let t = w.claim(&root, "w1", &hid)?;
    let expiry = lease_expiry(&mut m, &root, &hid)?;
    let acts = m.scan(&root, "s1")?;
    ensure!(action_for(&acts, &hid).is_none(), "a live worker's handoff was orphaned: {acts:?}");
    w.kill();
    drop(w);
    let killed = Instant::now();
    let lease_left = expiry - now();
    loop {
        let acts = m.scan(&root, "s1")?;
        match action_for(&acts, &hid) {
            Some("orphaned") => break,
            None => {}
            Some(other) => {
                return Err(Fail::failed(format!("scan after the kill: action {other:?}, want \"orphaned\"")))
            }
        }
        if killed.elapsed() > FAST_DEATH_LIMIT {
            return Err(Fail::failed(format!(
                "the SIGKILLed worker's handoff was not orphaned within {:.1} s (its lease had {lease_left:.1} s left)",
                FAST_DEATH_LIMIT.as_secs_f64()
            )));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let took = killed.elapsed().as_secs_f64();
    ensure!(took < lease_left, "orphaned after {took:.2} s, not before the lease ran out ({lease_left:.2} s)");
    ensure_eq!(m.status(&root, &hid)?["status"], json!("orphaned"), "status after the kill");
    let t2 = m.recover(&root, "w2", &hid)?;
    ensure!(t2.fence > t.fence, "recover must bump the fence");
    m.complete(&t2, json!({"x": 1}))?;
    // a worker restarted under the dead one's id, publishing no token,
    // is alive: its live lease keeps its handoff
    let h2 = new_handoff(&mut m, &root, 2)?;
    m.claim(&root, "w1", &h2)?;
    let acts = m.scan(&root, "s1")?;
    ensure!(
        action_for(&acts, &h2).is_none(),
        "a handoff claimed under the dead worker's id (live lease, no token) was acted on: {acts:?}"
    );
    Ok(())
}
