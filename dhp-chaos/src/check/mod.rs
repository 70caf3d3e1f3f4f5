//! The invariant checker. Runs after a round from files only — the SQLite
//! store, the transport logs, `history.jsonl` and `round.json` — so
//! `dhp-chaos analyze DIR` re-checks a saved run with exactly the same code.
//!
//! Verdicts rest on the harness's own sources: the store audit for what was
//! committed and in which order, the workload service for what was served,
//! the processes it spawned and signalled for who ran when. The history the
//! processes write is detail: where it disagrees with those, that is a
//! finding (an acknowledged write that is not in the store, a committed
//! write no process recorded); where an invariant needs it and it is
//! missing, the invariant is UNCHECKED (`sources`).
//!
//! Layout: `load` reads the store, `history` indexes `history.jsonl`,
//! `ctx` derives the per-handoff facts every invariant shares, `faults`
//! walks the injected faults (latencies), and `invariants/` holds one file
//! per [`Invariant`]; this module only runs them and files their findings.

pub(crate) mod audit;
pub(crate) mod census;
mod ctx;
mod db_link;
mod env_facts;
mod faults;
mod findings;
mod history;
mod indeterminate;
mod invariants;
mod landing;
mod load;
mod report;
mod saved_config;
mod sources;
mod store_order;

pub use ctx::Ctx;
pub use env_facts::EnvFacts;
pub use findings::{Finding, Findings};
pub use invariants::transport_links::faults as transport_log_faults;
pub use invariants::{list, Descriptor, Invariant, Mutant, MutantProgram, DESCRIPTORS};
pub use landing::{landing, Landing};
pub use load::{is_pruned_round_dir, is_round_dir, load_export, load_round_store, load_saved_report, Ckpt, Handoff};
pub(crate) use report::stats;
pub use report::{FaultLatency, Latencies, Rework, RoundReport, Stalls, Stats, Verdict, Zombies};
pub use sources::Source;

use crate::config::Impl;
use crate::error::{Error, Result};
use crate::hist;
use crate::round::Paths;
use saved_config::SavedConfig;
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;

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

/// Partitions (recorded in every host's history) count once across the
/// hosts of a round: in the report of the lowest host they involve.
fn with_partitions(
    mut by_kind: std::collections::BTreeMap<String, u64>,
    ix: &history::Index<'_>,
    cfg: &SavedConfig,
) -> std::collections::BTreeMap<String, u64> {
    let Some(me) = cfg.host.as_ref().map(|h| u64::from(h.index)) else { return by_kind };
    for e in ix.nemesis.iter().filter(|e| e.s("phase") == Some("start")) {
        let lowest = e
            .get("groups")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .flat_map(|g| g.as_array().into_iter().flatten())
            .filter_map(Value::as_u64)
            .min();
        if lowest == Some(me) {
            *by_kind.entry(e.s("kind").unwrap_or("partition").to_string()).or_default() += 1;
        }
    }
    by_kind
}

/// Run every invariant on the round and file each one's verdict: a
/// handoff whose trouble starts at a documented weakness of the reference
/// has all its violations, under every invariant, filed as known (the
/// first reason found wins); then each is judged by the sources the round
/// has (returned too).
fn verdicts(cx: &Ctx<'_>, history: &hist::History) -> (Vec<Verdict>, std::collections::BTreeSet<Source>) {
    let checked: Vec<(Invariant, findings::Findings)> = Invariant::ALL.iter().map(|i| (*i, i.check(cx))).collect();
    let mut taint: HashMap<String, String> = cx.pre_taint.clone();
    for (_, f) in &checked {
        for (hid, why) in &f.taints {
            taint.entry(hid.clone()).or_insert_with(|| why.to_string());
        }
    }
    let mut invariants: Vec<Verdict> = checked.into_iter().map(|(i, f)| f.file(i, &taint)).collect();
    history_notes(&mut invariants, history);

    let have = sources::available(cx);
    for (v, i) in invariants.iter_mut().zip(Invariant::ALL) {
        sources::judge(v, i, cx, &have);
    }
    (invariants, have)
}

