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
use dhp_model::judge::{Change, Fact, Judge, Params, Report, Variant, Violation};
use serde_json::Value;

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
    let start = initial(&a.events);
    let all: Vec<Change> = start.iter().cloned().chain(changes).collect();
    let report = judge(variant, params(cx), &all, facts(cx, &a.events));
    file(&mut out, &report, a.events.len(), start.len(), variant);
    out
}

/// The store as the audit found it, as INSERTs at seq 0: the audit is
/// installed after `dhp dispatch` (or a standby's `dhp ingest`), so the
/// rows that existed then show up first as the `old` of their first change.
/// A row whose first change is an INSERT did not exist yet.
pub(crate) fn initial(events: &[Event]) -> Vec<Change> {
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for e in events {
        let key = match e.table.as_str() {
            "checkpoints" => format!("checkpoints/{}/{}", e.hid.as_deref().unwrap_or(""), row_seq(e)),
            t => format!("{t}/{}", e.hid.as_deref().unwrap_or("")),
        };
        if !seen.insert(key) || e.op == "INSERT" {
            continue;
        }
        let (Some(old), Ok(table)) = (&e.old, e.table.parse()) else { continue };
        out.push(Change {
            seq: 0,
            table,
            op: dhp_model::judge::RowOp::Insert,
            hid: e.hid.clone(),
            old: None,
            new: Some(old.clone()),
            at: e.at,
            txn: None,
        });
    }
    out
}

/// The `seq` column of a checkpoint change's row.
fn row_seq(e: &Event) -> i64 {
    e.row().and_then(|r| r.get("seq")).and_then(Value::as_i64).unwrap_or(-1)
}

/// Run the judge over `changes` and `facts`, merged by time: a fact is fed
/// before the first change stamped after it.
pub(crate) fn judge(variant: Variant, params: Params, changes: &[Change], mut facts: Vec<Fact>) -> Report {
    facts.sort_by(|a, b| a.at().total_cmp(&b.at()));
    let mut j = Judge::new(variant, params);
    let mut pending = facts.into_iter().peekable();
    for c in changes {
        while let Some(f) = pending.next_if(|f| f.at() <= c.at) {
            j.fact(f);
        }
        j.change(c);
    }
    pending.for_each(|f| j.fact(f));
    j.finish()
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
    let mut p = Params::default();
    if let Some(ttl) = cx.meta["config"]["timing"]["leader_ttl_s"].as_f64() {
        p.leader_ttl_s = ttl;
    }
    if let Some(m) = cx.meta["config"]["max_attempts"].as_u64() {
        p.default_max_attempts = u32::try_from(m).unwrap_or(u32::MAX);
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
                txn: None,
            })
        })
        .collect()
}

/// The harness's own process facts, unsorted. Of the chunks its workload
/// service served, only those whose answer (its stamp) a committed
/// checkpoint carries: the judge names a checkpoint's writer from the one
/// worker served since the previous checkpoint, and a chunk nobody
/// committed (its worker paused or killed before writing) says nothing
/// about any write — while the store's clock (`julianday('now')`, 1 ms)
/// can put the serve of the chunk actually committed just after the commit.
fn facts(cx: &Ctx<'_>, events: &[Event]) -> Vec<Fact> {
    let mut out = Vec::new();
    let mut died: std::collections::HashMap<&str, f64> = cx.ix.exits.iter().map(|(n, t)| (n.as_str(), *t)).collect();
    for f in &cx.ix.faults {
        let (Some(victim), t) = (f.s("victim"), f.t()) else { continue };
        match f.s("signal") {
            // its SIGKILL is the death; the exit is reaped a little later
            Some("KILL") => {
                let d = died.entry(victim).or_insert(t);
                *d = d.min(t);
            }
            Some("STOP") => match (f.s("kind"), f.hid(), f.i("chunk_fence")) {
                (Some(crate::workload::STOP_AT_CHUNK), Some(hid), Some(fence)) => out.push(Fact::StoppedAtChunk {
                    holder: victim.to_string(),
                    hid: hid.to_string(),
                    fence,
                    at: t,
                }),
                _ => out.push(Fact::Stopped { holder: victim.to_string(), at: t }),
            },
            Some("CONT") => out.push(Fact::Continued { holder: victim.to_string(), at: t }),
            _ => {}
        }
    }
    out.extend(died.into_iter().map(|(h, at)| Fact::Died { holder: h.to_string(), at }));
    if let Some(w) = &cx.workload {
        let committed: std::collections::HashSet<String> = events.iter().filter_map(stamp).collect();
        out.extend(w.served.iter().filter(|s| committed.contains(&s.stamp)).map(|s| Fact::ChunkServed {
            holder: s.holder.clone(),
            hid: s.hid.clone(),
            fence: s.fence,
            at: s.t,
        }));
    }
    out
}

/// The workload stamp a checkpoint INSERT carries in its state.
fn stamp(e: &Event) -> Option<String> {
    if e.table != "checkpoints" || e.op != "INSERT" {
        return None;
    }
    let st = e.new.as_ref()?.get("state_json")?;
    let st: Value = match st {
        Value::String(t) => serde_json::from_str(t).ok()?,
        v => v.clone(),
    };
    st.get("stamp")?.as_str().map(String::from)
}

/// The judge's report as findings: violations plain (no taint excuses
/// them), excused steps as the known weakness, counts as notes.
fn file(out: &mut Findings, r: &Report, audit_len: usize, seeded: usize, variant: Variant) {
    let decided = r.legal + r.excused.len() + r.violations.len();
    out.checked = decided as u64;
    if r.consumed != audit_len + seeded || !r.all_judged() {
        out.plain(format!(
            "the judge consumed {} of the audit's {audit_len} changes (+ {seeded} initial rows) and accounted for {} (legal {} + flagged {} + indeterminate {}): a verdict over part of the audit proves nothing",
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
        "judged {} of {audit_len} audit changes (after {seeded} initial rows, the store as the audit found it) against the {} model: {} legal, {} excused, {} violation(s), {} indeterminate, {} undecidable",
        r.consumed - seeded,
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
