//! The net-chaos report: per round, where the kill landed and what reached
//! the peer; the verdict; `netchaos.json`, `results.json` and the lines
//! printed ("N/N checkpoints landed on the peer, rework K").

use super::net_chaos::Options;
use super::relay::Moment;
use crate::check::{self, Landing, RoundReport};
use crate::config::RoundConfig;
use crate::{hist, report, timeline};
use anyhow::Result;
use serde::Serialize;
use serde_json::json;
use std::collections::BTreeMap;
use std::path::Path;

/// One round's kill as the driver saw it.
#[derive(Debug, Clone)]
pub(super) struct Kill {
    pub(super) round: u32,
    pub(super) hid: String,
    pub(super) moment: Moment,
    pub(super) seq: i64,
    pub(super) victim: String,
    /// When the SIGKILL was sent (`None`: the victim ended before its moment).
    pub(super) t_kill: Option<f64>,
    /// `relay` (the relay saw the moment) or `store` (the worker went two
    /// checkpoints past it without the relay seeing its ship).
    pub(super) reached_via: Option<String>,
    /// Seconds from the kill until the harness saw the orphan.
    pub(super) orphan_seen_after_s: Option<f64>,
    pub(super) standbys: Vec<String>,
}

impl Kill {
    pub(super) fn new(round: u32, hid: &str, moment: Moment, seq: i64, victim: &str) -> Kill {
        Kill {
            round,
            hid: hid.to_string(),
            moment,
            seq,
            victim: victim.to_string(),
            t_kill: None,
            reached_via: None,
            orphan_seen_after_s: None,
            standbys: Vec::new(),
        }
    }

    /// A progress line.
    pub(super) fn line(&self) -> String {
        let at = format!("{} at seq {}", self.moment.name(), self.seq);
        match self.t_kill {
            Some(_) => format!(
                "round {}: {} SIGKILLed ({at}, seen by the {}), orphan seen after {}, standby {}",
                self.round,
                self.victim,
                self.reached_via.as_deref().unwrap_or("?"),
                self.orphan_seen_after_s.map_or("—".into(), |s| format!("{s:.2} s")),
                if self.standbys.is_empty() { "none".into() } else { self.standbys.join(", ") }
            ),
            None => format!("round {}: {} ended before its moment ({at}): not killed", self.round, self.victim),
        }
    }
}

/// One round in the report.
#[derive(Debug, Clone, Serialize)]
pub struct RoundResult {
    /// Round index (= dispatch index of its handoff).
    pub round: u32,
    /// The handoff.
    pub hid: String,
    /// The planned moment and seq.
    pub moment: Moment,
    /// The seq the moment was armed at.
    pub seq: i64,
    /// The worker killed.
    pub victim: String,
    /// It was SIGKILLed.
    pub killed: bool,
    /// `relay` or `store` (see the driver).
    pub reached_via: Option<String>,
    /// Where the kill landed according to the victim's own history.
    pub observed: String,
    /// Seconds from the kill until the harness saw the orphan.
    pub orphan_seen_after_s: Option<f64>,
    /// The standbys that recovered it.
    pub standbys: Vec<String>,
    /// Final status in the store.
    pub status: String,
    /// Checkpoints committed / landed on the peer.
    pub committed: u64,
    /// Of those, on the peer with the store's hash.
    pub landed: u64,
    /// Committed seqs missing on the peer.
    pub missing: Vec<i64>,
    /// Committed seqs on the peer only with another hash.
    pub altered: Vec<i64>,
    /// Chunks the killed worker computed but did not commit itself.
    pub rework_chunks: u64,
}

/// The scenario's result.
#[derive(Debug, Clone, Serialize)]
pub struct NetChaosReport {
    /// The seed.
    pub seed: u64,
    /// Rounds and checkpoints per round.
    pub rounds: u32,
    /// Checkpoints per handoff.
    pub checkpoints_per_round: u64,
    /// Worker implementation (`builtin`, `python`, `cmd:…`).
    pub workers: String,
    /// The peer's transport server.
    pub transport: String,
    /// Checkpoints the store committed, over all rounds.
    pub committed: u64,
    /// Of those, on the peer with the store's hash.
    pub landed: u64,
    /// Chunks redone (computed by a killed worker and not committed by it).
    pub rework: u64,
    /// Kills by where they landed.
    pub kills_by_moment: BTreeMap<String, u64>,
    /// Every promise held: all landed, rework ≤ 1 per kill, all completed, invariants held.
    pub held: bool,
    /// Why not, one line each.
    pub failures: Vec<String>,
    /// Per round.
    pub per_round: Vec<RoundResult>,
}

