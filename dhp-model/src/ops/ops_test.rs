//! The operations the state-machine table does not cover, each rule with
//! the refusal it must give.

use super::*;
use crate::state::{ApprovalStatus, Budget, State, Status};

const TTL: Time = 10;

/// A store with "h" claimed by "w" at time 0 and "s" leading.
fn running() -> (State, Lease) {
    let mut s = State::default();
    dispatch(&mut s, "h", Budget { max_steps: Some(3), max_spend_micro: Some(1_000), ..Budget::default() }).unwrap();
    let l = claim(&mut s, "h", "w", TTL, 0).unwrap();
    leader_acquire(&mut s, "s", 5, 0).unwrap();
    (s, l)
}

#[test]
fn dispatch_is_idempotent_and_claim_races_have_one_winner() {
    let (mut s, _) = running();
    let before = s.clone();
    dispatch(&mut s, "h", Budget::default()).unwrap();
    assert_eq!(s, before, "re-dispatch changes nothing");
    assert_eq!(claim(&mut s, "h", "w2", TTL, 1), Err(OpError::StateError(Status::Running)));
    assert_eq!(claim(&mut s, "nope", "w2", TTL, 1), Err(OpError::UnknownHandoff));
}

#[test]
fn the_ownership_check_order_and_lease_expiry() {
    let (mut s, l) = running();
    let stale = Lease { fence: 7, ..l.clone() };
    assert_eq!(heartbeat(&mut s, &stale, 1), Err(OpError::FencingError));
    assert_eq!(heartbeat(&mut s, &l, 5), Ok(TTL));
    assert_eq!(s.ownership["h"].lease_expires_at, 15);
    assert_eq!(heartbeat(&mut s, &l, 16), Err(OpError::LeaseLost));
    let before = s.clone();
    assert_eq!(checkpoint(&mut s, &l, "x", 10, 16), Err(OpError::LeaseLost));
    assert_eq!(s, before, "a refused write changes nothing");
}

#[test]
fn checkpoints_take_the_next_seq_up_to_the_limit() {
    let (mut s, l) = running();
    assert_eq!(checkpoint(&mut s, &l, "a", 2, 1), Ok(0));
    assert_eq!(checkpoint(&mut s, &l, "b", 2, 1), Ok(1));
    assert!(matches!(checkpoint(&mut s, &l, "c", 2, 1), Err(OpError::ValidationError(_))));
    assert_eq!(s.handoffs["h"].last_checkpoint_at, Some(1));
}

#[test]
fn budget_overruns_are_recorded_then_refused() {
    let (mut s, l) = running();
    assert!(matches!(note_step(&mut s, &l, -1, 1), Err(OpError::ValidationError(_))));
    assert_eq!(note_step(&mut s, &l, 3, 1), Ok(()), "at the limit is within it");
    assert_eq!(note_step(&mut s, &l, 1, 1), Err(OpError::BudgetExceeded));
    assert_eq!(s.handoffs["h"].steps, 4, "the overrun is recorded");
    assert!(matches!(note_spend(&mut s, &l, -5, 1), Err(OpError::ValidationError(_))));
    assert_eq!(budget_kill(&mut s, "other", "h", 1), Err(OpError::NotLeader));
    assert_eq!(budget_kill(&mut s, "s", "h", 1), Ok(true));
    assert_eq!((s.handoffs["h"].status, s.ownership.get("h")), (Status::Failed, None));
    assert_eq!(budget_kill(&mut s, "s", "h", 1), Ok(false), "already terminal");
}

#[test]
fn a_kill_within_budget_changes_nothing() {
    let (mut s, _) = running();
    let before = s.clone();
    assert_eq!(budget_kill(&mut s, "s", "h", 1), Ok(false));
    assert_eq!(s, before);
}

#[test]
fn leadership_terms() {
    let mut s = State::default();
    leader_acquire(&mut s, "a", 5, 0).unwrap();
    assert_eq!(leader_acquire(&mut s, "b", 5, 5), Err(OpError::NotLeader), "the term is live at its expiry");
    assert_eq!(leader_renew(&mut s, "b", 5, 1), Err(OpError::NotLeader));
    leader_renew(&mut s, "a", 5, 3).unwrap();
    assert_eq!(s.leadership.as_ref().map(|l| l.expires_at), Some(8));
    leader_acquire(&mut s, "b", 5, 9).unwrap();
    assert_eq!(leader_resign(&mut s, "a"), Err(OpError::NotLeader));
    leader_resign(&mut s, "b").unwrap();
    assert!(s.leadership.is_none());
}

