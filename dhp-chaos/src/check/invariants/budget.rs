//! no-silent-budget-overrun: from the store audit's changes of each
//! handoff's envelope (docs/PROTOCOL.md §6.4, §7.2, §7.3).

use crate::check::ctx::Ctx;
use crate::check::findings::Findings;
use crate::check::short;
use serde_json::Value;

/// Along each handoff's envelope changes in commit order:
/// - an orphan (status `orphaned`) whose `execution.attempt` had reached
///   `contract.budget.max_attempts` must have been the DLQ instead;
/// - no `running` or `completed` envelope with `attempt` above `max_attempts`;
/// - a handoff parked `failed` (DLQ, budget kill) never changes status again.
pub(super) fn check(cx: &Ctx<'_>) -> Findings {
    let mut out = Findings::default();
    let Some(a) = cx.audit else { return out };
    for hid in &cx.hids {
        let max_att = cx
            .store
            .get(hid)
            .and_then(|h| h.env.pointer("/contract/budget/max_attempts"))
            .and_then(Value::as_i64)
            .unwrap_or(3);
        let mut failed_at: Option<i64> = None;
        for e in a.handoff_changes(hid) {
            let (Some(status), old) = (e.new_s("status"), e.old_s("status")) else { continue };
            if old == Some(status) {
                continue;
            }
            out.checked += 1;
            let attempt = e.new.as_ref().and_then(|n| n.pointer("/execution/attempt")).and_then(Value::as_i64);
            if let Some(f) = failed_at {
                out.of(hid, format!(
                    "{}: came back from failed (audit seq {f}) to {status} (audit seq {}): a dead-lettered or budget-killed handoff must stay parked",
                    short(hid), e.seq
                ));
            }
            match status {
                "failed" => failed_at = Some(e.seq),
                "orphaned" if attempt.is_some_and(|n| n >= max_att) => out.of(
                    hid,
                    format!(
                    "{}: orphaned at attempt {} of max_attempts {max_att} (audit seq {}): it must have gone to the DLQ",
                    short(hid), attempt.unwrap_or(0), e.seq
                ),
                ),
                "running" | "completed" if attempt.is_some_and(|n| n > max_att) => out.of(
                    hid,
                    format!(
                        "{}: {status} at attempt {} although max_attempts is {max_att} (audit seq {})",
                        short(hid),
                        attempt.unwrap_or(0),
                        e.seq
                    ),
                ),
                _ => {}
            }
        }
    }
    out
}