/// Check a round directory.
pub fn check_round(dir: &Path) -> Result<RoundReport> {
    let paths = Paths::new(dir);
    let meta = read_meta(&paths.meta)?;
    let cfg = round_config(&meta, &paths.meta)?;
    let mut history = hist::load(&paths.history)?;
    if !cfg.impl_history {
        // --impl-history off: only the harness's own lines count
        history.events.retain(hist::Ev::is_chaos);
    }
    let store = load::load_round_store(&paths.store)?;
    let audit = audit::AuditIx::load(&paths.store)?;
    let mut ix = history::index(&history);
    indeterminate::mark(&mut ix, meta["t_end"].as_f64().unwrap_or(f64::INFINITY));
    db_link::mark(&mut ix, meta["t_end"].as_f64().unwrap_or(f64::INFINITY));
    let cx = Ctx::new(dir, &meta, &cfg, &ix, &store, audit.as_ref());

    let (mut invariants, have) = verdicts(&cx, &history);
    let faults_by_kind = with_partitions(cx.faults.faults_by_kind.clone(), &ix, &cfg);
    let coverage = crate::coverage::of_round(&cx, &faults_by_kind, cx.faults.store_stalls.n);
    crate::coverage::demote(&mut invariants, &coverage);
    let allow = &cfg.allow_unchecked;
    let (unchecked_allowed, unchecked): (Vec<String>, Vec<String>) = invariants
        .iter()
        .filter(|v| v.status == "unchecked")
        .map(|v| v.name.clone())
        .partition(|n| sources::allowed(allow, n));

    let redone = invariants::redone(&cx);
    let fw = &cx.faults;
    let t0 = meta["t0"].as_f64().unwrap_or(0.0);
    let t_fe = meta["t_faults_end"].as_f64().unwrap_or(t0);
    let t_end = meta["t_end"].as_f64().unwrap_or(t_fe);
    // --faults-after-checkpoints: the fault phase began at `faults-start`
    let t_fs = history
        .events
        .iter()
        .find(|e| e.is_chaos() && e.op() == "round" && e.s("phase") == Some("faults-start"))
        .map_or(t0, hist::Ev::t);
    let fault_phase_s = (t_fe - t_fs).max(0.0);
    let census_handoffs = || cx.facts.values().map(|f| f.h);
    // processes of the round the harness found alive after ending them all
    let survivors: Vec<String> = history
        .events
        .iter()
        .filter(|e| e.is_chaos() && e.op() == "observe" && e.s("what") == Some("survivor"))
        .map(|e| {
            format!("pid {} ({}) outlived the round", e.i("survivor_pid").unwrap_or(-1), e.s("cmdline").unwrap_or("?"))
        })
        .collect();
    let held = invariants.iter().all(Verdict::held) && survivors.is_empty();
    let host = cfg.host.as_ref().map(|h| h.index);
    Ok(RoundReport {
        host,
        standby: meta.get("standby_of").is_some(),
        dir: dir.display().to_string(),
        seed: cfg.seed,
        round: cfg.round,
        workers: impl_label(cfg.workers.as_ref()),
        supervisors: impl_label(cfg.supervisors.as_ref()),
        replay: cfg.replay.clone(),
        handoffs: cx.hids.len(),
        completed: census_handoffs().filter(|h| h.status == "completed").count(),
        dlq: census_handoffs().filter(|h| h.status == "failed" && invariants::dlq_park(h).is_ok()).count(),
        fault_phase_s,
        round_s: (t_end - t0).max(0.0),
        kills: fw.kills,
        kills_per_min: if fault_phase_s > 0.0 { fw.kills as f64 * 60.0 / fault_phase_s } else { 0.0 },
        faults_by_kind,
        kills_by_role: fw.kills_by_role.clone(),
        spawned_workers: ix.spawns.values().filter(|s| s.role == "worker").count() as u64,
        spawned_supervisors: ix.spawns.values().filter(|s| s.role == "supervisor").count() as u64,
        // the store's count when it has an audit, else the workers' own
        recoveries: match &audit {
            Some(a) => a.transitions().iter().filter(|t| t.kind == audit::Kind::Recover).count() as u64,
            None => ix.ops.iter().filter(|o| o.op == "recover" && o.ok == Some(true)).count() as u64,
        },
        racing_provisions: ix.provisions.len() as u64,
        race_losers: ix.ops.iter().filter(|o| (o.op == "recover" || o.op == "claim") && o.ok == Some(false)).count()
            as u64,
        checkpoints: census_handoffs().map(|h| h.ckpts.len() as u64).sum(),
        latencies: fw.latencies.clone(),
        store_stalls: fw.store_stalls.clone(),
        zombies: invariants::zombie_tally(&cx),
        rework_max_chunks: redone.iter().map(|r| r.2.len() as u64).max().unwrap_or(0),
        rework_total_chunks: redone.iter().map(|r| r.2.len() as u64).sum(),
        rework_per_fault: redone
            .iter()
            .map(|r| Rework { victim: r.0.clone(), hid: short(&r.1).into(), chunks: r.2.len() as u64 })
            .collect(),
        env: env_facts::facts(&cx),
        invariants,
        coverage,
        sources: have.iter().map(|s| s.name().to_string()).collect(),
        audit_events: audit.as_ref().map(|a| a.events.len()),
        unchecked,
        unchecked_allowed,
        history_lines: history.events.len(),
        history_malformed: history.malformed,
        history_forged: history.forged,
        survivors,
        held,
    })
}