/// Where the victim's kill landed, from its own history lines.
fn observed(h: &hist::History, k: &Kill) -> String {
    if k.t_kill.is_none() {
        return "not killed: the worker ended first".into();
    }
    let mine = || h.events.iter().filter(|e| e.process() == k.victim && e.op() == "checkpoint");
    let last_ok = mine().filter(|e| e.ty() == "ok").filter_map(|e| e.i("seq")).max();
    let invokes = mine().filter(|e| e.ty() == "invoke").count();
    let oks = mine().filter(|e| e.ty() == "ok" || e.ty() == "fail").count();
    match last_ok {
        _ if invokes > oks => {
            format!("late: inside the checkpoint after seq {}", last_ok.map_or("none".into(), |s| s.to_string()))
        }
        Some(m) if m == k.seq => k.moment.name().into(),
        Some(m) if m > k.seq => format!("late: after seq {m}"),
        Some(m) => format!("early: after seq {m}"),
        None => "before any checkpoint".into(),
    }
}

/// Check the round, build and print the report, write the files; the exit code.
pub(super) fn finish(cfg: &RoundConfig, o: &Options, out: &Path, dir: &Path, kills: &[Kill]) -> Result<i32> {
    let r = check::check_round(dir)?;
    std::fs::write(dir.join("round-report.json"), serde_json::to_vec_pretty(&r)?)?;
    timeline::write(dir)?;
    let landing = check::landing(dir)?;
    let history = hist::load(&dir.join("history.jsonl"))?;
    let rep = build(cfg, o, &r, &landing, &history, kills);
    std::fs::write(dir.join("netchaos.json"), serde_json::to_vec_pretty(&rep)?)?;
    let totals = report::totals(std::slice::from_ref(&r));
    print!("{}", report::summary(std::slice::from_ref(&r), &totals, true));
    print!("{}", text(&rep));
    let code = if rep.held { 0 } else { 1 };
    let results = json!({
        "seed": cfg.seed,
        "scenario": "net-chaos",
        "command": std::env::args().collect::<Vec<_>>(),
        "note": "a seed replays the fault schedule, not the OS interleaving; verdicts rest on the harness's own sources (store audit, workload service, processes, store, transport logs); each round's history.jsonl is optional detail",
        "exit_code": code,
        "harness_error": null,
        "totals": totals,
        "rounds": [r],
        "net_chaos": rep,
    });
    std::fs::write(out.join("results.json"), serde_json::to_vec_pretty(&results)?)?;
    println!("\nresults: {}", out.join("results.json").display());
    Ok(code)
}

fn build(
    cfg: &RoundConfig,
    o: &Options,
    r: &RoundReport,
    landing: &[Landing],
    h: &hist::History,
    kills: &[Kill],
) -> NetChaosReport {
    let mut failures = Vec::new();
    let mut per_round = Vec::new();
    let mut by_moment = BTreeMap::new();
    for k in kills {
        let l = landing.iter().find(|l| l.hid == k.hid);
        let rework =
            l.map_or(0, |l| l.rework.iter().filter(|(v, _)| v == &k.victim).map(|(_, c)| c.len() as u64).sum());
        let obs = observed(h, k);
        *by_moment.entry(obs.split(':').next().unwrap_or("?").to_string()).or_insert(0) += 1;
        let rr = RoundResult {
            round: k.round,
            hid: k.hid.clone(),
            moment: k.moment,
            seq: k.seq,
            victim: k.victim.clone(),
            killed: k.t_kill.is_some(),
            reached_via: k.reached_via.clone(),
            observed: obs,
            orphan_seen_after_s: k.orphan_seen_after_s,
            standbys: k.standbys.clone(),
            status: l.map_or(String::new(), |l| l.status.clone()),
            committed: l.map_or(0, |l| l.committed),
            landed: l.map_or(0, |l| l.landed),
            missing: l.map_or(Vec::new(), |l| l.missing.clone()),
            altered: l.map_or(Vec::new(), |l| l.altered.clone()),
            rework_chunks: rework,
        };
        let short = check::short(&k.hid);
        if !rr.missing.is_empty() {
            failures.push(format!("round {} ({short}): seqs {:?} committed but not on the peer", k.round, rr.missing));
        }
        if !rr.altered.is_empty() {
            failures.push(format!("round {} ({short}): seqs {:?} on the peer with another hash", k.round, rr.altered));
        }
        if rework > 1 {
            failures.push(format!("round {} ({short}): {rework} chunks redone for one kill", k.round));
        }
        if rr.status != "completed" {
            failures.push(format!("round {} ({short}): ended {:?}, not completed", k.round, rr.status));
        }
        per_round.push(rr);
    }
    if !(r.held || (o.allow_known_reference_bugs && r.unexplained() == 0)) {
        let names: Vec<&str> = r.invariants.iter().filter(|v| !v.held()).map(|v| v.name.as_str()).collect();
        failures.push(format!("invariants violated: {}", names.join(", ")));
    }
    NetChaosReport {
        seed: cfg.seed,
        rounds: o.rounds,
        checkpoints_per_round: o.checkpoints,
        workers: cfg.workers.label(),
        transport: match &cfg.transport {
            _ if super::net_procs::python_peer(cfg) => {
                "the reference's TransportServer (adapters/reference/chaos/net_peer.py)".into()
            }
            Some(t) => t.join(" "),
            None => "dhp transport".into(),
        },
        committed: per_round.iter().map(|r| r.committed).sum(),
        landed: per_round.iter().map(|r| r.landed).sum(),
        rework: per_round.iter().map(|r| r.rework_chunks).sum(),
        kills_by_moment: by_moment,
        held: failures.is_empty(),
        failures,
        per_round,
    }
}

