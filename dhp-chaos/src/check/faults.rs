//! The injected faults, walked once: counts by kind and role, and for every
//! lease-holding victim the time until its handoff was orphaned (the
//! detection latencies; `undetected` feeds the detection invariant).

use super::ctx::Ctx;
use super::report::{stats, FaultLatency, Latencies, Stalls};
use super::short;
use crate::hist::Ev;
use crate::round::ORPHANED;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap, HashSet};

#[derive(Debug, Default)]
pub(crate) struct FaultWalk {
    pub(crate) latencies: Latencies,
    pub(crate) store_stalls: Stalls,
    pub(crate) faults_by_kind: BTreeMap<String, u64>,
    pub(crate) kills_by_role: BTreeMap<String, u64>,
    pub(crate) kills: u64,
    /// Faulted worker → the handoff it worked on.
    pub(crate) rework_victims: HashMap<String, String>,
}

pub(crate) fn walk(cx: &Ctx<'_>) -> FaultWalk {
    let mut w = FaultWalk::default();
    let r = round_facts(cx);
    let mut s = Samples::default();
    let mut seen_fault_ids: HashSet<u64> = HashSet::new();
    for f in &cx.ix.faults {
        let kind = f.s("kind").unwrap_or("");
        let sig = f.s("signal").unwrap_or("");
        if kind == "teardown" || kind == "resume" {
            continue;
        }
        let fid = f.u("fault_id").unwrap_or(0);
        if seen_fault_ids.insert(fid) {
            *w.faults_by_kind
                .entry(if kind == "failpoint" {
                    format!("failpoint:{}", f.s("failpoint").unwrap_or("?"))
                } else {
                    kind.to_string()
                })
                .or_default() += 1;
        }
        // a terminated backend or a crashed server kills no process: the
        // victims live on (their latencies, if any, are the kills' and pauses')
        if kind == "db-terminate-backend" || kind == "db-crash" || kind == "db-failover" {
            continue;
        }
        let victim = f.s("victim").unwrap_or("").to_string();
        let role = f.s("role").unwrap_or("");
        if sig == "KILL" {
            w.kills += 1;
            *w.kills_by_role.entry(role.to_string()).or_default() += 1;
        }
        if role == "supervisor" {
            if sig == "KILL" && f.get("leader").and_then(Value::as_bool) == Some(true) {
                let t = f.t();
                if let Some(o) = cx.ix.observes.iter().find(|o| {
                    o.s("what") == Some("leader") && o.t() >= t && o.s("holder").is_some_and(|hh| hh != victim)
                }) {
                    s.leader.push(o.t() - t);
                }
            }
            continue;
        }
        // worker victim
        let Some(hid) = f.hid().map(String::from) else { continue };
        w.rework_victims.insert(victim.clone(), hid.clone());
        if kind == "host-death" {
            // its host's supervisors died with it: the standby takes the
            // handoff over from the shipped log (the failover invariant)
            continue;
        }
        worker_fault(cx, &r, Victim { f, victim: &victim, hid: &hid }, &mut w.latencies, &mut s);
    }
    let lat = &mut w.latencies;
    lat.worker_kill = stats(s.worker_kill);
    lat.kill_to_resume = stats(s.kill_resume);
    lat.worker_kill_steady = stats(s.steady);
    lat.pause = stats(s.pause);
    lat.failpoint = stats(s.failpoint);
    lat.leader_failover = stats(s.leader);
    w.store_stalls = Stalls {
        n: r.stall_windows.len(),
        total_s: r.stall_windows.iter().map(|(a, b)| b - a).sum(),
        max_s: r.stall_windows.iter().map(|(a, b)| b - a).fold(0.0, f64::max),
    };
    w
}

/// The latencies the walk gathers, before their statistics.
#[derive(Default)]
struct Samples {
    worker_kill: Vec<f64>,
    pause: Vec<f64>,
    failpoint: Vec<f64>,
    leader: Vec<f64>,
    kill_resume: Vec<f64>,
    steady: Vec<f64>,
}

/// What every fault of the round is judged against.
struct RoundFacts {
    /// Store stalls the harness's monitor saw: (since, until).
    stall_windows: Vec<(f64, f64)>,
    /// Database outages (`db-crash`).
    outages: Vec<(f64, f64)>,
    /// When supervisors were SIGKILLed.
    sup_kills: Vec<f64>,
    /// The monitor's leader observations: (at, someone leads).
    leader_obs: Vec<(f64, bool)>,
    leader_ttl: f64,
    scan: f64,
    /// `--hosts`: when this host died (every supervisor of its store with it).
    host_death: Option<f64>,
    /// The longest a live leader may take to orphan a lease that stopped being renewed.
    detect_bound: f64,
}

