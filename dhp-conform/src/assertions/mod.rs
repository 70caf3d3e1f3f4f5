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
use crate::suite::Assertion;
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

/// Every single-implementation assertion: the ten, then the extended
/// level, as [`crate::catalogue::DESCRIPTORS`] declares them.
pub fn all() -> Vec<Assertion> {
    crate::catalogue::DESCRIPTORS
        .iter()
        .filter_map(|d| match d.run {
            crate::catalogue::Run::One(run) => {
                Some(Assertion { name: d.id, level: d.level, needs: d.needs, about: d.rule, run })
            }
            crate::catalogue::Run::Cross { .. } => None,
        })
        .collect()
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
        assert!(all[..10].iter().all(|a| a.level == crate::suite::Level::Core));
        names.extend(super::cross::all().iter().map(|c| c.name));
        let n = names.len();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), n);
    }
}