/// The history's troubles, noted on the fencing verdict: lines that were
/// not JSON objects, lines off the history schema, forged harness lines.
fn history_notes(invariants: &mut [Verdict], history: &hist::History) {
    if history.malformed > 0 {
        if let Some(v) = invariants.iter_mut().find(|v| v.name == Invariant::Fencing.name()) {
            v.notes.push(format!("{} malformed history line(s) skipped", history.malformed));
        }
    }
    if history.off_schema > 0 {
        if let Some(v) = invariants.iter_mut().find(|v| v.name == Invariant::Fencing.name()) {
            v.notes.push(format!("{} history line(s) off spec/chaos/history.schema.json", history.off_schema));
        }
    }
    if history.forged > 0 {
        if let Some(v) = invariants.iter_mut().find(|v| v.name == Invariant::Fencing.name()) {
            v.notes.push(format!(
                "{} history line(s) claiming to be the harness's (process `chaos`) ignored: forged by a process under test",
                history.forged
            ));
        }
    }
}

fn impl_label(i: Option<&Impl>) -> String {
    match i {
        Some(Impl::Builtin) => "builtin".into(),
        Some(Impl::Python) => "python".into(),
        Some(Impl::Mixed) => "mixed".into(),
        Some(Impl::Cmd(argv)) => format!("cmd:{}", argv.join(" ")),
        None => "?".into(),
    }
}

pub(crate) fn iso_to_epoch(s: &str) -> Option<f64> {
    chrono::DateTime::parse_from_rfc3339(s).ok().map(|d| d.timestamp_micros() as f64 / 1e6)
}

/// An optional value for people: the value, or "none" (never `Some(…)`).
pub(crate) fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or_else(|| "none".into(), |v| v.to_string())
}

/// The first 12 characters of a handoff id (all of it if shorter, or if
/// the 12th byte is not a character boundary).
pub(crate) fn short(h: &str) -> &str {
    h.get(..12).unwrap_or(h)
}

/// The round's configuration from its `round.json` (`path`), typed: a
/// `config` that is not one is the round file's error, not a default.
pub(crate) fn round_config(meta: &Value, path: &Path) -> Result<SavedConfig> {
    serde_json::from_value(meta["config"].clone()).map_err(|source| Error::Json { path: path.to_path_buf(), source })
}

/// The round's `round.json`.
pub(crate) fn read_meta(path: &Path) -> Result<Value> {
    let bytes = std::fs::read(path).map_err(Error::io("reading", path))?;
    serde_json::from_slice(&bytes).map_err(|source| Error::Json { path: path.to_path_buf(), source })
}
