//! The invariant checker. Runs after a round from files only — the SQLite
//! store, the transport logs, `history.jsonl` and `round.json` — so
//! `dhp-chaos analyze DIR` re-checks a saved run with exactly the same code.
//!
//! The recorded history is the ground truth for who did what and when; the
//! store is the ground truth for what was committed. Where they disagree,
//! that is a finding (an acknowledged write that is not in the store, a
//! committed write no process recorded).

mod history;
mod load;
mod report;

pub use load::{is_pruned_round_dir, is_round_dir, load_saved_report, load_store, Ckpt, Handoff};
pub use report::{stats, FaultLatency, Invariant, Latencies, RoundReport, Stalls, Stats, Zombies};

use crate::hist;
use history::{index, Index, Op};
use crate::round::{Paths, ORPHANED};
use anyhow::{Context, Result};
use dhp_core::census;
use dhp_core::transport::log as tlog;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::Path;

fn inline_u64(env: &Value, k: &str) -> Option<u64> {
    env.pointer(&format!("/task/inputs/inline/{k}")).and_then(Value::as_u64)
}

fn iso_to_epoch(s: &str) -> Option<f64> {
    chrono::DateTime::parse_from_rfc3339(s).ok().map(|d| d.timestamp_micros() as f64 / 1e6)
}

/// An optional value for people: the value, or "none" (never `Some(…)`).
fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or_else(|| "none".into(), |v| v.to_string())
}

fn short(h: &str) -> &str {
    &h[..h.len().min(12)]
}

// ---------------------------------------------------------------- per-handoff facts

/// The census state a correct run has after `k+1` chunks, for every k.
fn expected_chain(lo: u64, hi: u64, chunk: u64) -> Vec<(u64, u64, u64)> {
    let mut out = Vec::new();
    let (mut n, mut c, mut s) = (lo, 0u64, 0u64);
    while n < hi {
        let end = (n + chunk).min(hi);
        let (dc, ds) = census::chunk(n, end);
        c += dc;
        s += ds;
        n = end;
        out.push((n, c, s));
    }
    out
}

/// Who wrote each committed checkpoint, as far as the history tells.
#[derive(Debug, Clone)]
struct Writer {
    holder: String,
    process: String,
    fence: i64,
    invoke_t: f64,
    acknowledged: bool,
}

struct Ctx<'a> {
    ix: Index<'a>,
}

impl Ctx<'_> {
    fn imp_of(&self, process: &str) -> String {
        self.ix.spawns.get(process).map(|s| s.imp.clone()).unwrap_or_else(|| "unknown".into())
    }

    /// Every worker spawned for `hid` recorded history (or never got to).
    fn history_complete(&self, hid: &str) -> bool {
        self.ix
            .spawns
            .iter()
            .filter(|(_, s)| s.role == "worker" && s.hid.as_deref() == Some(hid))
            .all(|(name, s)| s.imp != "cmd" || self.ix.processes_with_history.contains(name))
    }

    fn grants(&self, hid: &str) -> Vec<&Op> {
        let mut g: Vec<&Op> = self
            .ix
            .ops
            .iter()
            .filter(|o| o.hid == hid && (o.op == "claim" || o.op == "recover") && o.ok == Some(true))
            .collect();
        g.sort_by(|a, b| a.out_t.unwrap_or(a.invoke_t).total_cmp(&b.out_t.unwrap_or(b.invoke_t)));
        g
    }

    /// The earliest recorded time at which fence `f` of `hid` was superseded
    /// (a newer fence granted, or the handoff orphaned past it). Both are
    /// recorded after their commit, so an operation invoked later than this
    /// must be rejected.
    fn superseded_at(&self, hid: &str, f: i64) -> Option<(f64, String)> {
        let mut best: Option<(f64, String)> = None;
        for g in self.grants(hid) {
            if g.fence.is_some_and(|gf| gf > f) {
                let t = g.out_t.unwrap_or(g.invoke_t);
                if best.as_ref().is_none_or(|b| t < b.0) {
                    best = Some((t, format!("{} got fence {}", g.holder, g.fence.unwrap_or(-1))));
                }
            }
        }
        for o in &self.ix.orphans {
            if o.hid == hid && o.fence.is_some_and(|of| of > f) && best.as_ref().is_none_or(|b| o.t < b.0) {
                best = Some((o.t, format!("{} orphaned it to fence {}", o.supervisor, o.fence.unwrap_or(-1))));
            }
        }
        best
    }
}

// ---------------------------------------------------------------- the checks