fn round_facts(cx: &Ctx<'_>) -> RoundFacts {
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
    let (timing, clock) = (&cx.cfg.timing, &cx.cfg.clock);
    let (leader_ttl, scan) = (timing.leader_ttl_s, timing.supervisor_scan_s);
    // `--hosts`: when this host died (every supervisor of its store with it)
    let host_death = cx.ix.faults.iter().filter(|f| f.s("kind") == Some("host-death")).map(|f| f.t()).reduce(f64::min);
    // the longest a live leader may take to orphan a lease that stopped being renewed: the lease
    // runs out, a leaderless gap ends (leader TTL), a scan finds it; a supervisor on a faked clock
    // reads the expiry up to the clock offset late
    let detect_bound = timing.lease_interval_s * timing.lease_max_missed
        + leader_ttl
        + 2.0 * scan
        + if clock.share > 0.0 { clock.max_offset_s } else { 0.0 };
    RoundFacts {
        stall_windows,
        outages: db_outages(cx),
        sup_kills,
        leader_obs,
        leader_ttl,
        scan,
        host_death,
        detect_bound,
    }
}

/// A fault of a worker that worked on `hid`.
#[derive(Clone, Copy)]
struct Victim<'a> {
    f: &'a Ev,
    victim: &'a str,
    hid: &'a str,
}

/// Where an orphan's time was read.
#[derive(Clone, Copy, PartialEq, Eq)]
enum OrphanSource {
    History,
    Audit,
    Monitor,
}

/// One fault of a lease-holding worker: how long until its handoff was
/// orphaned, or why it never was.
fn worker_fault(cx: &Ctx<'_>, r: &RoundFacts, v: Victim<'_>, lat: &mut Latencies, s: &mut Samples) {
    let (victim, hid, t) = (v.victim, v.hid, v.f.t());
    let Some(fence) = held_fence(cx, v) else { return };
    // the store audit's changes of (victim, fence): orphaned, or deleted (completed)
    let audited: Vec<super::audit::Transition> = cx.audit.map_or_else(Vec::new, |a| {
        a.transitions()
            .iter()
            .filter(|tr| tr.hid == hid && tr.old.as_ref().is_some_and(|(h, fe)| h == victim && *fe == fence))
            .cloned()
            .collect()
    });
    let audit_orphan_t =
        audited.iter().filter(|tr| tr.kind == super::audit::Kind::Orphan).map(|tr| tr.at).reduce(f64::min);
    let orphaned_before = cx.ix.orphans.iter().any(|o| o.hid == hid && o.previous_fence == Some(fence) && o.t < t)
        || audit_orphan_t.is_some_and(|at| at < t);
    let completed_before = cx
        .ix
        .ops
        .iter()
        .any(|o| o.process == victim && o.op == "complete" && o.ok == Some(true) && o.out_t.unwrap_or(0.0) <= t)
        || audited.iter().any(|tr| tr.kind == super::audit::Kind::Delete && tr.at <= t);
    if orphaned_before || completed_before {
        lat.resolved_before += 1;
        return;
    }
    match orphan_time(cx, v, fence, audit_orphan_t) {
        Some((ot, source)) => detected(cx, r, v, fence, (ot, source), lat, s),
        None => {
            let sig = v.f.s("signal").unwrap_or("");
            let kind = v.f.s("kind").unwrap_or("");
            let st = cx.store.get(hid).map(|h| h.status.as_str()).unwrap_or("");
            let completed_by_victim = cx
                .ix
                .ops
                .iter()
                .any(|o| o.process == victim && o.hid == hid && o.op == "complete" && o.ok != Some(false))
                || audited.iter().any(|tr| tr.kind == super::audit::Kind::Delete);
            if sig == "STOP" && st == "completed" {
                return; // woken before its lease ran out and finished, or completed by others after it
            }
            // its host died before the lease could have been orphaned: no supervisor of this
            // store is left to orphan it, and the standby takes the handoff over from the
            // shipped log (the failover invariant checks that)
            if r.host_death.is_some_and(|hd| hd >= t && hd - t < r.detect_bound) {
                lat.host_died_first += 1;
                return;
            }
            if !completed_by_victim {
                lat.undetected.push(format!("{victim} ({kind}) holding {} fence {fence}", short(hid)));
            }
        }
    }
}

