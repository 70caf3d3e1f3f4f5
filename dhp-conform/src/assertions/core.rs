//! The reference's ten assertions (`dhp/conform.py`), with its names, each
//! checked through the adapter and, for the standard store, in the SQLite
//! file and the transport log themselves.

use super::{new_handoff, new_handoff_with, now, spec, spec_with, OWNED_OR_STATE};
use crate::check::{Check, Fail, OWNERSHIP_KINDS};
use crate::client::Reply;
use crate::ops::action_for;
use crate::suite::Ctx;
use crate::{ensure, ensure_eq};
use serde_json::{json, Value};

/// Racing processes in exactly-one-wins and claim-race.
pub const RACERS: usize = 4;

/// no-lost-results: Kill the worker process mid-run; a standby recovers from the last
/// checkpoint and the result is delivered.
pub fn no_lost_results(cx: &Ctx<'_>) -> Check {
    let root = cx.root("store")?;
    let mut m = cx.adapter()?;
    m.open(&root)?;
    let hid = new_handoff(&mut m, &root, 1)?;

    // The worker is a process of its own, SIGKILLed after two checkpoints.
    let mut w = cx.fresh()?;
    let t = w.claim(&root, "w1", &hid)?;
    ensure_eq!(w.checkpoint(&t, json!({"s": 1}))?, 0, "seq of the first checkpoint");
    ensure_eq!(w.checkpoint(&t, json!({"s": 2}))?, 1, "seq of the second checkpoint");
    w.kill();
    drop(w);

    let st = m.status(&root, &hid)?;
    ensure_eq!(st["status"], json!("running"), "status right after the worker died");
    ensure_eq!(st["owner"], json!("w1"), "owner right after the worker died");
    m.orphan_via_scan(&t, "s1")?;
    let t2 = m.recover(&root, "w2", &hid)?;
    ensure!(t2.fence > t.fence, "recover must bump the fence: {} after {}", t2.fence, t.fence);
    ensure_eq!(m.last_checkpoint(&root, &hid)?, Some(json!({"s": 2})), "last checkpoint seen by the standby");
    m.complete(&t2, json!({"x": 7}))?;
    let st = m.status(&root, &hid)?;
    ensure_eq!(st["status"], json!("completed"), "status after complete");
    ensure_eq!(st["result"], json!({"x": 7}), "delivered result");
    ensure_eq!(st["attempt"], json!(1), "attempt after one recovery");

    if let Some(db) = cx.store(&root)? {
        ensure_eq!(db.verified_states(&hid)?, vec![(0, json!({"s": 1})), (1, json!({"s": 2}))], "checkpoint rows");
        let env = db.must_envelope(&hid)?;
        ensure_eq!(env.pointer("/execution/status"), Some(&json!("completed")), "stored execution.status");
        ensure_eq!(env.pointer("/delivery/result"), Some(&json!({"x": 7})), "stored delivery.result");
        ensure_eq!(
            env.pointer("/execution/checkpoints"),
            Some(&json!([])),
            "stored envelope keeps checkpoints as rows only"
        );
        ensure!(db.ownership(&hid)?.is_none(), "the ownership row must be deleted at completion");
    }
    Ok(())
}