/// One handoff's violations, held back until we know whether they start at
/// a documented weakness of the reference (then they are filed as known).
#[derive(Default)]
struct Findings {
    items: Vec<(&'static str, String)>,
    taint: Option<String>,
}

impl Findings {
    fn push(&mut self, inv: &'static str, msg: String) {
        self.items.push((inv, msg));
    }
    fn taint(&mut self, why: &str) {
        if self.taint.is_none() {
            self.taint = Some(why.to_string());
        }
    }
}

/// Torn claim/recover of the reference: ownership row and envelope status
/// are separate autocommit statements, so a kill between them leaves a
/// handoff that no claim, recover or orphan can move again.
pub const TORN_START: &str =
    "torn claim/recover: the ownership row and the envelope are separate autocommit statements";
/// The reference's worker does not re-ship what the peer lacks when it
/// takes a handoff over (docs/PROTOCOL.md §13.9: commit, then ship, no catch-up).
pub const NO_CATCH_UP: &str = "no catch-up: a reference worker that takes a handoff over does not re-ship the seqs the peer lacks (docs/PROTOCOL.md §13.9)";
/// Non-atomic check-then-write of the reference (docs/PROTOCOL.md §13.2).
pub const CHECK_THEN_WRITE: &str =
    "check-then-write: ownership check and write are separate statements (docs/PROTOCOL.md §13.2)";

/// Check a round directory.
pub fn check_round(dir: &Path) -> Result<RoundReport> {
    let paths = Paths::new(dir);
    let meta: Value = serde_json::from_slice(
        &std::fs::read(&paths.meta).with_context(|| format!("reading {}", paths.meta.display()))?,
    )?;
    let history = hist::load(&paths.history)?;
    let store = load_store(&paths.store.join("dhp.sqlite3"))?;
    let hids: Vec<String> = meta["hids"]
        .as_array()
        .map(|a| a.iter().filter_map(|h| h.as_str().map(String::from)).collect())
        .unwrap_or_default();
    let cx = Ctx { ix: index(&history) };
    let tcp = matches!(meta["config"]["ship"].as_str(), Some("tcp") | Some("tcp-async"));

    let mut outcome = Invariant::new(
        "outcome",
        "every handoff completed, or parked in the DLQ after max_attempts; nothing left running/orphaned/pending",
    );
    let mut result = Invariant::new("result", "each completed result equals the census recomputed from scratch");
    let mut once =
        Invariant::new("exactly-once", "each handoff's completion committed exactly once, by the current fence holder");
    let mut chain = Invariant::new(
        "checkpoints",
        "seqs continuous 0..n-1, hashes valid, each state is the census up to its next_n (no rework, nothing skipped)",
    );
    let mut fencing = Invariant::new("fencing", "along commit order fences never go backwards, no two holders' writes interleave, no write after its fence was superseded, every acknowledged write is in the store");
    let mut zombie_inv = Invariant::new("zombies", "a paused worker woken after it was replaced commits nothing");
    let mut transport = Invariant::new(
        "transport",
        "the peer's transport log agrees with the store (identity, hashes, every committed seq present)",
    );
    let mut rework_inv = Invariant::new("rework", "work redone per fault is at most one chunk");
    let mut detect =
        Invariant::new("detection", "every worker that died holding a lease was orphaned (or had completed)");
    let mut false_orphans = Invariant::new(
        "no-false-orphans",
        "a handoff orphaned as worker-died (liveness token dropped) was held by a process that had really died",
    );

    let mut checkpoints_total = 0u64;
    let mut completed = 0;
    let mut dlq = 0;
    let final_state = meta.get("final").cloned().unwrap_or(Value::Null);
    let mut tainted: HashMap<String, String> = HashMap::new();
    // hid → next_n → the process that committed that chunk (None: not attributable)
    let mut chunk_writer: HashMap<String, HashMap<u64, Option<String>>> = HashMap::new();
    // A reference worker stopped between its ownership check and its write,
    // replaced, then woken: its write lands after the successor's grant.
    for f in cx.ix.faults.iter().filter(|f| f.s("signal") == Some("STOP")) {
        let victim = f.s("victim").unwrap_or("");
        let (Some(hid), Some(fence)) = (f.hid(), f.i("lease_fence")) else { continue };
        if cx.imp_of(victim) != "python" {
            continue;
        }
        let Some(tc) = cx
            .ix
            .faults
            .iter()
            .find(|c| c.s("signal") == Some("CONT") && c.s("victim") == Some(victim) && c.t() >= f.t())
            .map(|c| c.t())
        else {
            continue;
        };
        let replaced = cx.superseded_at(hid, fence).is_some_and(|(t, _)| t < tc);
        let late_write = cx.ix.ops.iter().any(|o| {
            o.process == victim
                && o.invoke_t <= f.t()
                && (o.op == "checkpoint" || o.op == "complete")
                && o.ok == Some(true)
                && o.out_t.is_some_and(|t| t >= tc)
        });
        if replaced && late_write {
            tainted.entry(hid.to_string()).or_insert_with(|| CHECK_THEN_WRITE.to_string());
        }
    }

    for hid in &hids {
        let mut fnd = Findings { taint: tainted.get(hid).cloned(), ..Findings::default() };
        let Some(h) = store.get(hid) else {
            fnd.push("outcome", format!("{}: dispatched but not in the store", short(hid)));
            continue;
        };
        let env = &h.env;
        let (Some(lo), Some(hi), Some(chunk)) =
            (inline_u64(env, "lo"), inline_u64(env, "hi"), inline_u64(env, "chunk"))
        else {
            fnd.push("outcome", format!("{}: not a census handoff", short(hid)));
            continue;
        };
        let chunk = chunk.max(1);
        let exp_chain = expected_chain(lo, hi, chunk);
        let hist_complete = cx.history_complete(hid);

        // ---- outcome
        outcome.checked += 1;
        match h.status.as_str() {
            "completed" => completed += 1,
            "failed" => {
                let err = env.pointer("/execution/error").and_then(Value::as_str).unwrap_or("");
                let attempt = env.pointer("/execution/attempt").and_then(Value::as_i64).unwrap_or(0);
                let max_att = env.pointer("/contract/budget/max_attempts").and_then(Value::as_i64).unwrap_or(3);
                if err.contains("DLQ") && attempt >= max_att {
                    dlq += 1;
                    outcome.notes.push(format!(
                        "{}: in the DLQ after {attempt} attempts ({} checkpoints kept)",
                        short(hid),
                        h.ckpts.len()
                    ));
                } else {
                    fnd.push(
                        "outcome",
                        format!(
                            "{}: failed but not a max-attempts DLQ park: attempt {attempt}/{max_att}, error {err:?}",
                            short(hid)
                        ),
                    );
                }
            }
            other => {
                let f = &final_state[hid.as_str()];
                let alive = f["owner_alive"].as_bool().unwrap_or(false);
                // a reference worker killed inside claim/recover left its ownership row behind
                if let Some((holder, _)) = &h.own {
                    let torn = cx.imp_of(holder) == "python"
                        && cx.ix.exits.contains_key(holder)
                        && cx.ix.ops.iter().any(|o| {
                            &o.process == holder
                                && &o.hid == hid
                                && (o.op == "claim" || o.op == "recover")
                                && o.ok.is_none()
                        });
                    if torn {
                        fnd.taint(TORN_START);
                    }
                }
                fnd.push(
                    "outcome",
                    format!(
                        "{}: stuck in {other:?} at the end (holder {}, fence {}, owner process alive: {alive})",
                        short(hid),
                        opt(h.own.as_ref().map(|o| &o.0)),
                        opt(h.own.as_ref().map(|o| o.1))
                    ),
                );
            }
        }

        // ---- checkpoints chain
        chain.checked += h.ckpts.len() as u64;
        checkpoints_total += h.ckpts.len() as u64;
        for (k, c) in h.ckpts.iter().enumerate() {
            if c.seq != k as i64 {
                fnd.push("checkpoints", format!("{}: seq gap/duplicate: position {k} holds seq {}", short(hid), c.seq));
                break;
            }
            let hash = dhp_core::json::sha256_hex(c.state_json.as_bytes());
            if hash != c.state_hash {
                fnd.push("checkpoints", format!("{}: seq {} state_hash does not match state_json", short(hid), c.seq));
            }
            let got = (c.state["next_n"].as_u64(), c.state["count"].as_u64(), c.state["total"].as_u64());
            match exp_chain.get(k) {
                Some(&(n, cnt, tot)) if got == (Some(n), Some(cnt), Some(tot)) => {}
                Some(&(n, cnt, tot)) => {
                    fnd.push("checkpoints", format!(
                        "{}: seq {k} is {{next_n {}, count {}, total {}}}, the census says {{{n}, {cnt}, {tot}}} (rework or a wrong resume point)",
                        short(hid), opt(got.0), opt(got.1), opt(got.2)
                    ));
                    break;
                }
                None => {
                    fnd.push(
                        "checkpoints",
                        format!(
                            "{}: seq {k} is beyond the last chunk ({} chunks): work was redone",
                            short(hid),
                            exp_chain.len()
                        ),
                    );
                    break;
                }
            }
        }
        if h.status == "completed" && h.ckpts.len() != exp_chain.len() {
            fnd.push(
                "checkpoints",
                format!(
                    "{}: completed with {} checkpoints, the census has {} chunks",
                    short(hid),
                    h.ckpts.len(),
                    exp_chain.len()
                ),
            );
        }

        // ---- attribution of committed checkpoints to writers
        let ops_h: Vec<&Op> = cx.ix.ops.iter().filter(|o| &o.hid == hid).collect();
        let mut writers: BTreeMap<i64, Writer> = BTreeMap::new();
        let by_seq: HashMap<i64, &Ckpt> = h.ckpts.iter().map(|c| (c.seq, c)).collect();
        for o in ops_h.iter().filter(|o| o.op == "checkpoint" && o.ok == Some(true)) {
            fencing.checked += 1;
            let Some(seq) = o.seq else { continue };
            match by_seq.get(&seq) {
                None => fnd.push("fencing", format!(
                    "{}: {} was told seq {seq} committed (fence {}) but the store has no seq {seq}: an acknowledged write was lost",
                    short(hid), o.holder, opt(o.fence)
                )),
                Some(c) if o.next_n.is_some() && c.state["next_n"].as_u64() != o.next_n => fnd.push("fencing", format!(
                    "{}: {} was told seq {seq} committed with next_n {}, the store's seq {seq} has next_n {}: overwritten",
                    short(hid), o.holder, opt(o.next_n), opt(c.state["next_n"].as_u64())
                )),
                Some(_) => {}
            }
            if let Some(prev) = writers.get(&seq) {
                fnd.push(
                    "fencing",
                    format!("{}: seq {seq} acknowledged to both {} and {}", short(hid), prev.holder, o.holder),
                );
            }
            writers.insert(
                seq,
                Writer {
                    holder: o.holder.clone(),
                    process: o.process.clone(),
                    fence: o.fence.unwrap_or(-1),
                    invoke_t: o.invoke_t,
                    acknowledged: true,
                },
            );
        }
        let mut unattributed = Vec::new();
        for c in &h.ckpts {
            if writers.contains_key(&c.seq) {
                continue;
            }
            let nn = c.state["next_n"].as_u64();
            let cands: Vec<&&Op> =
                ops_h.iter().filter(|o| o.op == "checkpoint" && o.ok.is_none() && o.next_n == nn).collect();
            match cands.as_slice() {
                [o] => {
                    writers.insert(
                        c.seq,
                        Writer { holder: o.holder.clone(), process: o.process.clone(), fence: o.fence.unwrap_or(-1), invoke_t: o.invoke_t, acknowledged: false },
                    );
                }
                [] => unattributed.push(c.seq),
                many => fencing.notes.push(format!(
                    "{}: seq {} committed without acknowledgement; {} in-flight writers could have made it (not attributed)",
                    short(hid), c.seq, many.len()
                )),
            }
        }
        if !unattributed.is_empty() {
            let msg =
                format!("{}: seqs {unattributed:?} were committed but no recorded operation wrote them", short(hid));
            if hist_complete {
                fnd.push("fencing", msg);
            } else {
                fencing.notes.push(format!("{msg} (some workers of this handoff record no history)"));
            }
        }
        let unack = writers.values().filter(|w| !w.acknowledged).count();
        if unack > 0 {
            fencing.notes.push(format!("{}: {unack} checkpoint(s) committed but the writer died before recording ok (attributed via its invoke)", short(hid)));
        }

        chunk_writer.insert(
            hid.clone(),
            h.ckpts
                .iter()
                .filter_map(|c| c.state["next_n"].as_u64().map(|n| (n, writers.get(&c.seq).map(|w| w.process.clone()))))
                .collect(),
        );

        // ---- fence ledger: one holder per fence, one claim
        let grants = cx.grants(hid);
        let mut fence_holder: HashMap<i64, String> = HashMap::new();
        for g in &grants {
            fencing.checked += 1;
            let f = g.fence.unwrap_or(-1);
            if let Some(prev) = fence_holder.get(&f) {
                if prev != &g.holder {
                    fnd.push(
                        "fencing",
                        format!(
                            "{}: fence {f} granted to both {prev} and {} (split brain at {})",
                            short(hid),
                            g.holder,
                            g.op
                        ),
                    );
                }
            }
            fence_holder.insert(f, g.holder.clone());
        }
        let claims = grants.iter().filter(|g| g.op == "claim").count();
        if claims > 1 {
            fnd.push("fencing", format!("{}: claimed {claims} times (exactly one claimer must win)", short(hid)));
        }
        let mut orphan_to: HashMap<i64, usize> = HashMap::new();
        for o in cx.ix.orphans.iter().filter(|o| &o.hid == hid) {
            if let (Some(p), Some(f)) = (o.previous_fence, o.fence) {
                if f != p + 1 {
                    fnd.push(
                        "fencing",
                        format!("{}: {} orphaned fence {p} to fence {f} (must be +1)", short(hid), o.supervisor),
                    );
                }
                *orphan_to.entry(f).or_default() += 1;
            }
        }
        for (f, n) in orphan_to {
            if n > 1 {
                fnd.push("fencing", format!("{}: orphaned to fence {f} {n} times", short(hid)));
            }
        }

        // ---- commit order: fences never go backwards, holders do not interleave
        let mut max_f: Option<(i64, i64, String)> = None; // (fence, seq, holder)
        for (seq, w) in &writers {
            if let Some(gh) = fence_holder.get(&w.fence) {
                if gh != &w.holder {
                    fnd.push(
                        "fencing",
                        format!(
                            "{}: seq {seq} written by {} with fence {}, which was granted to {gh}",
                            short(hid),
                            w.holder,
                            w.fence
                        ),
                    );
                }
            } else if hist_complete && w.fence >= 0 {
                fnd.push(
                    "fencing",
                    format!(
                        "{}: seq {seq} written by {} with fence {} that was never granted",
                        short(hid),
                        w.holder,
                        w.fence
                    ),
                );
            }
            if let Some((mf, ms, mh)) = &max_f {
                if w.fence < *mf {
                    // the reference's check passed before it was superseded; its write landed after
                    if cx.imp_of(&w.process) == "python"
                        && cx.superseded_at(hid, w.fence).is_none_or(|(t, _)| t >= w.invoke_t)
                    {
                        fnd.taint(CHECK_THEN_WRITE);
                    }
                    fnd.push("fencing", format!(
                        "{}: fence went backwards along commit order: seq {seq} by {} (fence {}) after seq {ms} by {mh} (fence {mf}) — split brain",
                        short(hid), w.holder, w.fence
                    ));
                }
                if w.fence == *mf && &w.holder != mh {
                    fnd.push(
                        "fencing",
                        format!(
                            "{}: seqs {ms} and {seq} written by {mh} and {} with the same fence {mf}",
                            short(hid),
                            w.holder
                        ),
                    );
                }
            }
            if max_f.as_ref().is_none_or(|(mf, _, _)| w.fence >= *mf) {
                max_f = Some((w.fence, *seq, w.holder.clone()));
            }
            // ---- no write may begin after its fence was superseded
            if let Some((t, why)) = cx.superseded_at(hid, w.fence) {
                if w.invoke_t > t {
                    fnd.push("fencing", format!(
                        "{}: seq {seq} committed by {} with fence {} although it was invoked {:.3}s after {why} (stale write accepted)",
                        short(hid), w.holder, w.fence, w.invoke_t - t
                    ));
                }
            }
        }

        // ---- completion: exactly once, by the current holder
        if h.status == "completed" {
            once.checked += 1;
            let completed_at = env.pointer("/execution/completed_at").and_then(Value::as_str).and_then(iso_to_epoch);
            let oks: Vec<&&Op> = ops_h.iter().filter(|o| o.op == "complete" && o.ok == Some(true)).collect();
            let mut per_pid: HashMap<i64, usize> = HashMap::new();
            for o in &oks {
                *per_pid.entry(o.pid).or_default() += 1;
            }
            for (pid, n) in &per_pid {
                if *n > 1 {
                    let who = oks.iter().find(|o| o.pid == *pid).map(|o| o.holder.clone()).unwrap_or_default();
                    fnd.push("exactly-once", format!("{}: {who} (pid {pid}) completed it {n} times", short(hid)));
                }
            }
            // A complete that began after the completion committed is the
            // protocol's idempotent no-op; every other acknowledged complete
            // is a commit.
            let (noop, commits): (Vec<&&Op>, Vec<&&Op>) =
                oks.iter().partition(|o| completed_at.is_some_and(|ca| ca + 1e-6 < o.invoke_t));
            if !noop.is_empty() {
                once.notes.push(format!(
                    "{}: {} late complete(s) by {} answered as the idempotent no-op",
                    short(hid),
                    noop.len(),
                    noop.iter().map(|o| format!("{}(fence {})", o.holder, opt(o.fence))).collect::<Vec<_>>().join(", ")
                ));
            }
            let distinct: BTreeSet<(i64, String)> = commits.iter().map(|o| (o.pid, o.holder.clone())).collect();
            if distinct.len() > 1 {
                fnd.push(
                    "exactly-once",
                    format!(
                        "{}: completion committed by {} processes: {}",
                        short(hid),
                        distinct.len(),
                        distinct.iter().map(|(p, h)| format!("{h}/{p}")).collect::<Vec<_>>().join(", ")
                    ),
                );
            }
            let completer: Option<(String, String, Option<i64>, f64)> = match commits.first() {
                Some(o) => Some((o.holder.clone(), o.process.clone(), o.fence, o.invoke_t)),
                None => {
                    // killed after committing (complete.after_commit): its invoke is in
                    // flight. Candidates: invoked before the commit, still alive then, and
                    // not superseded when they began.
                    let pend: Vec<&&Op> = ops_h
                        .iter()
                        .filter(|o| o.op == "complete" && o.ok.is_none())
                        .filter(|o| completed_at.is_none_or(|ca| o.invoke_t <= ca + 1e-6))
                        .filter(|o| {
                            completed_at.is_none_or(|ca| cx.ix.exits.get(&o.process).is_none_or(|x| *x + 1e-6 >= ca))
                        })
                        .filter(|o| {
                            o.fence.is_none_or(|f| cx.superseded_at(hid, f).is_none_or(|(t, _)| t >= o.invoke_t))
                        })
                        .collect();
                    match pend.as_slice() {
                        [o] => {
                            once.notes.push(format!(
                                "{}: completion committed by {} which died before recording ok",
                                short(hid),
                                o.holder
                            ));
                            Some((o.holder.clone(), o.process.clone(), o.fence, o.invoke_t))
                        }
                        _ => {
                            if hist_complete {
                                fnd.push(
                                    "exactly-once",
                                    format!(
                                        "{}: completed, but no recorded complete could have committed it",
                                        short(hid)
                                    ),
                                );
                            } else {
                                once.notes.push(format!("{}: completer unknown (no history)", short(hid)));
                            }
                            None
                        }
                    }
                }
            };
            if let Some((holder, process, fence, invoke_t)) = &completer {
                if let Some(f) = fence {
                    let stale = grants.iter().filter_map(|g| g.fence).max().is_some_and(|top| *f < top);
                    if stale
                        && cx.imp_of(process) == "python"
                        && cx.superseded_at(hid, *f).is_none_or(|(t, _)| t >= *invoke_t)
                    {
                        fnd.taint(CHECK_THEN_WRITE);
                    }
                    if let Some((t, why)) = cx.superseded_at(hid, *f) {
                        if *invoke_t > t {
                            fnd.push(
                                "exactly-once",
                                format!(
                                    "{}: completed by {holder} with fence {f}, invoked {:.3}s after {why}",
                                    short(hid),
                                    invoke_t - t
                                ),
                            );
                        }
                    }
                    if let Some(top) = grants.iter().filter_map(|g| g.fence).max() {
                        if *f < top {
                            fnd.push(
                                "exactly-once",
                                format!(
                                    "{}: completed by {holder} with fence {f}, but fence {top} had been granted",
                                    short(hid)
                                ),
                            );
                        }
                    }
                }
                // ---- result
                result.checked += 1;
                let got = env.pointer("/delivery/result").cloned().unwrap_or(Value::Null);
                let want = census::expected(lo, hi, chunk);
                for k in ["lo", "hi", "prime_count", "prime_sum"] {
                    if got.get(k).and_then(Value::as_u64) != want.get(k).and_then(Value::as_u64) {
                        fnd.push(
                            "result",
                            format!(
                                "{}: result {k} = {}, recomputed {}",
                                short(hid),
                                got.get(k).unwrap_or(&Value::Null),
                                want[k]
                            ),
                        );
                    }
                }
                let imp = cx.imp_of(process);
                let got_cd = got.get("chunks_done").and_then(Value::as_u64);
                if imp == "python" {
                    // The reference reports the chunks of its final run only.
                    let final_run = ops_h
                        .iter()
                        .filter(|o| &o.process == process && o.op == "checkpoint" && o.ok == Some(true))
                        .count() as u64;
                    if got_cd != Some(final_run) {
                        fnd.push(
                            "result",
                            format!(
                                "{}: python completer {holder} reported chunks_done {}, its history shows {final_run}",
                                short(hid),
                                opt(got_cd)
                            ),
                        );
                    } else if final_run != want["chunks_done"].as_u64().unwrap_or(0) {
                        result.notes.push(format!(
                            "{}: reference semantics: chunks_done {final_run} counts the final run only (the handoff has {})",
                            short(hid), want["chunks_done"]
                        ));
                    }
                } else if got_cd != want.get("chunks_done").and_then(Value::as_u64) {
                    fnd.push(
                        "result",
                        format!(
                            "{}: result chunks_done = {}, recomputed {}",
                            short(hid),
                            opt(got_cd),
                            want["chunks_done"]
                        ),
                    );
                }
            } else if h.status == "completed" {
                // still check the census numbers
                result.checked += 1;
                let got = env.pointer("/delivery/result").cloned().unwrap_or(Value::Null);
                let want = census::expected(lo, hi, chunk);
                for k in ["lo", "hi", "prime_count", "prime_sum"] {
                    if got.get(k).and_then(Value::as_u64) != want.get(k).and_then(Value::as_u64) {
                        fnd.push(
                            "result",
                            format!(
                                "{}: result {k} = {}, recomputed {}",
                                short(hid),
                                got.get(k).unwrap_or(&Value::Null),
                                want[k]
                            ),
                        );
                    }
                }
            }
        }

        // ---- transport log vs store (the peer's, and the local buffer with TCP)
        transport.checked += 1;
        let dirs: Vec<(&Path, &str)> = if tcp {
            vec![(&paths.peer, "peer"), (&paths.transport, "local buffer")]
        } else {
            vec![(&paths.transport, "transport")]
        };
        for (d, label) in dirs {
            for v in check_transport(&cx, h, &writers, &mut transport, d, label) {
                fnd.push("transport", v);
            }
        }

        // ---- distribute: a handoff whose trouble starts at a documented
        // weakness of the reference has its violations filed as known.
        for (name, msg) in fnd.items {
            let inv = match name {
                "outcome" => &mut outcome,
                "result" => &mut result,
                "exactly-once" => &mut once,
                "checkpoints" => &mut chain,
                "fencing" => &mut fencing,
                _ => &mut transport,
            };
            match &fnd.taint {
                Some(why) => inv.known.push(format!("{msg} [known reference weakness: {why}]")),
                None => inv.violations.push(msg),
            }
        }
        if let Some(why) = fnd.taint {
            tainted.insert(hid.clone(), why);
        }
    }

    // ---- faults: detection latency, rework, zombies
    let mut lat = Latencies::default();
    let mut worker_kill = Vec::new();
    let mut pause_l = Vec::new();
    let mut fp_l = Vec::new();
    let mut leader_l = Vec::new();
    let mut kill_resume = Vec::new();
    let mut faults_by_kind: BTreeMap<String, u64> = BTreeMap::new();
    let mut kills_by_role: BTreeMap<String, u64> = BTreeMap::new();
    let mut kills = 0u64;
    let mut seen_fault_ids: HashSet<u64> = HashSet::new();
    let stall_windows: Vec<(f64, f64)> = cx
        .ix
        .observes
        .iter()
        .filter(|o| o.s("what") == Some("store-stall"))
        .filter_map(|o| Some((o.get("since")?.as_f64()?, o.get("until")?.as_f64()?)))
        .collect();
    let sup_kills: Vec<f64> = cx
        .ix
        .faults
        .iter()
        .filter(|f| f.s("role") == Some("supervisor") && f.s("signal") == Some("KILL"))
        .map(|f| f.t())
        .collect();
    let leader_obs: Vec<(f64, bool)> = cx
        .ix
        .observes
        .iter()
        .filter(|o| o.s("what") == Some("leader"))
        .map(|o| (o.t(), o.s("holder").is_some()))
        .collect();
    let leader_ttl = meta["config"]["timing"]["leader_ttl_s"].as_f64().unwrap_or(5.0);
    let scan = meta["config"]["timing"]["supervisor_scan_s"].as_f64().unwrap_or(1.0);
    let mut steady = Vec::new();
    let mut rework_victims: HashMap<String, String> = HashMap::new();
    let mut zombies = Zombies::default();

    for f in &cx.ix.faults {
        let kind = f.s("kind").unwrap_or("");
        let sig = f.s("signal").unwrap_or("");
        if kind == "teardown" || kind == "resume" {
            continue;
        }
        let fid = f.u("fault_id").unwrap_or(0);
        if seen_fault_ids.insert(fid) {
            *faults_by_kind
                .entry(if kind == "failpoint" {
                    format!("failpoint:{}", f.s("failpoint").unwrap_or("?"))
                } else {
                    kind.to_string()
                })
                .or_default() += 1;
        }
        let victim = f.s("victim").unwrap_or("").to_string();
        let role = f.s("role").unwrap_or("");
        if sig == "KILL" {
            kills += 1;
            *kills_by_role.entry(role.to_string()).or_default() += 1;
        }
        if role == "supervisor" {
            if sig == "KILL" && f.get("leader").and_then(Value::as_bool) == Some(true) {
                let t = f.t();
                if let Some(o) = cx.ix.observes.iter().find(|o| {
                    o.s("what") == Some("leader") && o.t() >= t && o.s("holder").is_some_and(|hh| hh != victim)
                }) {
                    leader_l.push(o.t() - t);
                }
            }
            continue;
        }
        // worker victim
        let Some(hid) = f.hid().map(String::from) else { continue };
        rework_victims.insert(victim.clone(), hid.clone());
        let t = f.t();
        // the fence it held at that moment, from its own history
        let held = cx
            .ix
            .ops
            .iter()
            .filter(|o| {
                o.process == victim
                    && o.hid == hid
                    && (o.op == "claim" || o.op == "recover")
                    && o.ok == Some(true)
                    && o.out_t.unwrap_or(o.invoke_t) <= t
            })
            .filter_map(|o| o.fence)
            .max();
        let Some(fence) = held else { continue };
        let orphaned_before = cx.ix.orphans.iter().any(|o| o.hid == hid && o.previous_fence == Some(fence) && o.t < t);
        let completed_before =
            cx.ix.ops.iter().any(|o| {
                o.process == victim && o.op == "complete" && o.ok == Some(true) && o.out_t.unwrap_or(0.0) <= t
            });
        if orphaned_before || completed_before {
            continue;
        }
        let orphan_t = cx
            .ix
            .orphans
            .iter()
            .filter(|o| {
                o.hid == hid
                    && o.previous_fence == Some(fence)
                    && o.previous_holder.as_deref().is_none_or(|p| p == victim)
            })
            .map(|o| o.t)
            .reduce(f64::min);
        let (ot, from_hist) = match orphan_t {
            Some(ot) => (Some(ot), true),
            None => (
                cx.ix
                    .observes
                    .iter()
                    .filter(|o| {
                        o.hid() == Some(hid.as_str())
                            && o.s("holder") == Some(ORPHANED)
                            && o.i("fence").is_some_and(|of| of > fence)
                    })
                    .map(|o| o.t())
                    .reduce(f64::min),
                false,
            ),
        };
        match ot {
            Some(ot) => {
                if from_hist {
                    lat.from_history += 1;
                } else {
                    lat.from_monitor += 1;
                }
                let d = (ot - t).max(0.0);
                let mut disturbed: Option<String> = None;
                match (kind, sig) {
                    ("failpoint", _) => fp_l.push(d),
                    (_, "STOP") => pause_l.push(d),
                    (_, "KILL") => {
                        worker_kill.push(d);
                        if let Some(r) = cx
                            .ix
                            .ops
                            .iter()
                            .filter(|o| {
                                o.hid == hid && o.op == "checkpoint" && o.ok == Some(true) && o.process != victim
                            })
                            .filter(|o| o.fence.is_some_and(|f| f > fence) && o.out_t.unwrap_or(o.invoke_t) >= t)
                            .map(|o| o.out_t.unwrap_or(o.invoke_t))
                            .reduce(f64::min)
                        {
                            kill_resume.push(r - t);
                        }
                        let leader_up = leader_obs.iter().rev().find(|(lt, _)| *lt <= t).is_some_and(|(_, up)| *up);
                        let why = if stall_windows.iter().any(|(a, b)| *a < ot && *b > t) {
                            Some("store stalled by a stopped worker")
                        } else if sup_kills.iter().any(|k| *k >= t - leader_ttl - scan && *k <= ot) {
                            Some("supervisor killed around it")
                        } else if !leader_up {
                            Some("no live leader at the kill")
                        } else {
                            None
                        };
                        match why {
                            None => steady.push(d),
                            Some(w) => *lat.disturbed_by.entry(w.to_string()).or_default() += 1,
                        }
                        disturbed = why.map(String::from);
                    }
                    _ => {}
                }
                lat.per_fault.push(FaultLatency {
                    fault_id: fid,
                    kind: kind.to_string(),
                    signal: sig.to_string(),
                    victim: victim.clone(),
                    hid: short(&hid).to_string(),
                    fence,
                    latency_s: d,
                    source: if from_hist { "supervisor history" } else { "monitor" }.into(),
                    disturbed_by: disturbed,
                });
            }
            None => {
                let st = store.get(&hid).map(|h| h.status.as_str()).unwrap_or("");
                let completed_by_victim = cx
                    .ix
                    .ops
                    .iter()
                    .any(|o| o.process == victim && o.hid == hid && o.op == "complete" && o.ok != Some(false));
                if sig == "STOP" && st == "completed" {
                    continue; // woken before its lease ran out and finished, or completed by others after it
                }
                if !completed_by_victim {
                    lat.undetected.push(format!("{victim} ({kind}) holding {} fence {fence}", short(&hid)));
                }
            }
        }
    }
    detect.checked = (worker_kill.len() + pause_l.len() + fp_l.len() + lat.undetected.len()) as u64;
    for u in &lat.undetected {
        // a SIGSTOPped worker that was woken before its lease was taken may legitimately keep it
        detect.violations.push(format!("{u}: never orphaned and did not complete"));
    }
    lat.worker_kill = stats(worker_kill);
    lat.kill_to_resume = stats(kill_resume);
    // False orphans: a worker-died orphan whose holder had not been faulted
    // and had not exited (its exit is reaped within milliseconds of death;
    // allow 1 s for a loaded machine) — the liveness mechanism took a live
    // worker's handoff. Lease-expired orphans of unfaulted workers are the
    // lease working as designed (fenced), counted in a note.
    let mut lease_orphans_of_unfaulted = 0usize;
    for o in &cx.ix.orphans {
        let Some(holder) = o.previous_holder.as_deref() else { continue };
        if holder == ORPHANED {
            continue;
        }
        let faulted = cx.ix.faults.iter().any(|f| f.s("victim") == Some(holder) && f.t() <= o.t + 0.001);
        let exited = cx.ix.exits.get(holder).is_some_and(|et| *et <= o.t + 1.0);
        match o.reason.as_deref() {
            Some("worker-died") => {
                false_orphans.checked += 1;
                if !faulted && !exited {
                    false_orphans.violations.push(format!(
                        "{}: orphaned as worker-died from {holder} (fence {}) by {}, but {holder} was neither faulted nor exited",
                        short(&o.hid),
                        opt(o.previous_fence),
                        o.supervisor
                    ));
                }
            }
            Some("lease-expired") if !faulted && !exited => lease_orphans_of_unfaulted += 1,
            _ => {}
        }
    }
    if lease_orphans_of_unfaulted > 0 {
        false_orphans.notes.push(format!(
            "{lease_orphans_of_unfaulted} lease-expired orphan(s) of workers that were never faulted (a lease missed under load: fenced, not a violation)"
        ));
    }
    lat.worker_kill_steady = stats(steady);
    let store_stalls = Stalls {
        n: stall_windows.len(),
        total_s: stall_windows.iter().map(|(a, b)| b - a).sum(),
        max_s: stall_windows.iter().map(|(a, b)| b - a).fold(0.0, f64::max),
    };
    lat.pause = stats(pause_l);
    lat.failpoint = stats(fp_l);
    lat.leader_failover = stats(leader_l);

    // rework: chunks a faulted worker computed (it invoked their checkpoint)
    // that it did not commit itself — lost, or recomputed by a successor
    let mut rework_max = 0u64;
    let mut rework_total = 0u64;
    for (victim, hid) in &rework_victims {
        let Some(by_chunk) = chunk_writer.get(hid) else { continue };
        rework_inv.checked += 1;
        let computed: BTreeSet<u64> = cx
            .ix
            .ops
            .iter()
            .filter(|o| &o.process == victim && &o.hid == hid && o.op == "checkpoint")
            .filter_map(|o| o.next_n)
            .collect();
        let redone: Vec<u64> = computed
            .iter()
            .copied()
            .filter(|n| match by_chunk.get(n) {
                Some(Some(p)) => p != victim,
                Some(None) => false, // committed, writer not attributable: cannot tell
                None => true,        // never committed
            })
            .collect();
        let n = redone.len() as u64;
        rework_max = rework_max.max(n);
        rework_total += n;
        if n > 1 {
            let msg = format!("{}: {victim} computed {n} chunks it never committed (next_n {redone:?}): more than one chunk redone for one fault", short(hid));
            match tainted.get(hid) {
                Some(why) => rework_inv.known.push(format!("{msg} [known reference weakness: {why}]")),
                None => rework_inv.violations.push(msg),
            }
        }
    }
    rework_inv
        .notes
        .push("plus at most the one chunk a victim was computing when it died, which no history can show".into());

    // zombies: paused workers woken after replacement
    for f in cx.ix.faults.iter().filter(|f| f.s("signal") == Some("STOP")) {
        zombies.paused += 1;
        let victim = f.s("victim").unwrap_or("");
        let Some(hid) = f.hid() else { continue };
        let Some(fence) = f.i("lease_fence") else { continue };
        let Some(cont) = cx
            .ix
            .faults
            .iter()
            .find(|c| c.s("signal") == Some("CONT") && c.s("victim") == Some(victim) && c.t() >= f.t())
        else {
            continue;
        };
        let tc = cont.t();
        let ts = f.t();
        // ops in flight when it was stopped finish after waking (their invoke is before the stop)
        let in_flight_commits: Vec<&Op> = cx
            .ix
            .ops
            .iter()
            .filter(|o| o.process == victim && o.invoke_t <= ts && (o.op == "checkpoint" || o.op == "complete"))
            .filter(|o| o.ok == Some(true) && o.out_t.is_some_and(|t| t >= tc))
            .collect();
        let replaced = cx.superseded_at(hid, fence).is_some_and(|(t, _)| t < tc);
        if !replaced {
            if !in_flight_commits.is_empty() {
                zombie_inv.notes.push(format!(
                    "{}: {victim} was stopped inside a write and committed on waking, before anyone else could act (it held the SQLite write lock while stopped)",
                    short(hid)
                ));
            }
            continue;
        }
        zombies.woken_after_replacement += 1;
        zombie_inv.checked += 1;
        let after: Vec<&Op> = cx.ix.ops.iter().filter(|o| o.process == victim && o.invoke_t >= tc).collect();
        let wrote: Vec<&&Op> = after.iter().filter(|o| o.ok == Some(true) && o.op == "checkpoint").collect();
        let completed_at = store
            .get(hid)
            .and_then(|h| h.env.pointer("/execution/completed_at").and_then(Value::as_str).and_then(iso_to_epoch));
        let bad_complete = after
            .iter()
            .any(|o| o.op == "complete" && o.ok == Some(true) && completed_at.is_none_or(|ca| ca + 1e-6 >= o.invoke_t));
        // a completion that was already committed when the zombie's complete began is the idempotent no-op
        let in_flight_bad: Vec<&&Op> = in_flight_commits
            .iter()
            .filter(|o| o.op == "checkpoint" || completed_at.is_none_or(|ca| ca + 1e-6 >= o.invoke_t))
            .collect();
        if !wrote.is_empty() || bad_complete || !in_flight_bad.is_empty() {
            zombies.wrote += 1;
            let msg = format!(
                "{}: {victim} (fence {fence}) was replaced while stopped and, after waking, committed {} new checkpoint(s){}{}",
                short(hid),
                wrote.len(),
                if bad_complete { " and a completion" } else { "" },
                if in_flight_bad.is_empty() {
                    String::new()
                } else {
                    format!(
                        "; its in-flight {} committed after its replacement",
                        in_flight_bad.iter().map(|o| o.op.as_str()).collect::<Vec<_>>().join(" and ")
                    )
                }
            );
            match tainted.get(hid) {
                Some(why) => zombie_inv.known.push(format!("{msg} [known reference weakness: {why}]")),
                None if cx.imp_of(victim) == "python" => {
                    zombie_inv.known.push(format!("{msg} [known reference weakness: {CHECK_THEN_WRITE}]"))
                }
                None => zombie_inv.violations.push(msg),
            }
        } else if after.first().is_some_and(|o| o.ok == Some(false)) {
            zombies.fenced += 1;
        } else if after.is_empty() {
            zombies.silent += 1;
        } else {
            zombies.fenced += 1;
        }
    }

    // ---- totals
    let t0 = meta["t0"].as_f64().unwrap_or(0.0);
    let t_fe = meta["t_faults_end"].as_f64().unwrap_or(t0);
    let t_end = meta["t_end"].as_f64().unwrap_or(t_fe);
    let fault_phase_s = (t_fe - t0).max(0.0);
    let cfg = &meta["config"];
    let recoveries = cx.ix.ops.iter().filter(|o| o.op == "recover" && o.ok == Some(true)).count() as u64;
    let race_losers =
        cx.ix.ops.iter().filter(|o| (o.op == "recover" || o.op == "claim") && o.ok == Some(false)).count() as u64;
    let history_lines = history.events.len();
    if history.malformed > 0 {
        fencing.notes.push(format!("{} malformed history line(s) skipped", history.malformed));
    }
    let invariants =
        vec![outcome, result, once, chain, fencing, zombie_inv, transport, rework_inv, detect, false_orphans];
    let held = invariants.iter().all(Invariant::held);
    Ok(RoundReport {
        dir: dir.display().to_string(),
        seed: cfg["seed"].as_u64().unwrap_or(0),
        round: cfg["round"].as_u64().unwrap_or(0) as u32,
        workers: impl_label(&cfg["workers"]),
        supervisors: impl_label(&cfg["supervisors"]),
        replay: cfg["replay"].as_str().unwrap_or("").to_string(),
        handoffs: hids.len(),
        completed,
        dlq,
        fault_phase_s,
        round_s: (t_end - t0).max(0.0),
        kills,
        kills_per_min: if fault_phase_s > 0.0 { kills as f64 * 60.0 / fault_phase_s } else { 0.0 },
        faults_by_kind,
        kills_by_role,
        spawned_workers: cx.ix.spawns.values().filter(|s| s.role == "worker").count() as u64,
        spawned_supervisors: cx.ix.spawns.values().filter(|s| s.role == "supervisor").count() as u64,
        recoveries,
        racing_provisions: cx.ix.provisions.len() as u64,
        race_losers,
        checkpoints: checkpoints_total,
        latencies: lat,
        store_stalls,
        zombies,
        rework_max_chunks: rework_max,
        rework_total_chunks: rework_total,
        invariants,
        history_lines,
        history_malformed: history.malformed,
        held,
    })
}

fn impl_label(v: &Value) -> String {
    match v["kind"].as_str() {
        Some("cmd") => format!(
            "cmd:{}",
            v["argv"]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(" "))
                .unwrap_or_default()
        ),
        Some(k) => k.to_string(),
        None => "?".into(),
    }
}