#[test]
fn orphan_needs_the_leader_and_an_expired_lease_or_a_dead_holder() {
    let (mut s, _) = running();
    assert_eq!(orphan(&mut s, "x", "h", OrphanReason::LeaseExpired, false, 1), Err(OpError::NotLeader));
    assert_eq!(orphan(&mut s, "s", "h", OrphanReason::LeaseExpired, false, 1), Err(OpError::OwnershipLost));
    assert_eq!(orphan(&mut s, "s", "h", OrphanReason::WorkerDied, true, 1), Ok(Status::Orphaned));
    assert_eq!(s.ownership["h"].fence, 1);
    let l = recover(&mut s, "h", "w2", 1, TTL, 2).unwrap();
    assert_eq!((l.fence, s.handoffs["h"].attempt), (2, 1));
    assert_eq!(recover(&mut s, "h", "w3", 1, TTL, 2), Err(OpError::OwnershipLost), "one recoverer wins");
}

#[test]
fn stalls_dead_letter_after_their_retries() {
    let (mut s, _) = running();
    s.handoffs.get_mut("h").unwrap().budget.max_stall_retries = 0;
    assert_eq!(orphan(&mut s, "s", "h", OrphanReason::Stalled, false, 1), Ok(Status::Failed));
    assert!(s.handoffs["h"].error.as_deref().is_some_and(|e| e.starts_with("livelock")));
}

#[test]
fn approvals_gate_and_decide_once_and_expire() {
    let (mut s, l) = running();
    assert_eq!(approval_request(&mut s, &l, "a0", "read", 5, 1), Ok(()));
    assert!(matches!(approval_request(&mut s, &l, "a1", "teleport", 5, 1), Err(OpError::ValidationError(_))));
    assert_eq!(approval_request(&mut s, &l, "a2", "financial", 5, 1), Err(OpError::ApprovalRequired));
    assert_eq!(approval_request(&mut s, &l, "a3", "destructive", 5, 1), Err(OpError::ApprovalRequired));
    decide(&mut s, "a2", true).unwrap();
    assert!(matches!(decide(&mut s, "a2", false), Err(OpError::ValidationError(_))), "only once");
    assert_eq!(approval_expire(&mut s, "x", 7), Err(OpError::NotLeader));
    leader_renew(&mut s, "s", 10, 6).unwrap();
    assert_eq!(approval_expire(&mut s, "s", 7), Ok(1));
    assert_eq!(
        (s.approvals["a2"].status, s.approvals["a3"].status),
        (ApprovalStatus::Approved, ApprovalStatus::Expired)
    );
    assert_eq!(s.approvals.len(), 2, "read passes without a row");
}

#[test]
fn effects_first_write_wins_and_activity_counts_repeats() {
    let (mut s, l) = running();
    assert!(matches!(record_effect(&mut s, &l, "", "r", 1), Err(OpError::ValidationError(_))));
    assert_eq!(record_effect(&mut s, &l, "pay", "r1", 1), Ok(true));
    assert_eq!(record_effect(&mut s, &l, "pay", "r2", 1), Ok(false));
    assert_eq!(s.effects[&("h".to_string(), "pay".to_string())], "r1");
    assert_eq!(note_activity(&mut s, &l, "d", 1), Ok(1));
    assert_eq!(note_activity(&mut s, &l, "d", 1), Ok(2));
    assert_eq!(note_activity(&mut s, &l, "e", 1), Ok(1));
}

#[test]
fn suspend_and_resume_on_another_store() {
    let (mut s, l) = running();
    let bundle = suspend(&mut s, "h").unwrap();
    assert_eq!(heartbeat(&mut s, &l, 1), Err(OpError::StateError(Status::Suspended)));
    let mut other = State::default();
    resume(&mut other, "h", &bundle).unwrap();
    assert_eq!((other.handoffs["h"].status, other.handoffs["h"].attempt), (Status::Pending, 1));
    assert_eq!(resume(&mut other, "h", &bundle), Err(OpError::StateError(Status::Pending)));
}

#[test]
fn torn_states_are_repaired_as_torn_states_md_says() {
    let (mut s, _) = running();
    assert_eq!(repair_torn(&mut s, "s", "h", true, 1), Err(OpError::StateError(Status::Running)), "consistent");
    // R1: pending beside an expired holder.
    leader_renew(&mut s, "s", 20, 10).unwrap();
    s.handoffs.get_mut("h").unwrap().status = Status::Pending;
    assert_eq!(repair_torn(&mut s, "s", "h", true, 11), Ok("torn-claim"));
    assert_eq!((s.ownership["h"].fence, s.handoffs["h"].status), (1, Status::Orphaned));
    // R4: orphaned without a row gets a tombstone at execution.fence + 1.
    s.ownership.remove("h");
    assert_eq!(repair_torn(&mut s, "s", "h", true, 11), Ok("lost-ownership-row"));
    assert_eq!(s.ownership["h"].fence, 1);
}
