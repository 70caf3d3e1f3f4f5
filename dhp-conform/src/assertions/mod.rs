//! Every assertion, in the order they run.

pub mod approvals;
pub mod clocks;
pub mod contention;
pub mod core;
pub mod creation;
pub mod cross;
pub mod extended;
pub mod ids;
pub mod layout;
pub mod negative;
pub mod results;
pub mod roundtrip;
pub mod shipping;
pub mod timestamps;

use crate::check::Check;
use crate::client::Adapter;
use crate::protocol::feature;
use crate::suite::{Assertion, Level};
use serde_json::{json, Value};

/// The output schema of every test handoff (the reference's `SCHEMA`).
pub fn schema() -> Value {
    json!({"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]})
}

/// `build_envelope` arguments of the reference's `env(n)`.
pub fn spec(n: i64) -> Value {
    json!({"kind": "t", "inputs": {"inline": {"n": n}}, "output_schema": schema()})
}

/// [`spec`] with more (or replaced) fields.
pub fn spec_with(n: i64, extra: Value) -> Value {
    let mut s = spec(n);
    if let (Some(m), Value::Object(e)) = (s.as_object_mut(), extra) {
        m.extend(e);
    }
    s
}

/// Build through the implementation and dispatch; returns the hid.
pub fn new_handoff_with(m: &mut Adapter, root: &str, spec: Value) -> Check<String> {
    let env = m.build(spec)?;
    m.dispatch(root, &env)
}

/// [`new_handoff_with`] of `spec(n)`.
pub fn new_handoff(m: &mut Adapter, root: &str, n: i64) -> Check<String> {
    new_handoff_with(m, root, spec(n))
}

/// `base` with a `"pad"` string that makes its sorted text (what the
/// `DHP_MAX_*` byte limits measure: keys sorted, `", "` and `": "`
/// separators) exactly `bytes` long.
pub fn padded_to(base: Value, bytes: usize) -> Check<Value> {
    let mut v = base;
    v["pad"] = json!("");
    let len = dhp_oracle::json::sorted(&v).map_err(|e| crate::check::Fail::Errored(e.to_string()))?.len();
    let n = bytes
        .checked_sub(len)
        .ok_or_else(|| crate::check::Fail::Errored(format!("cannot pad {len} bytes down to {bytes}")))?;
    v["pad"] = json!("p".repeat(n));
    Ok(v)
}

/// Error kinds a loser of a race may see.
pub const OWNED_OR_STATE: &[&str] = &["OwnershipLost", "FencingError", "LeaseLost", "StateError"];

/// Unix time, seconds.
pub fn now() -> f64 {
    use std::time::{SystemTime, UNIX_EPOCH};
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0)
}

/// Sleep until Unix time `t` (no-op if past; at most an hour: the
/// assertions schedule starts seconds ahead).
pub fn sleep_until(t: f64) {
    let d = (t - now()).clamp(0.0, 3_600.0);
    if let Ok(d) = std::time::Duration::try_from_secs_f64(d) {
        std::thread::sleep(d);
    }
}

/// Every single-implementation assertion: the ten, then the extended level.
pub fn all() -> Vec<Assertion> {
    use Level::{Core, Extended};
    let a = |name, level, needs, about, run| Assertion { name, level, needs, about, run };
    vec![
        a("no-lost-results", Core, &[], "a worker process killed mid-run loses nothing: a standby recovers from the last checkpoint and delivers", core::no_lost_results),
        a("no-crossed-inputs", Core, &[], "inputs that do not match input_hash, or an envelope that does not match its id, are refused at dispatch", core::no_crossed_inputs),
        a("no-untyped-results", Core, &[], "a result violating the output schema is refused and the handoff parks as failed", core::no_untyped_results),
        a("no-silent-budget-overrun", Core, &[], "steps or spend over budget raise BudgetExceeded and are recorded", core::no_silent_budget_overrun),
        a("no-runner-lock-in", Core, &[], "suspend in one process, resume in another on another root, complete there", core::no_runner_lock_in),
        a("exactly-one-wins", Core, &[], "N recoverers in N processes released at one instant: one wins", core::exactly_one_wins),
        a("fencing", Core, &[], "a stale token held by a live worker in another process cannot write after orphan + recover", core::fencing),
        a("leader-election", Core, &[], "one leader among supervisor processes, only it acts, promotion when it dies", core::leader_election),
        a("transport", Core, &[], "a shipped log reconstructs the checkpoints exactly elsewhere; re-ingest is idempotent", core::transport),
        a("dead-letter-queue", Core, &[], "max_attempts exhausted: failed with error and checkpoints kept, not dropped", core::dead_letter_queue),
        a("lease-expiry-lease-lost", Extended, &[], "a token whose lease ran out gets LeaseLost and writes nothing", extended::lease_expiry_lease_lost),
        a("heartbeat-extends-lease", Extended, &[feature::ENV_CONFIG], "a heartbeat pushes the lease out in real time (1 s leases)", extended::heartbeat_extends_lease),
        a("release-to-pending", Extended, &[], "release: pending, no owner, checkpoints kept, claimable again", extended::release_to_pending),
        a("idempotent-complete", Extended, &[], "a retried complete is a no-op and the first result stands", extended::idempotent_complete),
        a("ack-after-complete", Extended, &[], "ack is refused until the handoff completed", extended::ack_after_complete),
        a("claim-race", Extended, &[], "N processes claim one pending handoff at one instant: one wins", extended::claim_race),
        a("tampered-bundle-rejected", Extended, &[], "a bundle with changed inputs or a forged checkpoint hash is refused and changes nothing", extended::tampered_bundle_rejected),
        a("tampered-log-rejected", Extended, &[], "a log whose envelope does not match its id is refused and creates nothing", extended::tampered_log_rejected),
        a("tampered-checkpoint-rejected", Extended, &[], "a log checkpoint whose state does not match its hash is refused; nothing past it is ingested", extended::tampered_checkpoint_rejected),
        a("truncated-log-line-tolerated", Extended, &[], "garbage, truncated, too long and unusable log records (unknown type, checkpoint before the header, non-object state, bad seq) are skipped and counted, the rest ingested", extended::truncated_log_line_tolerated),
        a("newer-schema-refused", Extended, &[feature::STANDARD_STORE], "a store at schema_version 4 is refused and left as it is", extended::newer_schema_refused),
        a("oversize-rejected", Extended, &[feature::ENV_CONFIG], "checkpoints, results, envelopes and bundles over DHP_MAX_* are refused with OversizePayload", extended::oversize_rejected),
        a("malformed-ids-rejected", Extended, &[], "malformed handoff, worker and supervisor ids are refused with ValidationError", extended::malformed_ids_rejected),
        a("stall-orphan-then-dlq", Extended, &[feature::STALL_DETECTION], "repeated identical activity is orphaned as stalled, then dead-lettered after max_stall_retries", extended::stall_orphan_then_dlq),
        a("supervisor-budget-kill", Extended, &[], "the supervisor fails over-budget work closed and fences its worker out", extended::supervisor_budget_kill),
        a("effects-first-write-wins", Extended, &[feature::EFFECTS], "a side effect is recorded once; the first write wins across recoveries", extended::effects_first_write_wins),
        a("capabilities-fail-closed", Extended, &[feature::CAPABILITIES], "only declared capabilities (and the dhp domain) are granted; every check is audited", extended::capabilities_fail_closed),
        a("canonical-vectors", Extended, &[feature::CANONICAL], "canonical JSON, state hashes and handoff ids match vectors generated from the reference", extended::canonical_vectors),
        a("fast-death-detection", Extended, &[feature::FAST_DEATH_DETECTION], "a SIGKILLed worker's handoff is orphaned in well under the lease time", extended::fast_death_detection),
        a("approval-gates", Extended, &[feature::APPROVALS], "financial and destructive actions fail closed until approved; approve, deny and expiry are each decided correctly and a decision is final", approvals::approval_gates),
        a("approval-class-validated", Extended, &[feature::APPROVALS], "an unknown action class is refused with ValidationError, not treated as ungated", approvals::approval_class_validated),
        a("wrong-state-operations", Extended, &[], "claim of a non-pending, recover of a non-orphaned, release/complete/checkpoint by a non-owner and ack before complete are refused and change nothing", negative::wrong_state_operations),
        a("invalid-arguments", Extended, &[], "a negative spend and checkpoint states that are not objects are refused with ValidationError and change nothing", negative::invalid_arguments),
        a("negative-steps-refused", Extended, &[], "a negative step count is refused with ValidationError: steps cannot be handed back", negative::negative_steps_refused),
        a("budget-kinds", Extended, &[], "spend and wall-clock budgets bind like steps: the worker gets BudgetExceeded and the supervisor fails the work; spend exactly at the limit is within it", negative::budget_kinds),
        a("status-reporting", Extended, &[], "status reports status, attempt, owner, fence, checkpoints, usage, result, ack and orphan reason truthfully at every step of a handoff's life", roundtrip::status_reporting),
        a("suspend-resume-round-trip", Extended, &[], "two suspend/resume hops keep every checkpoint, usage and the attempt count; the suspended original refuses writes and a second copy", roundtrip::suspend_resume_round_trip),
        a("write-lock-wait", Extended, &[feature::STANDARD_STORE], "a write that finds the store's write lock held by another connection waits for it and succeeds", contention::write_lock_wait),
        a("concurrent-create", Extended, &[], "several processes opening one new store at one instant all succeed and share one store", creation::concurrent_create),
        a("leader-renews-term", Extended, &[feature::STANDARD_STORE], "a leader that asks again before its term runs out stays leader with a new term; a live term keeps others out", clocks::leader_renews_term),
        a("stall-by-age", Extended, &[feature::STALL_DETECTION, feature::STANDARD_STORE], "a live handoff whose last checkpoint is older than stall_timeout_s is orphaned as stalled; recent progress is left alone", clocks::stall_by_age),
        a("timestamps-iso8601", Extended, &[], "created_at, completed_at and checkpoint times are ISO-8601 UTC text as Python's isoformat() writes it, and tell when they were written", timestamps::timestamps_iso8601),
        a("ship-failure-reported", Extended, &[], "a ship that could not write the log is refused: ship_envelope and ship_checkpoint never report a line shipped that is not in the log", shipping::ship_failure_reported),
        a("store-layout", Extended, &[], "the store is in WAL mode, envelope_json is the plain rendering with checkpoints emptied, and readers materialize checkpoints with their state_uri", layout::store_layout),
        a("idempotent-dispatch", Extended, &[], "dispatching an envelope that is already stored returns its hid and changes nothing", layout::idempotent_dispatch),
        a("output-schema-reading", Extended, &[], "output_schema is read as JSON Schema 2020-12 unless $schema names another draft, format is not asserted, and 1.0 is an integer", results::output_schema_reading),
        a("trailing-newline-ids-refused", Extended, &[], "a handoff, worker or supervisor id followed by a newline is refused with ValidationError", ids::trailing_newline_ids_refused),
        a("reserved-worker-ids-refused", Extended, &[], "reserved worker and supervisor ids (__orphaned__ and every __name__, ids made only of dots) are refused with ValidationError", ids::reserved_worker_ids_refused),
    ]
}

#[cfg(test)]
mod tests {
    #[test]
    fn names_are_unique_and_the_ten_come_first() {
        let all = super::all();
        let mut names: Vec<&str> = all.iter().map(|a| a.name).collect();
        let ten = [
            "no-lost-results",
            "no-crossed-inputs",
            "no-untyped-results",
            "no-silent-budget-overrun",
            "no-runner-lock-in",
            "exactly-one-wins",
            "fencing",
            "leader-election",
            "transport",
            "dead-letter-queue",
        ];
        assert_eq!(&names[..10], &ten);
        assert!(all[..10].iter().all(|a| a.level == super::Level::Core));
        names.extend(super::cross::all().iter().map(|c| c.name));
        let n = names.len();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), n);
    }
}