fn check_transport(
    cx: &Ctx<'_>,
    h: &Handoff,
    writers: &BTreeMap<i64, Writer>,
    inv: &mut Invariant,
    dir: &Path,
    label: &str,
) -> Vec<String> {
    let mut out = Vec::new();
    let hid = &h.hid;
    let path = dir.join(format!("{hid}.log"));
    let cfg = dhp_core::Config::default();
    if !path.exists() {
        if h.ckpts.is_empty() {
            return out;
        }
        out.push(format!("{}: [{label}] {} checkpoints committed, no transport log", short(hid), h.ckpts.len()));
        return out;
    }
    let lines = match tlog::read_log(&path, &cfg) {
        Ok(l) => l,
        Err(e) => {
            out.push(format!("{}: [{label}] transport log unreadable: {e}", short(hid)));
            return out;
        }
    };
    let by_seq: HashMap<i64, &Ckpt> = h.ckpts.iter().map(|c| (c.seq, c)).collect();
    let mut have: HashSet<i64> = HashSet::new();
    let mut env_seen = false;
    let mut skipped = 0;
    for l in &lines {
        let rec = match l {
            tlog::Line::Record(v) => v,
            tlog::Line::Skipped(_) => {
                skipped += 1;
                continue;
            }
        };
        match rec["type"].as_str() {
            Some("envelope") if !env_seen => {
                env_seen = true;
                {
                    let e = &rec["envelope"];
                    if e["handoff_id"].as_str() != Some(hid.as_str()) || !dhp_core::envelope::verify_id(e) {
                        out.push(format!(
                            "{}: [{label}] transport envelope does not verify as this handoff",
                            short(hid)
                        ));
                    }
                }
            }
            Some("checkpoint") => {
                let Some(seq) = rec["seq"].as_i64() else {
                    out.push(format!("{}: [{label}] transport checkpoint without seq", short(hid)));
                    continue;
                };
                let hash = match dhp_core::json::state_text_and_hash(&rec["state"]) {
                    Ok((_, h)) => h,
                    Err(_) => String::new(),
                };
                if rec["state_hash"].as_str() != Some(hash.as_str()) {
                    out.push(format!(
                        "{}: [{label}] transport seq {seq}: state_hash does not match its state",
                        short(hid)
                    ));
                }
                match by_seq.get(&seq) {
                    None => out.push(format!(
                        "{}: [{label}] transport has seq {seq}, the store does not (phantom checkpoint)",
                        short(hid)
                    )),
                    Some(c) if c.state_hash != hash => out.push(format!(
                        "{}: [{label}] transport seq {seq} differs from the store's seq {seq}",
                        short(hid)
                    )),
                    Some(_) => {}
                }
                have.insert(seq);
            }
            _ => {}
        }
    }
    if !env_seen {
        out.push(format!("{}: [{label}] transport log has no envelope line", short(hid)));
    }
    if skipped > 0 {
        inv.notes.push(format!("{}: [{label}] {skipped} unreadable transport line(s) skipped", short(hid)));
    }
    // completeness
    let missing: Vec<i64> = h.ckpts.iter().map(|c| c.seq).filter(|s| !have.contains(s)).collect();
    let top = h.ckpts.last().map(|c| c.seq);
    for s in missing {
        let writer = writers.get(&s);
        let imp = writer.map(|w| cx.imp_of(&w.process)).unwrap_or_else(|| "unknown".into());
        if imp == "python" {
            inv.notes.push(format!(
                "{}: seq {s} never reached the transport log: written by the reference worker {} (known weakness, docs/PROTOCOL.md §13.9: commit, then ship, no catch-up on recovery)",
                short(hid),
                writer.map(|w| w.holder.as_str()).unwrap_or("?")
            ));
        } else if h.status == "failed" && Some(s) == top {
            inv.notes.push(format!("{}: [{label}] DLQ handoff's last seq {s} was committed but its writer died before shipping; no successor will catch up", short(hid)));
        } else {
            let msg = format!(
                "{}: [{label}] seq {s} (status {}) is in the store but not in the transport log (written by {})",
                short(hid),
                h.status,
                writer.map(|w| w.holder.as_str()).unwrap_or("an unattributed writer")
            );
            match writer.and_then(|w| reference_successor_without_catch_up(cx, hid, w)) {
                Some(by) => inv.known.push(format!(
                    "{msg}; the successor {by} never shipped it [known reference weakness: {NO_CATCH_UP}]"
                )),
                None => out.push(msg),
            }
        }
    }
    // The real ingest path agrees: replay the log into a scratch store.
    if let Ok(tmp) = tempfile::tempdir() {
        match dhp_core::store::SqliteStore::open(tmp.path()) {
            Ok(st) => match tlog::ingest_lines(&st, &lines, &cfg) {
                Ok(rep) => {
                    if rep.handoff_id != *hid {
                        out.push(format!(
                            "{}: [{label}] ingest produced handoff {}",
                            short(hid),
                            short(&rep.handoff_id)
                        ));
                    }
                }
                Err(e) => out.push(format!("{}: [{label}] dhp ingest of the transport log fails: {e}", short(hid))),
            },
            Err(e) => inv.notes.push(format!("scratch store for ingest: {e}")),
        }
    }
    out
}

/// A seq our worker committed but died before shipping is re-shipped by
/// the next builtin holder (it catches the peer up before its first
/// checkpoint). When the handoff passed only to reference workers, which
/// never catch up, the gap is the reference's. Returns that reference
/// successor, unless a builtin successor went on to write (and so should
/// have filled the gap).
fn reference_successor_without_catch_up(cx: &Ctx<'_>, hid: &str, w: &Writer) -> Option<String> {
    let successors: Vec<&Op> = cx
        .grants(hid)
        .into_iter()
        .filter(|g| g.process != w.process && g.out_t.unwrap_or(g.invoke_t) > w.invoke_t)
        .collect();
    let builtin_wrote = successors.iter().any(|g| {
        cx.imp_of(&g.process) == "builtin"
            && cx.ix.ops.iter().any(|o| {
                o.process == g.process
                    && o.hid == hid
                    && (o.op == "checkpoint" || o.op == "complete")
                    && o.ok == Some(true)
            })
    });
    if builtin_wrote {
        return None;
    }
    successors.iter().find(|g| cx.imp_of(&g.process) == "python").map(|g| g.holder.clone())
}