/// no-crossed-inputs: Inputs that do not match their bound hash, or an envelope that does
/// not match its id, are refused at dispatch.
pub fn no_crossed_inputs(cx: &Ctx<'_>) -> Check {
    let root = cx.root("store")?;
    let mut m = cx.adapter()?;
    m.open(&root)?;
    let env = m.build(spec(1))?;
    ensure!(
        dhp_oracle::verifies(&env),
        "build_envelope made an envelope whose handoff_id or input_hash does not verify: {env}"
    );
    let hid = env["handoff_id"].as_str().unwrap_or_default().to_string();

    // (a) inputs changed after the id was computed (the reference's case)
    let mut crossed = env.clone();
    crossed["task"]["inputs"]["inline"]["n"] = json!(999);
    m.must_fail(
        "dispatch",
        json!({"root": root, "envelope": crossed}),
        &["TamperError"],
        "dispatch of crossed inputs",
    )?;
    // (b) inputs changed and input_hash re-bound: only the identity check catches it
    let mut rebound = crossed.clone();
    rebound["task"]["input_hash"] = json!(hash_inputs(&rebound)?);
    m.must_fail(
        "dispatch",
        json!({"root": root, "envelope": rebound}),
        &["TamperError"],
        "dispatch of crossed inputs with a re-bound input_hash under the old handoff_id",
    )?;
    // (c) inputs changed, id recomputed, input_hash stale: only the input binding catches it
    let mut reid = crossed.clone();
    reid["handoff_id"] = json!(dhp_oracle::handoff_id(&reid)
        .ok_or_else(|| Fail::Errored("the envelope has no spec to hash".into()))?
        .map_err(|e| Fail::Errored(e.to_string()))?);
    m.must_fail(
        "dispatch",
        json!({"root": root, "envelope": reid}),
        &["TamperError"],
        "dispatch of crossed inputs under a recomputed handoff_id with a stale input_hash",
    )?;
    for (h, what) in [(hid.as_str(), "original"), (reid["handoff_id"].as_str().unwrap_or_default(), "re-identified")] {
        m.must_fail(
            "status",
            json!({"root": root, "hid": h}),
            &["UnknownHandoff"],
            &format!("the {what} id after refused dispatches"),
        )?;
    }
    if let Some(db) = cx.store(&root)? {
        ensure_eq!(db.handoff_count()?, 0, "handoffs rows after refused dispatches");
    }
    // The untampered envelope is accepted, under its own id.
    ensure_eq!(m.dispatch(&root, &env)?, hid, "hid of the untampered envelope");
    Ok(())
}

fn hash_inputs(env: &Value) -> Check<String> {
    dhp_oracle::input_hash(&env["task"]["inputs"]).map_err(|e| Fail::Errored(e.to_string()))
}

/// no-untyped-results: A result that violates the contract's output schema is rejected and
/// the handoff parks as failed.
pub fn no_untyped_results(cx: &Ctx<'_>) -> Check {
    let root = cx.root("store")?;
    let mut m = cx.adapter()?;
    m.open(&root)?;
    let mut parked = Vec::new();
    for (n, bad) in [(1, json!({"wrong": "shape"})), (2, json!({"x": "7"})), (3, json!([1, 2]))] {
        let hid = new_handoff(&mut m, &root, n)?;
        let t = m.claim(&root, "w1", &hid)?;
        m.must_fail("complete", t.with("result", bad.clone()), &["ValidationError"], &format!("complete with {bad}"))?;
        let st = m.status(&root, &hid)?;
        ensure_eq!(st["status"], json!("failed"), "status after a schema-violating result {bad}");
        ensure!(st["result"].is_null(), "a rejected result must not be delivered, got {}", st["result"]);
        parked.push(hid);
    }
    let hid = new_handoff(&mut m, &root, 4)?;
    let t = m.claim(&root, "w1", &hid)?;
    m.complete(&t, json!({"x": 4}))?;
    ensure_eq!(m.status(&root, &hid)?["status"], json!("completed"), "status after a conforming result");
    if let Some(db) = cx.store(&root)? {
        for h in &parked {
            let env = db.must_envelope(h)?;
            ensure_eq!(env.pointer("/execution/status"), Some(&json!("failed")), "stored status of a rejected result");
            ensure!(
                env.pointer("/delivery/result").is_none(),
                "stored delivery.result of a rejected result must be absent"
            );
        }
    }
    Ok(())
}

