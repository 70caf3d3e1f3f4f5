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