/// The printed lines (terminal-safe: victims and statuses are judged text).
fn text(rep: &NetChaosReport) -> String {
    dhp_markup::terminal(&text_raw(rep))
}

fn text_raw(rep: &NetChaosReport) -> String {
    let mut s = format!(
        "\nnet-chaos (seed {}): {} rounds × {} checkpoints, workers {}, peer: {}\n",
        rep.seed, rep.rounds, rep.checkpoints_per_round, rep.workers, rep.transport
    );
    s += "  round  handoff       kill planned              observed                 landed  missing  rework\n";
    for r in &rep.per_round {
        s += &format!(
            "  {:<5}  {:<12}  {:<24}  {:<23}  {:>6}  {:<7}  {}\n",
            r.round,
            check::short(&r.hid),
            format!("{} seq {}", r.moment.name(), r.seq),
            r.observed,
            format!("{}/{}", r.landed, r.committed),
            if r.missing.is_empty() { "-".into() } else { format!("{:?}", r.missing) },
            r.rework_chunks
        );
    }
    s += &format!(
        "net-chaos: {}/{} checkpoints landed on the peer, rework {} ({} kills)\n",
        rep.landed,
        rep.committed,
        rep.rework,
        rep.per_round.iter().filter(|r| r.killed).count()
    );
    for f in &rep.failures {
        s += &format!("  FAILED: {f}\n");
    }
    s += if rep.held { "net-chaos: HELD\n" } else { "net-chaos: FAILED\n" };
    s
}

/// `dhp-chaos analyze` of a saved net-chaos round: the kills rebuilt from
/// its `round.json` (the plan) and history (spawns and faults), the landing
/// read again from its store and peer log. `None`: not a net-chaos round.
/// Returns whether it held, and the printed lines.
pub fn reanalyze(dir: &Path) -> Result<Option<(bool, String)>> {
    let meta: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join("round.json"))?)?;
    if meta["scenario"] != "net-chaos" {
        return Ok(None);
    }
    let cfg: RoundConfig = serde_json::from_value(meta["config"].clone())?;
    let history = hist::load(&dir.join("history.jsonl"))?;
    let plan: Vec<(Moment, i64)> = meta["net_chaos_plan"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| Some((serde_json::from_value(p["moment"].clone()).ok()?, p["seq"].as_i64()?)))
        .collect();
    let hids: Vec<String> = serde_json::from_value(meta["hids"].clone())?;
    let chaos = || history.events.iter().filter(|e| e.is_chaos());
    let mut kills = Vec::new();
    for (i, ((moment, seq), hid)) in plan.iter().zip(&hids).enumerate() {
        let spawns = || chaos().filter(|e| e.op() == "spawn" && e.s("hid") == Some(hid.as_str()));
        let Some(victim) = spawns().find(|e| e.s("mode") == Some("claim")).and_then(|e| e.s("name")) else { continue };
        let mut k = Kill::new(i as u32, hid, *moment, *seq, victim);
        if let Some(f) =
            chaos().find(|e| e.op() == "fault" && e.s("victim") == Some(victim) && e.s("kind") == Some("kill-worker"))
        {
            k.t_kill = Some(f.t());
            k.reached_via = f.s("reached_via").map(String::from);
        }
        k.standbys =
            spawns().filter(|e| e.s("mode") == Some("recover")).filter_map(|e| e.s("name").map(String::from)).collect();
        kills.push(k);
    }
    let r = check::check_round(dir)?;
    let landing = check::landing(dir)?;
    let o =
        Options { rounds: plan.len() as u32, checkpoints: cfg.chunks, quiet: true, allow_known_reference_bugs: false };
    let rep = build(&cfg, &o, &r, &landing, &history, &kills);
    Ok(Some((rep.held, text(&rep))))
}
