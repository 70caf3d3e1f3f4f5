//! Operations cut by a database fault are indeterminate (Jepsen's `info`):
//! a reply that was an error while the server was down — or while the
//! caller's backend was being terminated — says nothing about whether the
//! transaction committed (the COMMIT may have reached the disk before the
//! connection broke). Such operations are re-marked as "no outcome", the
//! way an operation its process died in already is, so every invariant
//! lets them have happened or not.

use super::history::Index;

/// After the server is back, a client learns of its broken connection at
/// its next use: failures this long after `db-up` still belong to the outage.
pub(crate) const AFTER_UP_S: f64 = 1.0;
/// A terminated backend's client sees the error at once; this long is generous.
pub(crate) const AFTER_TERMINATE_S: f64 = 1.0;

/// The database's outages: each `db-crash` fault until its `db-up`
/// observation (`t_end` if it never came back).
pub(crate) fn outages(ix: &Index<'_>, t_end: f64) -> Vec<(f64, f64)> {
    ix.faults
        .iter()
        .filter(|f| matches!(f.s("kind"), Some("db-crash" | "db-failover")))
        .map(|f| {
            let up = ix
                .observes
                .iter()
                .find(|o| o.s("what") == Some("db-up") && o.u("fault_id") == f.u("fault_id"))
                .map(|o| o.t())
                .unwrap_or(t_end);
            (f.t(), up)
        })
        .collect()
}

/// Re-mark failed operations cut by a database fault as indeterminate;
/// returns how many.
pub(crate) fn mark(ix: &mut Index<'_>, t_end: f64) -> usize {
    let outages = outages(ix, t_end);
    let terminations: Vec<(String, f64)> = ix
        .faults
        .iter()
        .filter(|f| f.s("kind") == Some("db-terminate-backend"))
        .filter_map(|f| Some((f.s("victim")?.to_string(), f.t())))
        .collect();
    let mut n = 0;
    for o in ix.ops.iter_mut().filter(|o| o.ok == Some(false)) {
        let Some(out) = o.out_t else { continue };
        let in_outage = outages.iter().any(|(a, b)| out >= *a && (out <= b + AFTER_UP_S || o.invoke_t < *a));
        let terminated = terminations
            .iter()
            .any(|(v, t)| *v == o.process && out >= *t && (o.invoke_t <= *t || out <= t + AFTER_TERMINATE_S));
        if in_outage || terminated {
            o.ok = None;
            o.indeterminate = true;
            n += 1;
        }
    }
    n
}