/// no-silent-budget-overrun: Going over the step or spend budget raises BudgetExceeded in the
/// worker, and the overrun is recorded.
pub fn no_silent_budget_overrun(cx: &Ctx<'_>) -> Check {
    let root = cx.root("store")?;
    let mut m = cx.adapter()?;
    m.open(&root)?;
    let budget = json!({"max_steps": 2, "max_spend_usd": 1.0, "max_wallclock_s": 60.0, "max_attempts": 3});
    let hid = new_handoff_with(&mut m, &root, spec_with(1, json!({"budget": budget})))?;
    let t = m.claim(&root, "w1", &hid)?;
    m.note_step(&t, 2)?;
    m.must_fail("note_step", t.with("n", json!(1)), &["BudgetExceeded"], "the step past max_steps")?;
    ensure_eq!(m.status(&root, &hid)?["steps"].as_f64(), Some(3.0), "steps recorded after the overrun");

    let hid2 = new_handoff_with(&mut m, &root, spec_with(2, json!({"budget": budget})))?;
    let t2 = m.claim(&root, "w1", &hid2)?;
    m.op("note_spend", t2.with("usd", json!(0.5)))?;
    m.must_fail("note_spend", t2.with("usd", json!(0.75)), &["BudgetExceeded"], "spend past max_spend_usd")?;
    ensure_eq!(m.status(&root, &hid2)?["spend_usd"].as_f64(), Some(1.25), "spend recorded after the overrun");

    if let Some(db) = cx.store(&root)? {
        let env = db.must_envelope(&hid)?;
        ensure_eq!(env.pointer("/execution/steps").and_then(Value::as_f64), Some(3.0), "stored execution.steps");
        let env = db.must_envelope(&hid2)?;
        ensure_eq!(
            env.pointer("/execution/spend_usd").and_then(Value::as_f64),
            Some(1.25),
            "stored execution.spend_usd"
        );
    }
    Ok(())
}

/// no-runner-lock-in: Suspend in one process on one root, resume in another process on
/// another root, complete there.
pub fn no_runner_lock_in(cx: &Ctx<'_>) -> Check {
    let (ra, rb) = (cx.root("a")?, cx.root("b")?);
    let bundle = cx.path("handoff.bundle");
    let mut a = cx.adapter()?;
    let mut b = cx.adapter()?;
    ensure!(a.pid() != b.pid(), "runner bug: one process for both sides");
    a.open(&ra)?;
    b.open(&rb)?;
    let hid = new_handoff(&mut a, &ra, 1)?;
    let t = a.claim(&ra, "w1", &hid)?;
    a.checkpoint(&t, json!({"s": 1}))?;
    let n = a.suspend(&ra, &hid, &bundle)?;
    ensure_eq!(a.status(&ra, &hid)?["status"], json!("suspended"), "status on the old root after suspend");

    let bytes =
        std::fs::read(&bundle).map_err(|e| Fail::failed(format!("suspend wrote no bundle at {bundle}: {e}")))?;
    ensure_eq!(bytes.len() as i64, n, "bundle size reported by suspend");
    let doc: Value = serde_json::from_slice(&bytes).map_err(|e| Fail::failed(format!("bundle is not JSON: {e}")))?;
    let canon = dhp_oracle::json::canonical(&doc).map_err(|e| Fail::failed(e.to_string()))?;
    ensure!(canon.as_bytes() == bytes, "bundle bytes are not canonical JSON (sorted keys, no spaces, UTF-8)");
    ensure_eq!(doc["dhp_bundle"], json!("1.0"), "bundle version");
    ensure_eq!(doc["envelope"]["handoff_id"], json!(hid), "bundle envelope id");

    ensure_eq!(b.resume(&rb, &bundle)?, hid, "hid after resume");
    ensure_eq!(b.last_checkpoint(&rb, &hid)?, Some(json!({"s": 1})), "last checkpoint on the new root");
    let st = b.status(&rb, &hid)?;
    ensure_eq!(st["status"], json!("pending"), "status after resume");
    ensure_eq!(st["attempt"], json!(1), "attempt after resume");
    let t2 = b.claim(&rb, "w2", &hid)?;
    b.complete(&t2, json!({"x": 1}))?;
    ensure_eq!(b.status(&rb, &hid)?["status"], json!("completed"), "status on the new root");
    if let Some(db) = cx.store(&rb)? {
        ensure_eq!(db.verified_states(&hid)?, vec![(0, json!({"s": 1}))], "checkpoint rows on the new root");
        ensure_eq!(db.status(&hid)?, "completed", "stored status on the new root");
    }
    Ok(())
}

