//! The injected faults, walked once: counts by kind and role, and for every
//! lease-holding victim the time until its handoff was orphaned (the
//! detection latencies; `undetected` feeds the detection invariant).

use super::ctx::Ctx;
use super::report::{stats, FaultLatency, Latencies, Stalls};
use super::short;
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
    let lat = &mut w.latencies;
    let mut worker_kill = Vec::new();
    let mut pause_l = Vec::new();
    let mut fp_l = Vec::new();
    let mut leader_l = Vec::new();
    let mut kill_resume = Vec::new();
    let mut seen_fault_ids: HashSet<u64> = HashSet::new();
    let stall_windows: Vec<(f64, f64)> = cx
        .ix
        .observes
        .iter()
        .filter(|o| o.s("what") == Some("store-stall"))
        .filter_map(|o| Some((o.get("since")?.as_f64()?, o.get("until")?.as_f64()?)))
        .collect();
    let outages = db_outages(cx);
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
    let mut steady = Vec::new();

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
                    leader_l.push(o.t() - t);
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
            .max()
            // the harness's own monitor saw it hold this fence at the fault, on
            // a handoff the store audit shows running then (a torn claim's
            // pending handoff is no lease to detect)
            .or_else(|| {
                let running = cx.audit.is_some_and(|a| {
                    a.handoff_changes(&hid).filter(|e| e.at <= t).filter_map(|e| e.new_s("status")).last()
                        == Some("running")
                });
                f.i("lease_fence").filter(|_| running)
            });
        let Some(fence) = held else { continue };
        // the store audit's changes of (victim, fence): orphaned, or deleted (completed)
        let audited: Vec<super::audit::Transition> = cx.audit.map_or_else(Vec::new, |a| {
            a.transitions()
                .iter()
                .filter(|tr| tr.hid == hid && tr.old.as_ref().is_some_and(|(h, fe)| h == &victim && *fe == fence))
                .cloned()
                .collect()
        });
        let audit_orphan_t =
            audited.iter().filter(|tr| tr.kind == super::audit::Kind::Orphan).map(|tr| tr.at).reduce(f64::min);
        let orphaned_before = cx.ix.orphans.iter().any(|o| o.hid == hid && o.previous_fence == Some(fence) && o.t < t)
            || audit_orphan_t.is_some_and(|at| at < t);
        let completed_before =
            cx.ix.ops.iter().any(|o| {
                o.process == victim && o.op == "complete" && o.ok == Some(true) && o.out_t.unwrap_or(0.0) <= t
            }) || audited.iter().any(|tr| tr.kind == super::audit::Kind::Delete && tr.at <= t);
        if orphaned_before || completed_before {
            lat.resolved_before += 1;
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
            None if audit_orphan_t.is_some() => (audit_orphan_t, false),
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
                } else if audit_orphan_t.is_some() {
                    lat.from_audit += 1;
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
                        let why = if outages.iter().any(|(a, b)| *a < ot && *b > t) {
                            Some("database down (db-crash)")
                        } else if stall_windows.iter().any(|(a, b)| *a < ot && *b > t) {
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
                            Some(cause) => *lat.disturbed_by.entry(cause.to_string()).or_default() += 1,
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
                    source: if from_hist {
                        "supervisor history"
                    } else if audit_orphan_t.is_some() {
                        "store audit"
                    } else {
                        "monitor"
                    }
                    .into(),
                    disturbed_by: disturbed,
                });
            }
            None => {
                let st = cx.store.get(&hid).map(|h| h.status.as_str()).unwrap_or("");
                let completed_by_victim = cx
                    .ix
                    .ops
                    .iter()
                    .any(|o| o.process == victim && o.hid == hid && o.op == "complete" && o.ok != Some(false))
                    || audited.iter().any(|tr| tr.kind == super::audit::Kind::Delete);
                if sig == "STOP" && st == "completed" {
                    continue; // woken before its lease ran out and finished, or completed by others after it
                }
                // its host died before the lease could have been orphaned: no supervisor of this
                // store is left to orphan it, and the standby takes the handoff over from the
                // shipped log (the failover invariant checks that)
                if host_death.is_some_and(|hd| hd >= t && hd - t < detect_bound) {
                    lat.host_died_first += 1;
                    continue;
                }
                if !completed_by_victim {
                    lat.undetected.push(format!("{victim} ({kind}) holding {} fence {fence}", short(&hid)));
                }
            }
        }
    }
    lat.worker_kill = stats(worker_kill);
    lat.kill_to_resume = stats(kill_resume);
    lat.worker_kill_steady = stats(steady);
    lat.pause = stats(pause_l);
    lat.failpoint = stats(fp_l);
    lat.leader_failover = stats(leader_l);
    w.store_stalls = Stalls {
        n: stall_windows.len(),
        total_s: stall_windows.iter().map(|(a, b)| b - a).sum(),
        max_s: stall_windows.iter().map(|(a, b)| b - a).fold(0.0, f64::max),
    };
    w
}

/// The database's outages (see [`super::indeterminate::outages`]).
pub(crate) fn db_outages(cx: &Ctx<'_>) -> Vec<(f64, f64)> {
    super::indeterminate::outages(cx.ix, cx.meta["t_end"].as_f64().unwrap_or(f64::INFINITY))
}
