//! Validation of a budget object (`contract.budget`) built from user input
//! (`dhp dispatch --budget`, `--census`): every key known, every value a
//! number of the right kind within its range, so a typo or `"lots"` is a
//! typed error instead of a contract no supervisor can enforce.

use crate::error::{Error, Result};
use serde_json::Value;

/// Largest `max_steps` (and any integer cap): 2^53, exact as a JSON number.
pub const MAX_STEPS: i64 = 1 << 53;
/// Largest `max_attempts`.
pub const MAX_ATTEMPTS: i64 = 1_000;
/// Largest `max_wallclock_s`: one year.
pub const MAX_WALLCLOCK_S: f64 = 31_536_000.0;
/// Largest `max_spend_usd`.
pub const MAX_SPEND_USD: f64 = 1e12;
/// Largest `--max-stall-retries`.
pub const MAX_STALL_RETRIES: i64 = 1_000;

/// Where the steps counter stops: a sum that does not fit in an `i64` is
/// recorded as this (and is an overrun whatever the budget says), never
/// wrapped.
pub const STEPS_LIMIT: i64 = i64::MAX;
/// Where the spend counter stops: a sum that is not finite is recorded as
/// this (and is an overrun whatever the budget says), never as `null`.
pub const SPEND_LIMIT: f64 = f64::MAX;

/// Add `n` steps to `execution.steps`, checked. A counter that is missing
/// counts from 0; one that is not an integer in `[0, STEPS_LIMIT]` (a
/// negative or fractional number, `null`, a string, a reference store's
/// Python integer past 2^63) or a sum that does not fit becomes
/// [`STEPS_LIMIT`]: an overrun, never a counter that wrapped or restarted.
/// Returns whether the counter is at the limit.
pub fn add_steps(ex: &mut serde_json::Map<String, Value>, n: i64) -> bool {
    let sum = match ex.get("steps") {
        None => Some(0),
        Some(v) => v.as_i64().filter(|s| *s >= 0),
    }
    .and_then(|s| s.checked_add(n))
    .filter(|s| *s >= 0)
    .unwrap_or(STEPS_LIMIT);
    ex.insert("steps".into(), Value::from(sum));
    sum == STEPS_LIMIT
}

/// Add `usd` to `execution.spend_usd`, checked: a counter that is not a
/// finite non-negative number, or a sum that is not finite, becomes
/// [`SPEND_LIMIT`] (an overrun), never `null`. Returns whether the counter
/// is at the limit.
pub fn add_spend(ex: &mut serde_json::Map<String, Value>, usd: f64) -> bool {
    let sum = match ex.get("spend_usd") {
        None => Some(0.0),
        Some(v) => v.as_f64().filter(|s| s.is_finite() && *s >= 0.0),
    }
    .map(|s| s + usd)
    .filter(|s| s.is_finite() && *s >= 0.0)
    .unwrap_or(SPEND_LIMIT);
    ex.insert("spend_usd".into(), crate::json::float(sum));
    sum >= SPEND_LIMIT
}

/// Whether recorded usage is at a counter's limit (or past what a number
/// can say): an overrun even without a cap.
pub fn at_limit(steps: f64, spend: f64) -> Option<String> {
    let mut why = Vec::new();
    if steps.is_nan() || steps >= STEPS_LIMIT as f64 {
        why.push("steps counter overflowed".to_string());
    }
    if !spend.is_finite() || spend >= SPEND_LIMIT {
        why.push("spend counter overflowed".to_string());
    }
    (!why.is_empty()).then(|| why.join("; "))
}

/// The keys a budget may have.
pub const KEYS: [&str; 4] = ["max_steps", "max_spend_usd", "max_wallclock_s", "max_attempts"];

fn range(name: &str, v: &Value, want: String) -> Error {
    Error::OutOfRange { name: format!("budget.{name}"), value: v.to_string(), range: want }
}