/// exactly-one-wins: N recoverers in N processes, released at one instant: exactly one wins.
pub fn exactly_one_wins(cx: &Ctx<'_>) -> Check {
    let root = cx.root("store")?;
    let mut m = cx.adapter()?;
    m.open(&root)?;
    let hid = new_handoff(&mut m, &root, 1)?;
    let t = m.claim(&root, "w0", &hid)?;
    m.checkpoint(&t, json!({"s": 1}))?;
    m.orphan_via_scan(&t, "s1")?;
    let orphan_fence = m
        .ownership(&root, &hid)?
        .and_then(|o| o["fence"].as_i64())
        .ok_or_else(|| Fail::failed("an orphaned handoff has no ownership fence to recover from"))?;

    let mut racers = cx.fresh_many(RACERS)?;
    for r in racers.iter_mut() {
        r.open(&root)?;
    }
    let outcomes = race(&mut racers, "recover", |i| json!({"root": root, "worker": format!("r{i}"), "hid": hid}))?;
    let winners: Vec<usize> =
        outcomes.iter().enumerate().filter(|(_, r)| matches!(r, Reply::Ok(_))).map(|(i, _)| i).collect();
    ensure!(winners.len() == 1, "{} of {RACERS} racing recoverers won (want exactly 1): {outcomes:?}", winners.len());
    let w = winners[0];
    for (i, r) in outcomes.iter().enumerate() {
        if let Reply::Err(e) = r {
            ensure!(
                OWNED_OR_STATE.contains(&e.kind.as_str()),
                "loser r{i} was refused with {e}, want an ownership or state error"
            );
        }
    }
    let st = m.status(&root, &hid)?;
    ensure_eq!(st["owner"], json!(format!("r{w}")), "owner after the race");
    ensure_eq!(st["attempt"], json!(1), "attempt after one recovery");
    let own = m.ownership(&root, &hid)?.ok_or_else(|| Fail::failed("no ownership after the race"))?;
    let after = own["fence"].as_i64().unwrap_or(-1);
    ensure!(after > orphan_fence, "winner's fence {after} must exceed the orphaned fence {orphan_fence}");
    let Reply::Ok(won) = &outcomes[w] else { unreachable!() };
    let wt = crate::ops::Token {
        root: root.clone(),
        worker: format!("r{w}"),
        hid: hid.clone(),
        fence: won["fence"].as_i64().unwrap_or(-1),
    };
    ensure_eq!(racers[w].checkpoint(&wt, json!({"s": 2}))?, 1, "winner's checkpoint seq");
    if let Some(db) = cx.store(&root)? {
        let o = db.ownership(&hid)?.ok_or_else(|| Fail::failed("no ownership row after the race"))?;
        ensure_eq!(o.holder, format!("r{w}"), "stored holder");
        ensure_eq!(o.fence, orphan_fence + 1, "stored fence: orphaned fence + 1");
    }
    Ok(())
}

