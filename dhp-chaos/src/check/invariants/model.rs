//! model: every change the store audit recorded is the effect of a legal
//! operation of `dhp-model` from the model's state just before it
//! (docs/chaos-model.md).
//!
//! The judge is fed two streams, merged by time: the audit's changes, in
//! commit order, and the facts the harness itself owns — deaths (its
//! SIGKILLs and the exits it reaped), its SIGSTOPs and SIGCONTs, the chunks
//! its workload service served and the workers it stopped at a served
//! chunk. Nothing comes from the processes under test. The verdict must
//! have read the whole audit: a judge that consumed fewer changes than the
//! audit holds is a violation of its own.

use crate::audit::Event;
use crate::check::ctx::Ctx;
use crate::check::findings::Findings;
use crate::check::CHECK_THEN_WRITE;
use dhp_model::judge::{Change, Fact, Judge, Params, ProcClock, Report, Table, Variant, Violation};
use serde_json::Value;
use std::collections::{HashMap, HashSet};

/// How many undecidable items the verdict lists one by one (the rest are counted).
const LIST_MAX: usize = 20;

pub(super) fn check(cx: &Ctx<'_>) -> Findings {
    let mut out = Findings::default();
    let Some(a) = cx.audit else { return out };
    let changes = match changes(&a.events) {
        Ok(c) => c,
        Err(why) => {
            out.plain(format!("the store audit cannot be judged: {why}"));
            return out;
        }
    };
    let variant = variant(cx);
    let mut judge = Judge::new(variant, params(cx));
    for (hid, last) in pre_audit_checkpoints(cx, &changes) {
        out.note(format!(
            "{hid}: checkpoints 0..={last} were in the store before the audit began (written by `dhp ingest` before the harness installed its triggers), taken as the start"
        ));
        judge.seed_checkpoints(&hid, last);
    }
    let report = judge.run(changes, facts(cx, &a.events));
    file(&mut out, &report, a.events.len(), variant);
    out
}

/// Per handoff, the last seq of the checkpoints the store holds that no
/// audited INSERT made: rows written before the triggers were installed (a
/// standby's store, ingested from the shipped log). Only a gap-free prefix
/// below every audited checkpoint counts; anything else is left for the
/// judge to find wrong.
fn pre_audit_checkpoints(cx: &Ctx<'_>, changes: &[Change]) -> Vec<(String, i64)> {
    let mut audited: HashMap<&str, Vec<i64>> = HashMap::new();
    for c in changes.iter().filter(|c| c.table == Table::Checkpoints) {
        let seq = c.new.as_ref().or(c.old.as_ref()).and_then(|r| r.get("seq")).and_then(Value::as_i64);
        if let (Some(hid), Some(seq)) = (c.hid.as_deref(), seq) {
            audited.entry(hid).or_default().push(seq);
        }
    }
    let mut out = Vec::new();
    for (hid, h) in cx.store.iter() {
        let mine = audited.get(hid.as_str()).map(Vec::as_slice).unwrap_or(&[]);
        let before: Vec<i64> = h.ckpts.iter().map(|c| c.seq).filter(|s| !mine.contains(s)).collect();
        let Some(&last) = before.iter().max() else { continue };
        let prefix = before.len() as i64 == last + 1 && before.iter().enumerate().all(|(i, &s)| s == i as i64);
        if prefix && mine.iter().all(|&s| s > last) {
            out.push((hid.clone(), last));
        }
    }
    out
}

/// The strict model, except for a round that ran the reference's workers:
/// there the check-then-write variant, whose excused steps are filed as
/// the known weakness (allowed only under `--allow-known-reference-bugs`).
fn variant(cx: &Ctx<'_>) -> Variant {
    let reference = cx.ix.spawns.values().any(|s| s.role == "worker" && s.imp == "python");
    if reference {
        Variant::CheckThenWrite
    } else {
        Variant::Strict
    }
}

/// The store's configuration, from the round's `round.json`.
fn params(cx: &Ctx<'_>) -> Params {
    let mut p = Params { leader_ttl_s: cx.cfg.timing.leader_ttl_s, ..Params::default() };
    if let Some(m) = cx.cfg.max_attempts.and_then(|m| u64::try_from(m).ok()) {
        p.default_max_attempts = u32::try_from(m).unwrap_or(u32::MAX);
    }
    // faked clocks (the harness's spawn records): their times go back to
    // the harness's clock before they meet a fact
    for (name, (started, skew)) in &cx.ix.skews {
        p.clocks.insert(name.clone(), ProcClock { started: *started, offset_s: skew.offset_s, rate: skew.rate });
    }
    p
}