/// The fence the victim held at the fault, from its own history, else
/// from the harness's monitor.
fn held_fence(cx: &Ctx<'_>, v: Victim<'_>) -> Option<i64> {
    let (victim, hid, t) = (v.victim, v.hid, v.f.t());
    cx.ix
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
        .max()
        // the harness's own monitor saw it hold this fence at the fault, on
        // a handoff the store audit shows running then (a torn claim's
        // pending handoff is no lease to detect)
        .or_else(|| {
            let running = cx.audit.is_some_and(|a| {
                a.handoff_changes(hid).filter(|e| e.at <= t).filter_map(|e| e.new_s("status")).last() == Some("running")
            });
            v.f.i("lease_fence").filter(|_| running)
        })
}

/// When the victim's handoff was orphaned from `fence`, and where that was read.
fn orphan_time(cx: &Ctx<'_>, v: Victim<'_>, fence: i64, audit_orphan_t: Option<f64>) -> Option<(f64, OrphanSource)> {
    let (victim, hid) = (v.victim, v.hid);
    let from_history = cx
        .ix
        .orphans
        .iter()
        .filter(|o| {
            o.hid == hid && o.previous_fence == Some(fence) && o.previous_holder.as_deref().is_none_or(|p| p == victim)
        })
        .map(|o| o.t)
        .reduce(f64::min);
    if let Some(ot) = from_history {
        return Some((ot, OrphanSource::History));
    }
    if let Some(at) = audit_orphan_t {
        return Some((at, OrphanSource::Audit));
    }
    cx.ix
        .observes
        .iter()
        .filter(|o| {
            o.hid() == Some(hid) && o.s("holder") == Some(ORPHANED) && o.i("fence").is_some_and(|of| of > fence)
        })
        .map(|o| o.t())
        .reduce(f64::min)
        .map(|ot| (ot, OrphanSource::Monitor))
}

/// A fault whose handoff was orphaned at `ot`: its latency, and for a
/// SIGKILL what disturbed it (or that it was steady-state).
fn detected(
    cx: &Ctx<'_>,
    r: &RoundFacts,
    v: Victim<'_>,
    fence: i64,
    (ot, source): (f64, OrphanSource),
    lat: &mut Latencies,
    s: &mut Samples,
) {
    let (victim, hid, t) = (v.victim, v.hid, v.f.t());
    let (kind, sig) = (v.f.s("kind").unwrap_or(""), v.f.s("signal").unwrap_or(""));
    match source {
        OrphanSource::History => lat.from_history += 1,
        OrphanSource::Audit => lat.from_audit += 1,
        OrphanSource::Monitor => lat.from_monitor += 1,
    }
    let d = (ot - t).max(0.0);
    let mut disturbed: Option<String> = None;
    match (kind, sig) {
        ("failpoint", _) => s.failpoint.push(d),
        (_, "STOP") => s.pause.push(d),
        (_, "KILL") => {
            s.worker_kill.push(d);
            if let Some(resumed) = cx
                .ix
                .ops
                .iter()
                .filter(|o| o.hid == hid && o.op == "checkpoint" && o.ok == Some(true) && o.process != victim)
                .filter(|o| o.fence.is_some_and(|f| f > fence) && o.out_t.unwrap_or(o.invoke_t) >= t)
                .map(|o| o.out_t.unwrap_or(o.invoke_t))
                .reduce(f64::min)
            {
                s.kill_resume.push(resumed - t);
            }
            let leader_up = r.leader_obs.iter().rev().find(|(lt, _)| *lt <= t).is_some_and(|(_, up)| *up);
            let why = if r.outages.iter().any(|(a, b)| *a < ot && *b > t) {
                Some("database down (db-crash)")
            } else if r.stall_windows.iter().any(|(a, b)| *a < ot && *b > t) {
                Some("store stalled by a stopped worker")
            } else if r.sup_kills.iter().any(|k| *k >= t - r.leader_ttl - r.scan && *k <= ot) {
                Some("supervisor killed around it")
            } else if !leader_up {
                Some("no live leader at the kill")
            } else {
                None
            };
            match why {
                None => s.steady.push(d),
                Some(cause) => *lat.disturbed_by.entry(cause.to_string()).or_default() += 1,
            }
            disturbed = why.map(String::from);
        }
        _ => {}
    }
    lat.per_fault.push(FaultLatency {
        fault_id: v.f.u("fault_id").unwrap_or(0),
        kind: kind.to_string(),
        signal: sig.to_string(),
        victim: victim.to_string(),
        hid: short(hid).to_string(),
        fence,
        latency_s: d,
        source: match source {
            OrphanSource::History => "supervisor history",
            OrphanSource::Audit => "store audit",
            OrphanSource::Monitor => "monitor",
        }
        .into(),
        disturbed_by: disturbed,
    });
}

pub(crate) fn db_outages(cx: &Ctx<'_>) -> Vec<(f64, f64)> {
    super::indeterminate::outages(cx.ix, cx.meta["t_end"].as_f64().unwrap_or(f64::INFINITY))
}