/// Send `op` to every racer with one barrier time, then collect.
pub fn race(racers: &mut [crate::client::Lease<'_>], op: &str, args: impl Fn(usize) -> Value) -> Check<Vec<Reply>> {
    // Far enough ahead that every request is written before the instant.
    let at = now() + 0.25;
    let mut ids = Vec::with_capacity(racers.len());
    for (i, r) in racers.iter_mut().enumerate() {
        ids.push(r.send(op, args(i), Some(at))?);
    }
    let mut out = Vec::with_capacity(racers.len());
    for (r, id) in racers.iter_mut().zip(ids) {
        match r.recv(id, op)? {
            Reply::Err(e) if e.kind == "Unsupported" => {
                return Err(Fail::Errored(format!("adapter does not support {op}")))
            }
            reply => out.push(reply),
        }
    }
    Ok(out)
}

/// fencing: After orphan + recover, the old token — held by a live worker in
/// another process — can no longer write; nor can a restarted worker's
/// older incarnation under the same id.
pub fn fencing(cx: &Ctx<'_>) -> Check {
    let root = cx.root("store")?;
    let mut m = cx.adapter()?;
    let mut z = cx.adapter()?;
    ensure!(m.pid() != z.pid(), "runner bug: one process for both workers");
    m.open(&root)?;
    z.open(&root)?;
    let hid = new_handoff(&mut m, &root, 1)?;

    // z: a worker that stalls (alive, but its lease runs out).
    let stale = z.claim(&root, "w1", &hid)?;
    m.orphan_via_scan(&stale, "s1")?;
    let t2 = m.recover(&root, "w2", &hid)?;
    ensure!(t2.fence > stale.fence, "recover must bump the fence: {} after {}", t2.fence, stale.fence);
    ensure_eq!(m.checkpoint(&t2, json!({"s": 1}))?, 0, "the new owner's checkpoint seq");
    z.must_fail(
        "checkpoint",
        stale.with("state", json!({"s": 99})),
        &["FencingError"],
        "checkpoint with the stale token",
    )?;
    z.must_fail("complete", stale.with("result", json!({"x": 99})), OWNERSHIP_KINDS, "complete with the stale token")?;
    z.must_fail("heartbeat", stale.args(), OWNERSHIP_KINDS, "heartbeat with the stale token")?;

    // The same worker id, restarted in another process, recovers again:
    // the earlier incarnation's fence is now stale although the id matches.
    m.orphan_via_scan(&t2, "s1")?;
    let t3 = z.recover(&root, "w2", &hid)?;
    ensure!(t3.fence > t2.fence, "recover must bump the fence: {} after {}", t3.fence, t2.fence);
    m.must_fail(
        "checkpoint",
        t2.with("state", json!({"s": 98})),
        &["FencingError"],
        "checkpoint by the same worker id with its older fence",
    )?;
    ensure_eq!(z.checkpoint(&t3, json!({"s": 2}))?, 1, "the current owner's checkpoint seq");
    let st = z.status(&root, &hid)?;
    ensure_eq!(st["status"], json!("running"), "status");
    ensure_eq!(st["checkpoints"], json!(2), "checkpoint count (no stale write landed)");
    ensure_eq!(z.last_checkpoint(&root, &hid)?, Some(json!({"s": 2})), "last checkpoint");
    if let Some(db) = cx.store(&root)? {
        let states: Vec<Value> = db.verified_states(&hid)?.into_iter().map(|(_, s)| s).collect();
        ensure_eq!(states, vec![json!({"s": 1}), json!({"s": 2})], "checkpoint rows");
        let o = db.ownership(&hid)?.ok_or_else(|| Fail::failed("no ownership row"))?;
        ensure_eq!((o.holder.as_str(), o.fence), ("w2", t3.fence), "stored holder and fence");
    }
    Ok(())
}

/// leader-election: Of two supervisors (two processes) exactly one leads and only the
/// leader acts; when the leader's lease lapses the other takes over.
pub fn leader_election(cx: &Ctx<'_>) -> Check {
    let root = cx.root("store")?;
    let mut p1 = cx.adapter()?;
    let mut p2 = cx.adapter()?;
    p1.open(&root)?;
    p2.open(&root)?;
    let l1 = p1.ensure_leadership(&root, "s1")?;
    let l2 = p2.ensure_leadership(&root, "s2")?;
    ensure!(l1 && !l2, "leaders after s1 then s2 asked: s1={l1} s2={l2}, want exactly s1");
    let lead = p2.leadership(&root)?.ok_or_else(|| Fail::failed("no leadership after an election"))?;
    ensure_eq!(lead["holder"], json!("s1"), "leadership holder");
    ensure!(lead["expires_at"].as_f64().unwrap_or(0.0) > cx.now(), "the leader's term must be in the future: {lead}");

    // Only the leader acts.
    let hid = new_handoff(&mut p1, &root, 1)?;
    p1.claim(&root, "w1", &hid)?;
    p1.expire_lease(&root, &hid)?;
    let follower = p2.scan(&root, "s2")?;
    ensure!(action_for(&follower, &hid).is_none(), "a follower's scan acted: {follower:?}");
    ensure_eq!(p2.status(&root, &hid)?["status"], json!("running"), "status after a follower's scan");
    let acts = p1.scan(&root, "s1")?;
    ensure_eq!(action_for(&acts, &hid), Some("orphaned"), "the leader's scan action");

    // The leader dies: its term lapses and the standby is promoted.
    ensure!(p2.expire_leadership(&root)?, "expire_leadership changed nothing");
    ensure!(p2.ensure_leadership(&root, "s2")?, "s2 must take over an expired leadership");
    ensure!(!p1.ensure_leadership(&root, "s1")?, "s1 must not take leadership back from a live s2");
    let lead = p1.leadership(&root)?.ok_or_else(|| Fail::failed("no leadership after failover"))?;
    ensure_eq!(lead["holder"], json!("s2"), "holder after failover");
    ensure!(lead["expires_at"].as_f64().unwrap_or(0.0) > cx.now(), "the new term must be in the future: {lead}");
    if let Some(db) = cx.store(&root)? {
        let (holder, exp) = db.leadership()?.ok_or_else(|| Fail::failed("no leadership row"))?;
        ensure_eq!(holder, "s2", "stored leadership holder");
        ensure!(exp > cx.now(), "stored leadership expiry {exp} must be in the future");
    }
    Ok(())
}

/// transport: Shipping a handoff to a transport log and ingesting it elsewhere
/// reconstructs its checkpoints exactly; re-ingest adds nothing.
pub fn transport(cx: &Ctx<'_>) -> Check {
    let (ra, rb) = (cx.root("a")?, cx.root("b")?);
    let log = cx.path("t.log");
    let mut m = cx.adapter()?;
    m.open(&ra)?;
    m.open(&rb)?;
    let hid = new_handoff(&mut m, &ra, 1)?;
    let t = m.claim(&ra, "w1", &hid)?;
    m.ship_envelope(&ra, &hid, &log)?;
    for i in 0..3 {
        let seq = m.checkpoint(&t, json!({"s": i}))?;
        m.ship_checkpoint(&log, seq, json!({"s": i}))?;
    }
    check_log_format(&log, &hid, 3)?;

    let out = m.ingest(&rb, &log)?;
    ensure_eq!(out["handoff_id"], json!(hid), "ingested handoff_id");
    ensure_eq!(out["checkpoints_ingested"], json!(3), "checkpoints_ingested");
    ensure_eq!(out["lines_skipped"], json!(0), "lines_skipped");
    ensure_eq!(m.last_checkpoint(&rb, &hid)?, Some(json!({"s": 2})), "last checkpoint after ingest");
    ensure_eq!(m.status(&rb, &hid)?["status"], json!("pending"), "an ingested handoff arrives pending");
    let again = m.ingest(&rb, &log)?;
    crate::ensure_json!(
        again["checkpoints_ingested"],
        json!(3),
        "§8.3 (checkpoints_ingested counts the verified checkpoint lines read, stored now or before): a re-ingest of the same 3-checkpoint log reports"
    );
    ensure_eq!(m.status(&rb, &hid)?["checkpoints"], json!(3), "checkpoints after re-ingest");
    if let Some(db) = cx.store(&rb)? {
        let states = db.verified_states(&hid)?;
        ensure_eq!(states, (0..3).map(|i| (i, json!({"s": i}))).collect::<Vec<_>>(), "checkpoint rows after re-ingest");
    }
    Ok(())
}

/// The log's bytes are the wire format: Python `json.dumps(obj,
/// sort_keys=True)` lines; the envelope first (checkpoints emptied), then
/// one verified line per checkpoint.
pub fn check_log_format(log: &str, hid: &str, checkpoints: i64) -> Check {
    let text = std::fs::read_to_string(log).map_err(|e| Fail::failed(format!("transport log {log}: {e}")))?;
    ensure!(text.ends_with('\n'), "transport log must end with a newline");
    let lines: Vec<&str> = text.lines().collect();
    ensure_eq!(lines.len() as i64, checkpoints + 1, "transport log lines");
    for (i, line) in lines.iter().enumerate() {
        let v: Value =
            serde_json::from_str(line).map_err(|e| Fail::failed(format!("log line {} is not JSON: {e}", i + 1)))?;
        let canon = dhp_oracle::json::sorted(&v).map_err(|e| Fail::failed(e.to_string()))?;
        ensure!(
            &canon == line,
            "log line {} is not json.dumps(obj, sort_keys=True):\n  got  {line}\n  want {canon}",
            i + 1
        );
        if i == 0 {
            ensure_eq!(v["type"], json!("envelope"), "type of log line 1");
            ensure_eq!(v["envelope"]["handoff_id"], json!(hid), "envelope id in the log");
            ensure_eq!(v["envelope"]["execution"]["checkpoints"], json!([]), "envelope checkpoints in the log");
            ensure!(dhp_oracle::id_verifies(&v["envelope"]), "the logged envelope does not verify");
        } else {
            ensure_eq!(v["type"], json!("checkpoint"), "type of log line {}", i + 1);
            ensure_eq!(v["seq"], json!(i - 1), "seq of log line {}", i + 1);
            let hash = dhp_oracle::state_hash(&v["state"]).map_err(|e| Fail::failed(e.to_string()))?;
            ensure_eq!(v["state_hash"], json!(hash), "state_hash of log line {}", i + 1);
            ensure!(v["at"].is_string(), "log line {} has no `at` timestamp", i + 1);
        }
    }
    Ok(())
}

/// dead-letter-queue: When max_attempts is exhausted the handoff is dead-lettered:
/// failed with its error and checkpoints kept, never silently dropped.
pub fn dead_letter_queue(cx: &Ctx<'_>) -> Check {
    let root = cx.root("store")?;
    let mut m = cx.adapter()?;
    m.open(&root)?;
    let budget = json!({"max_steps": 10, "max_spend_usd": 1.0, "max_wallclock_s": 60.0, "max_attempts": 1});
    let hid = new_handoff_with(&mut m, &root, spec_with(1, json!({"budget": budget})))?;
    let t = m.claim(&root, "w1", &hid)?;
    m.checkpoint(&t, json!({"s": 1}))?;
    m.orphan_via_scan(&t, "s1")?;
    let t2 = m.recover(&root, "w2", &hid)?;
    m.checkpoint(&t2, json!({"s": 2}))?;
    m.expire_lease(&root, &hid)?;
    let acts = m.scan(&root, "s1")?;
    ensure_eq!(action_for(&acts, &hid), Some("dlq"), "scan action once max_attempts is exhausted (actions {acts:?})");
    let st = m.status(&root, &hid)?;
    ensure_eq!(st["status"], json!("failed"), "status in the dead-letter queue");
    ensure!(st["error"].as_str().is_some_and(|e| !e.is_empty()), "a dead-lettered handoff must say why: {st}");
    ensure_eq!(st["checkpoints"], json!(2), "checkpoints kept in the dead-letter queue");
    m.must_refuse("recover", json!({"root": root, "worker": "w3", "hid": hid}), "recover of a dead-lettered handoff")?;
    m.must_refuse("claim", json!({"root": root, "worker": "w3", "hid": hid}), "claim of a dead-lettered handoff")?;
    if let Some(db) = cx.store(&root)? {
        ensure_eq!(db.status(&hid)?, "failed", "stored status");
        ensure_eq!(db.verified_states(&hid)?.len(), 2, "stored checkpoint rows");
    }
    Ok(())
}