/// The audit's rows as the judge's changes, in commit order.
pub(crate) fn changes(events: &[Event]) -> Result<Vec<Change>, String> {
    events
        .iter()
        .map(|e| {
            Ok(Change {
                seq: e.seq,
                table: e.table.parse().map_err(|err| format!("audit seq {}: {err}", e.seq))?,
                op: e.op.parse().map_err(|err| format!("audit seq {}: {err}", e.seq))?,
                hid: e.hid.clone(),
                old: e.old.clone(),
                new: e.new.clone(),
                at: e.at,
                txn: e.xid,
                began_at: e.began,
            })
        })
        .collect()
}

/// The harness's own process facts, unsorted. From the workload service's
/// record: for each committed checkpoint, the request whose answer (its
/// stamp) it carries (`CarriedBy`: the judge's writer of that checkpoint),
/// and those served chunks — a chunk nobody committed (its worker paused
/// or killed before writing) says nothing about any write, and the store's
/// clock (`julianday('now')`, 1 ms) can put a serve just after its commit,
/// outside the judge's time window.
fn facts(cx: &Ctx<'_>, events: &[Event]) -> Vec<Fact> {
    let mut out = Vec::new();
    let mut died: std::collections::HashMap<&str, f64> = cx.ix.exits.iter().map(|(n, t)| (n.as_str(), *t)).collect();
    for f in &cx.ix.faults {
        let (Some(victim), t) = (f.s("victim"), f.t()) else { continue };
        // PostgreSQL: the harness terminated the backend of the victim's
        // liveness session — its token dropped, so to the protocol (§7.5,
        // the liveness fast path) the holder is gone; it is fenced at its
        // next write (a worker) or renewal (a supervisor)
        let liveness_cut = f.s("kind") == Some("db-terminate-backend")
            && f.get("liveness_connection").and_then(Value::as_bool) == Some(true);
        if liveness_cut {
            let d = died.entry(victim).or_insert(t);
            *d = d.min(t);
        }
        // the database lost or changed its primary: every session, and with
        // it every liveness token, is gone at once; a holder of a lease or
        // of the leadership before it is, to the protocol, gone too (§7.5)
        if f.s("kind").is_some_and(|k| SESSIONS_CUT.contains(&k)) {
            for h in holders_before(events, t, &["ownership", "leadership"]) {
                let d = died.entry(h).or_insert(t);
                *d = d.min(t);
            }
        }

        match f.s("signal") {
            // its SIGKILL is the death; the exit is reaped a little later
            Some("KILL") => {
                let d = died.entry(victim).or_insert(t);
                *d = d.min(t);
            }
            Some("STOP") => match (f.s("kind"), f.hid(), f.i("chunk_fence")) {
                (Some(crate::workload::STOP_AT_CHUNK), Some(hid), Some(fence)) => {
                    out.push(Fact::StoppedAtChunk { holder: victim.to_string(), hid: hid.to_string(), fence, at: t })
                }
                _ => out.push(Fact::Stopped { holder: victim.to_string(), at: t }),
            },
            Some("CONT") => out.push(Fact::Continued { holder: victim.to_string(), at: t }),
            _ => {}
        }
    }
    out.extend(died.into_iter().map(|(h, at)| Fact::Died { holder: h.to_string(), at }));
    // A toxic that breaks the workers' database link (only theirs:
    // supervisors connect directly) ends their sessions, the liveness
    // lock's too: a worker riding through it is alive, but to the protocol
    // (§7.5) may be taken for dead until it retakes its lock — the same
    // window the no-false-orphans invariant allows (crate::check::db_link).
    let t_end = cx.meta["t_end"].as_f64().unwrap_or(f64::INFINITY);
    for w in crate::check::db_link::windows(cx.ix, t_end).iter().filter(|w| w.cuts) {
        for h in holders_before(events, w.t, &["ownership"]) {
            let until = w.heal + crate::check::db_link::RETAKE_S;
            out.push(Fact::TokenLost { holder: h.to_string(), at: w.t, until });
        }
    }
    if let Some(w) = &cx.workload {
        // stamp → (hid, seq) of the checkpoint that carries it
        let carried: HashMap<String, (String, i64)> = events.iter().filter_map(carried).collect();
        for (stamp, (hid, seq)) in &carried {
            if let Some(s) = w.by_stamp(stamp).filter(|s| &s.hid == hid) {
                let holder = s.holder.clone();
                out.push(Fact::CarriedBy { holder, hid: hid.clone(), seq: *seq, fence: s.fence, at: s.t });
            }
        }
        let committed: HashSet<&String> = carried.keys().collect();
        out.extend(w.served.iter().filter(|s| committed.contains(&s.stamp)).map(|s| Fact::ChunkServed {
            holder: s.holder.clone(),
            hid: s.hid.clone(),
            fence: s.fence,
            at: s.t,
        }));
    }
    out
}

