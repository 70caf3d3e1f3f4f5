use super::{ownership_check, require_leader, status_of, Lease, OpError};
use crate::state::{State, Status, Time};

/// §6.4 `note_step(n)`: after the ownership check, adds to `steps`;
/// recorded, then checked: over budget returns `BudgetExceeded` with the
/// overrun recorded. A negative n is `ValidationError` *(dhp-rs)*.
/// [no-silent-budget-overrun] [negative-steps-refused]
pub fn note_step(s: &mut State, lease: &Lease, n: i64, now: Time) -> Result<(), OpError> {
    ownership_check(s, lease, now)?;
    if n < 0 {
        return Err(OpError::ValidationError("negative steps".into()));
    }
    let h = s.handoffs.get_mut(&lease.hid).ok_or(OpError::UnknownHandoff)?;
    h.steps += n;
    if h.over_budget(now) {
        return Err(OpError::BudgetExceeded);
    }
    Ok(())
}

/// §6.4 `note_spend(usd)` in micro-dollars: as [`note_step`]; a negative
/// spend is `ValidationError`. [no-silent-budget-overrun] [invalid-arguments]
pub fn note_spend(s: &mut State, lease: &Lease, micro: i64, now: Time) -> Result<(), OpError> {
    ownership_check(s, lease, now)?;
    if micro < 0 {
        return Err(OpError::ValidationError("negative spend".into()));
    }
    let h = s.handoffs.get_mut(&lease.hid).ok_or(OpError::UnknownHandoff)?;
    h.spend_micro += micro;
    if h.over_budget(now) {
        return Err(OpError::BudgetExceeded);
    }
    Ok(())
}

/// §7.3 Budget kill: only the leader; a `running` or `orphaned` handoff
/// over budget (re-checked in the write, dhp-rs) is failed closed:
/// `failed`, "budget exhausted", ownership row deleted so the worker is
/// fenced out. `Ok(false)`: no change (already terminal / within budget).
/// [supervisor-budget-kill] [budget-kinds]
pub fn budget_kill(s: &mut State, sup: &str, hid: &str, now: Time) -> Result<bool, OpError> {
    require_leader(s, sup, now)?;
    if !matches!(status_of(s, hid)?, Status::Running | Status::Orphaned) {
        return Ok(false);
    }
    let h = s.handoffs.get_mut(hid).ok_or(OpError::UnknownHandoff)?;
    if !h.over_budget(now) {
        return Ok(false);
    }
    h.status = Status::Failed;
    h.error = Some("budget exhausted".into());
    s.ownership.remove(hid);
    Ok(true)
}
