//! Figures of the link, clock and disk faults for the round report: what
//! the faked clocks cost (false orphans, and the work they threw away),
//! how many ships a link fault left indeterminate, and when a disk filled.

use super::ctx::Ctx;
use super::short;
use crate::hist::Ev;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// Figures of the round's link, clock and disk faults.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EnvFacts {
    /// Processes started with a faked clock (`--clock`).
    pub clock_faked: u64,
    /// Handoffs orphaned while their holder was alive and not stopped.
    pub false_orphans: u64,
    /// Of those, where the holder or the orphaning supervisor had a faked clock.
    pub false_orphans_skewed: u64,
    /// Chunks those skew-orphaned holders computed and did not commit themselves.
    pub skew_rework_chunks: u64,
    /// Checkpoints shipped through the link proxy that got no ack back
    /// (refused, connection cut, server gone): may or may not have landed.
    pub link_indeterminate: u64,
    /// Times the transport server's disk was seen full (`--disk`).
    pub disk_full: u64,
    /// Times the SQLite store's disk was filled (`--store-disk`).
    #[serde(default)]
    pub store_full: u64,
    /// Orphans a `db-link` fault caused (worker-died: its liveness
    /// connection was cut; lease-expired: its heartbeat was held past the
    /// lease): the availability cost of the workers' database link faults.
    #[serde(default)]
    pub db_link_orphans: u64,
    /// Workers' operations that a `db-link` fault cut (failed while it was
    /// on): indeterminate.
    #[serde(default)]
    pub db_link_indeterminate: u64,
    /// Seconds from a blackhole on the workers' database link to the reply
    /// (or error) of each worker operation it held: p50 and max (0: none).
    #[serde(default)]
    pub db_link_blackhole_wait_p50_s: f64,
    /// See [`EnvFacts::db_link_blackhole_wait_p50_s`].
    #[serde(default)]
    pub db_link_blackhole_wait_max_s: f64,
    /// Worker operations held by a blackhole (the sample of the two above).
    #[serde(default)]
    pub db_link_blackhole_ops: u64,
    /// A few false orphans, for people.
    pub examples: Vec<String>,
}

pub(crate) fn facts(cx: &Ctx<'_>) -> EnvFacts {
    let mut out = EnvFacts {
        clock_faked: cx.ix.clock.len() as u64,
        link_indeterminate: cx.acks.as_deref().map_or(0, |a| super::invariants::indeterminate(a) as u64),
        disk_full: cx.ix.observes.iter().filter(|o| o.s("what") == Some("disk-full")).count() as u64,
        store_full: cx.ix.observes.iter().filter(|o| o.s("what") == Some("store-full")).count() as u64,
        ..EnvFacts::default()
    };
    db_link_facts(cx, &mut out);
    let killed_by = |p: &str, t: f64| {
        cx.ix.exits.get(p).is_some_and(|x| *x <= t)
            || cx.ix.faults.iter().any(|f| f.s("victim") == Some(p) && f.s("signal") == Some("KILL") && f.t() <= t)
    };
    for o in &cx.ix.orphans {
        let Some(holder) = o.previous_holder.as_deref() else { continue };
        if cx.ix.spawns.get(holder).is_none_or(|s| s.role != "worker")
            || killed_by(holder, o.t)
            || stopped(cx, holder, o.t)
        {
            continue;
        }
        out.false_orphans += 1;
        let skewed = cx.clock_faked(holder) || cx.clock_faked(&o.supervisor);
        if !skewed {
            continue;
        }
        out.false_orphans_skewed += 1;
        let lost = lost_chunks(cx, holder, &o.hid);
        out.skew_rework_chunks += lost;
        if out.examples.len() < 5 {
            out.examples.push(format!(
                "{}: {} orphaned live {holder} (fence {}){}; {lost} chunk(s) of its work lost",
                short(&o.hid),
                o.supervisor,
                o.previous_fence.map_or_else(|| "?".into(), |f| f.to_string()),
                [(holder, "holder"), (o.supervisor.as_str(), "supervisor")]
                    .iter()
                    .filter_map(|(p, r)| cx.ix.clock.get(*p).map(|s| format!(", {r} clock {s}")))
                    .collect::<String>()
            ));
        }
    }
    out
}

/// The `db-link` figures: orphans the faults caused, operations they cut,
/// and how long a blackhole held the workers' operations.
fn db_link_facts(cx: &Ctx<'_>, out: &mut EnvFacts) {
    let ws = super::db_link::windows(cx.ix, cx.meta["t_end"].as_f64().unwrap_or(f64::INFINITY));
    if ws.is_empty() {
        return;
    }
    let timing = &cx.cfg.timing;
    let ttl = timing.lease_interval_s * timing.lease_max_missed;
    out.db_link_orphans = cx
        .ix
        .orphans
        .iter()
        .filter(|o| {
            o.previous_holder.as_deref().is_some_and(|h| {
                cx.ix.spawns.get(h).is_some_and(|s| s.role == "worker")
                    && !cx.ix.faults.iter().any(|f| f.s("victim") == Some(h) && f.t() <= o.t)
            })
        })
        .filter(|o| super::db_link::explains(&ws, o.reason.as_deref(), o.t, ttl))
        .count() as u64;
    out.db_link_indeterminate =
        cx.ix.ops.iter().filter(|o| o.indeterminate && ws.iter().any(|w| super::db_link::cut_by(o, w))).count() as u64;
    let mut waits = super::db_link::blackhole_waits(cx.ix, &ws);
    waits.sort_by(f64::total_cmp);
    out.db_link_blackhole_ops = waits.len() as u64;
    out.db_link_blackhole_wait_p50_s = waits.get(waits.len() / 2).copied().unwrap_or(0.0);
    out.db_link_blackhole_wait_max_s = waits.last().copied().unwrap_or(0.0);
}

/// Was `p` SIGSTOPped at `t` (stopped before, not continued since)?
fn stopped(cx: &Ctx<'_>, p: &str, t: f64) -> bool {
    cx.ix
        .faults
        .iter()
        .rev()
        .filter(|f: &&&Ev| f.s("victim") == Some(p) && f.t() <= t)
        .find(|f| matches!(f.s("signal"), Some("STOP") | Some("CONT")))
        .is_some_and(|f| f.s("signal") == Some("STOP"))
}

/// Chunks `p` computed for `hid` (it invoked their checkpoint) that it did not commit itself.
fn lost_chunks(cx: &Ctx<'_>, p: &str, hid: &str) -> u64 {
    let Some(by_chunk) = cx.chunk_writers(hid) else { return 0 };
    let computed: BTreeSet<u64> = cx
        .ix
        .ops
        .iter()
        .filter(|o| o.process == p && o.hid == hid && o.op == "checkpoint")
        .filter_map(|o| o.next_n)
        .collect();
    computed
        .iter()
        .filter(|n| match by_chunk.get(n) {
            Some(Some(w)) => w != p,
            Some(None) => false,
            None => true,
        })
        .count() as u64
}