/// Database faults that end every client session (crash, failover,
/// switchover, the primary cut off).
const SESSIONS_CUT: [&str; 4] = ["db-crash", "db-failover", "db-switchover", "db-primary-partition"];

/// Every holder a row of `tables` (ownership, leadership) named before `t`.
fn holders_before<'a>(events: &'a [Event], t: f64, tables: &[&str]) -> HashSet<&'a str> {
    events
        .iter()
        .filter(|e| e.at <= t && tables.contains(&e.table.as_str()))
        .filter_map(|e| e.new.as_ref()?.get("holder")?.as_str())
        .filter(|h| *h != "__orphaned__")
        .collect()
}

/// The workload stamp a checkpoint INSERT carries in its state, with the
/// checkpoint's (hid, seq).
fn carried(e: &Event) -> Option<(String, (String, i64))> {
    if e.table != "checkpoints" || e.op != "INSERT" {
        return None;
    }
    let row = e.new.as_ref()?;
    let st: Value = match row.get("state_json")? {
        Value::String(t) => serde_json::from_str(t).ok()?,
        v => v.clone(),
    };
    let stamp = st.get("stamp")?.as_str()?.to_string();
    Some((stamp, (e.hid.clone()?, row.get("seq")?.as_i64()?)))
}

/// The judge's report as findings: violations plain (no taint excuses
/// them), excused steps as the known weakness, counts as notes.
fn file(out: &mut Findings, r: &Report, audit_len: usize, variant: Variant) {
    let decided = r.legal + r.excused.len() + r.violations.len();
    out.checked = decided as u64;
    if r.consumed != audit_len || !r.all_judged() {
        out.plain(format!(
            "the judge consumed {} of the audit's {audit_len} changes and accounted for {} (legal {} + flagged {} + indeterminate {}): a verdict over part of the audit proves nothing",
            r.consumed,
            r.legal + r.flagged + r.indeterminate,
            r.legal,
            r.flagged,
            r.indeterminate
        ));
    }
    for v in &r.violations {
        out.plain(violation_text(v));
    }
    for e in &r.excused {
        out.known(format!("[{}] audit seq {}: {}", e.rule, e.seq, e.why), CHECK_THEN_WRITE);
    }
    out.note(format!(
        "judged {} of {audit_len} audit changes against the {} model: {} legal, {} excused, {} violation(s), {} indeterminate, {} undecidable",
        r.consumed,
        match variant {
            Variant::CheckThenWrite => "check-then-write",
            _ => "strict",
        },
        r.legal,
        r.excused.len(),
        r.violations.len(),
        r.indeterminate,
        r.undecidable.len(),
    ));
    for u in r.undecidable.iter().take(LIST_MAX) {
        out.note(format!("undecidable: {u}"));
    }
    if r.undecidable.len() > LIST_MAX {
        out.note(format!("… and {} more undecidable", r.undecidable.len() - LIST_MAX));
    }
}

/// One violation for people: rule, seq, rows before and after, the closest operations.
pub(crate) fn violation_text(v: &Violation) -> String {
    let row = |r: &Option<Value>| r.as_ref().map_or_else(|| "none".to_string(), Value::to_string);
    let closest = if v.closest.is_empty() { "none".to_string() } else { v.closest.join("; ") };
    format!(
        "[{}] audit seq {}: {} (before: {}; after: {}; closest: {})",
        v.rule,
        v.seq,
        v.message,
        row(&v.before),
        row(&v.after),
        closest
    )
}
