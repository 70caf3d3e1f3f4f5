//! `db-link` faults (a toxic on the proxy between the workers and
//! PostgreSQL) as the checker sees them: their windows, the worker
//! operations they cut (indeterminate), the orphans they caused (an
//! availability cost, not a violation) and how long a worker stayed blind
//! behind a blackhole.
//!
//! Every connection a worker opens goes through the proxy, its liveness
//! lock's included. A toxic that breaks connections (`reset`, `cut-after`,
//! a `blackhole` with a timeout) closes the liveness session too: the
//! server releases the lock as it would for a dead process, and the leader
//! orphans the live worker at once (`worker-died`) — by design, the worker
//! is fenced at its next write. A toxic that only slows or holds the bytes
//! (`latency`, `bandwidth`, a `blackhole` without timeout) keeps the lock
//! but can hold the heartbeat past the lease, so the lease runs out
//! (`lease-expired`).

use super::history::{Index, Op};
use crate::hist::Ev;

/// A worker whose liveness connection broke retakes its lock at its
/// keeper's next ping (0.5 s) plus a reconnect; orphans this long after the
/// heal still belong to the fault.
pub(crate) const RETAKE_S: f64 = 2.0;
/// A worker learns of a broken connection at its next use: failures this
/// long after the heal still belong to the fault.
pub(crate) const AFTER_HEAL_S: f64 = 1.0;

/// One `db-link` fault: when the toxic went on and came off, and what it was.
#[derive(Debug, Clone)]
pub(crate) struct Window {
    pub(crate) t: f64,
    pub(crate) heal: f64,
    pub(crate) toxic: String,
    /// It closes connections (the liveness session's too).
    pub(crate) cuts: bool,
}

fn window(f: &Ev, heals: &[&Ev], t_end: f64) -> Window {
    let toxic = f.get("toxic").and_then(|t| t.get("toxic")).and_then(|t| t.as_str()).unwrap_or("?").to_string();
    let timeout = f.get("toxic").and_then(|t| t.get("timeout_ms")).and_then(|t| t.as_u64()).unwrap_or(0);
    let heal = heals.iter().find(|h| h.u("fault_id") == f.u("fault_id")).map_or(t_end, |h| h.t());
    let cuts = matches!(toxic.as_str(), "reset" | "cut-after") || (toxic == "blackhole" && timeout > 0);
    Window { t: f.t(), heal, toxic, cuts }
}

/// The round's `db-link` faults, in time order (`t_end`: a toxic never healed).
pub(crate) fn windows(ix: &Index<'_>, t_end: f64) -> Vec<Window> {
    ix.faults.iter().filter(|f| f.s("kind") == Some("db-link")).map(|f| window(f, &ix.heals, t_end)).collect()
}

/// Did `o` (a worker's) run into the link while `w` was on — in flight when
/// it went on, or failing within [`AFTER_HEAL_S`] of its heal?
pub(crate) fn cut_by(o: &Op, w: &Window) -> bool {
    let Some(out) = o.out_t else { return false };
    out >= w.t && (o.invoke_t <= w.heal || out <= w.heal + AFTER_HEAL_S)
}

/// Re-mark the failed operations of workers that a `db-link` toxic may have
/// cut as indeterminate: a reply lost on a reset or cut link, or a
/// transaction the server ended behind a slowed one, says nothing about
/// whether the COMMIT was reached. Returns how many.
pub(crate) fn mark(ix: &mut Index<'_>, t_end: f64) -> usize {
    let ws = windows(ix, t_end);
    if ws.is_empty() {
        return 0;
    }
    let workers: std::collections::HashSet<String> =
        ix.spawns.iter().filter(|(_, s)| s.role == "worker").map(|(n, _)| n.clone()).collect();
    let mut n = 0;
    for o in ix.ops.iter_mut().filter(|o| o.ok == Some(false) && workers.contains(&o.process)) {
        if ws.iter().any(|w| cut_by(o, w)) {
            o.ok = None;
            o.indeterminate = true;
            n += 1;
        }
    }
    n
}

/// An orphan at `t` that a `db-link` fault explains: a `worker-died` one
/// after a toxic that closed connections (the liveness session with them),
/// a `lease-expired` one after any toxic (the heartbeat held past the
/// lease TTL `ttl`).
pub(crate) fn explains(ws: &[Window], reason: Option<&str>, t: f64, ttl: f64) -> bool {
    ws.iter().any(|w| match reason {
        Some("worker-died") => w.cuts && t >= w.t && t <= w.heal + RETAKE_S,
        Some("lease-expired") => t >= w.t && t <= w.heal + ttl + RETAKE_S,
        _ => false,
    })
}

/// How long workers stayed blind behind a blackhole: for every operation
/// in flight while one was on, seconds from the blackhole (or the
/// operation's start, if later) to its reply or error — or to the worker's
/// exit, if it gave up without one. A blackhole without
/// timeout holds the bytes in the proxy and the TCP connection stays up
/// (the proxy's kernel acknowledges them), so the worker learns of it only
/// when the bytes move again or the connection closes.
pub(crate) fn blackhole_waits(ix: &Index<'_>, ws: &[Window]) -> Vec<f64> {
    let mut out = Vec::new();
    for w in ws.iter().filter(|w| w.toxic == "blackhole") {
        for o in &ix.ops {
            // no reply: the worker gave up and exited (its store deadline),
            // unless the harness killed it
            let Some(out_t) = o.out_t.or_else(|| gave_up(ix, &o.process)) else { continue };
            if o.invoke_t <= w.heal && out_t >= w.t && ix.spawns.get(&o.process).is_some_and(|s| s.role == "worker") {
                out.push(out_t - o.invoke_t.max(w.t));
            }
        }
    }
    out
}

/// When `p` exited on its own (no kill of the harness's before it).
fn gave_up(ix: &Index<'_>, p: &str) -> Option<f64> {
    let t = *ix.exits.get(p)?;
    let killed = ix.faults.iter().any(|f| f.s("victim") == Some(p) && f.s("signal") == Some("KILL") && f.t() <= t);
    (!killed).then_some(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(toxic: &str, cuts: bool) -> Window {
        Window { t: 100.0, heal: 101.0, toxic: toxic.into(), cuts }
    }

    #[test]
    fn only_a_cut_link_explains_a_worker_died_orphan() {
        let reset = [w("reset", true)];
        assert!(explains(&reset, Some("worker-died"), 100.5, 0.6));
        assert!(explains(&reset, Some("worker-died"), 101.0 + RETAKE_S, 0.6));
        // before the fault, or long after its heal: not the fault's
        assert!(!explains(&reset, Some("worker-died"), 99.9, 0.6));
        assert!(!explains(&reset, Some("worker-died"), 101.1 + RETAKE_S, 0.6));
        // a slowed link keeps the liveness session: a worker-died orphan stays unexplained
        for slow in ["latency", "bandwidth", "blackhole", "slow-close"] {
            assert!(!explains(&[w(slow, false)], Some("worker-died"), 100.5, 0.6), "{slow}");
        }
        // but it can hold the heartbeat past the lease
        assert!(explains(&[w("blackhole", false)], Some("lease-expired"), 101.5, 0.6));
        assert!(!explains(&[w("blackhole", false)], Some("lease-expired"), 101.1 + 0.6 + RETAKE_S, 0.6));
        assert!(!explains(&[], Some("worker-died"), 100.5, 0.6));
    }
}