/// An integer in `[lo, hi]` (a JSON integer, not `"3"` nor `2.5`).
pub fn int_in(name: &str, v: &Value, lo: i64, hi: i64) -> Result<i64> {
    v.as_i64().filter(|n| (lo..=hi).contains(n)).ok_or_else(|| range(name, v, format!("an integer in [{lo}, {hi}]")))
}

/// A finite number in `[lo, hi]` (`lo` excluded when `open_lo`).
fn num_in(name: &str, v: &Value, lo: f64, hi: f64, open_lo: bool) -> Result<f64> {
    let ok = |x: &f64| x.is_finite() && *x <= hi && if open_lo { *x > lo } else { *x >= lo };
    let bracket = if open_lo { "(" } else { "[" };
    v.as_f64().filter(ok).ok_or_else(|| range(name, v, format!("a number in {bracket}{lo}, {hi}]")))
}

/// Check a whole budget object.
pub fn validate(budget: &Value) -> Result<()> {
    let Some(map) = budget.as_object() else {
        return Err(Error::validation(format!("budget must be a JSON object, got {budget}")));
    };
    for (k, v) in map {
        match k.as_str() {
            "max_steps" => int_in(k, v, 1, MAX_STEPS).map(drop)?,
            "max_attempts" => int_in(k, v, 1, MAX_ATTEMPTS).map(drop)?,
            "max_spend_usd" => num_in(k, v, 0.0, MAX_SPEND_USD, false).map(drop)?,
            "max_wallclock_s" => num_in(k, v, 0.0, MAX_WALLCLOCK_S, true).map(drop)?,
            other => {
                return Err(Error::validation(format!("unknown budget key {other:?} (known: {})", KEYS.join(", "))))
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn counters_saturate_instead_of_wrapping_or_vanishing() {
        let mut ex = serde_json::Map::new();
        assert!(!add_steps(&mut ex, 1 << 62));
        assert!(add_steps(&mut ex, 1 << 62), "2^63 does not fit");
        assert!(add_steps(&mut ex, 1 << 62));
        assert_eq!(ex["steps"], json!(STEPS_LIMIT));
        assert!(add_steps(&mut ex, 0), "a saturated counter stays there");
        assert!(!add_spend(&mut ex, 1e308));
        assert!(add_spend(&mut ex, 1e308), "1e308 twice is not finite");
        assert_eq!(ex["spend_usd"], json!(SPEND_LIMIT));
        for bad in [json!(null), json!("7"), json!(-1), json!(2.5), json!(1e19)] {
            let mut ex = serde_json::Map::new();
            ex.insert("steps".into(), bad.clone());
            assert!(add_steps(&mut ex, 1), "{bad}");
            ex.insert("spend_usd".into(), if bad.is_number() { json!(-1.0) } else { bad.clone() });
            assert!(add_spend(&mut ex, 1.0), "{bad}");
        }
        assert!(at_limit(STEPS_LIMIT as f64, 0.0).is_some());
        assert!(at_limit(0.0, f64::INFINITY).is_some());
        assert!(at_limit(0.0, f64::NAN).is_some());
        assert!(at_limit(1e15, 1e12).is_none());
    }

    #[test]
    fn nonsense_budgets_are_refused() {
        assert!(validate(
            &json!({"max_steps": 100, "max_spend_usd": 10.0, "max_wallclock_s": 3600.0, "max_attempts": 3})
        )
        .is_ok());
        for bad in [
            json!({"max_steps": "lots"}),
            json!({"max_steps": -1}),
            json!({"max_steps": 0}),
            json!({"max_steps": 2.5}),
            json!({"max_steps": 18446744073709551615u64}),
            json!({"max_attempts": 0}),
            json!({"max_attempts": 1001}),
            json!({"max_spend_usd": -0.01}),
            json!({"max_wallclock_s": 0}),
            json!({"max_wallclock_s": 1e20}),
            json!({"max_step": 5}),
            json!([1]),
        ] {
            assert!(validate(&bad).is_err(), "{bad}");
        }
    }
}
