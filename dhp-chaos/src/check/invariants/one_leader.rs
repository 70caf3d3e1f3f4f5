//! one-leader: no two supervisors hold overlapping leader terms, read from
//! the store audit's changes of the `leadership` row (docs/PROTOCOL.md §7.1).

use crate::check::ctx::Ctx;
use crate::check::findings::Findings;

/// Clock slack between the term's `expires_at` (stamped by the old
/// holder's clock) and the takeover's audit time (the new holder's clock on
/// SQLite, the server's on PostgreSQL), seconds.
const SLACK_S: f64 = 0.05;
/// The harness reaps a death within milliseconds; a loaded machine may
/// take longer to record it than the follower takes to notice it.
const REAP_SLACK_S: f64 = 1.0;

/// Every change of the leadership row that gives it to a new holder is an
/// acquisition; when the row it replaced named another holder whose term
/// had not expired, that holder must have died (dhp-rs's liveness fast
/// path, §7.1) — else two supervisors led at once.
pub(super) fn check(cx: &Ctx<'_>) -> Findings {
    let mut out = Findings::default();
    let Some(a) = cx.audit else { return out };
    // a row SQLite's INSERT OR REPLACE removed (audit op REPLACE) is the
    // old row of the INSERT that follows it: a take, not a take of an absent row
    let mut replaced: Option<&crate::audit::Event> = None;
    for e in a.events.iter().filter(|e| e.table == "leadership") {
        if e.op == "REPLACE" {
            replaced = Some(e);
            continue;
        }
        let before = if e.op == "INSERT" { replaced.take() } else { None };
        let old_row = |k: &str| e.old_s(k).or_else(|| before.and_then(|r| r.old_s(k)));
        let (Some(new_h), old_h) = (e.new_s("holder"), old_row("holder")) else { continue };
        if old_h == Some(new_h) {
            continue; // a renewal
        }
        out.checked += 1;
        let exp = e.old_f("expires_at").or_else(|| before.and_then(|r| r.old_f("expires_at")));
        let (Some(old_h), Some(exp)) = (old_h, exp) else { continue };
        if e.at + SLACK_S >= exp {
            continue; // the old term had expired
        }
        let live = exp - e.at;
        if cx.clock_faked(old_h) || cx.clock_faked(new_h) {
            out.note(format!(
                "{new_h} took the leadership from {old_h} {live:.3}s before its term expired (a faked clock is involved: not judged)"
            ));
        } else if cx.exited_by(old_h, e.at, REAP_SLACK_S) {
            out.note(format!(
                "{new_h} took the leadership of {old_h}, which had died, {live:.3}s before its term expired"
            ));
        } else if liveness_cut(cx, old_h, e.at) {
            out.note(format!(
                "{new_h} took the leadership of {old_h} {live:.3}s before its term expired: a database fault had cut {old_h}'s liveness session (its token went with it, by design; {old_h} is fenced at its next renewal)"
            ));
        } else {
            out.plain(format!(
                "two leaders: {new_h} took the leadership row (audit seq {}) while {old_h}'s term had {live:.3}s to run and {old_h} was alive",
                e.seq
            ));
        }
    }
    out
}

/// Seconds after a database fault within which the cut holder's token may be taken.
const CUT_S: f64 = 2.0;

/// A database fault cut `holder`'s liveness session shortly before `t`: its
/// backend terminated, the server crashed, or a db-link toxic closed
/// connections (as for `no-false-orphans`).
fn liveness_cut(cx: &Ctx<'_>, holder: &str, t: f64) -> bool {
    let terminated = cx.ix.faults.iter().any(|f| {
        f.s("victim") == Some(holder)
            && f.s("kind") == Some("db-terminate-backend")
            && f.get("liveness_connection").and_then(serde_json::Value::as_bool) == Some(true)
            && f.t() <= t + 0.001
            && f.t() >= t - CUT_S
    });
    let crashed = crate::check::faults::db_outages(cx).iter().any(|(a, b)| t >= *a && t <= b + CUT_S);
    let links = crate::check::db_link::windows(cx.ix, cx.meta["t_end"].as_f64().unwrap_or(f64::INFINITY));
    terminated || crashed || crate::check::db_link::explains(&links, Some("worker-died"), t, 0.0)
}
