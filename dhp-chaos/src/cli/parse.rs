//! Typed clap value parsers: every flag is checked once, as it is parsed,
//! and a bad value is a usage error (exit 2) naming the flag and its range.
//! Numbers must be finite (`nan`, `inf` are refused) and within a sane range;
//! durations that are periods or timeouts must be positive.

use dhp_chaos::config::{parse_fault_mix, FaultKind, Impl, Ship};
use dhp_chaos::scenario::Scenario;

/// The bounds every `dhp` process puts on `DHP_*_S` and
/// `DHP_LEASE_MAX_MISSED` (dhp-core/src/config.rs): the harness passes these
/// knobs on, so it refuses what they would.
const MAX_KNOB_S: f64 = 86_400.0;
const MAX_LEASE_MISSED: i64 = 1_000;

/// A number for a message: `1e308`, not 309 digits.
fn fmt_num(v: f64) -> String {
    if v != 0.0 && v.is_finite() && !(1e-4..1e15).contains(&v.abs()) {
        format!("{v:e}")
    } else {
        v.to_string()
    }
}

/// A finite number in `[lo, hi]`, or `(lo, hi]` when `open`.
fn number_in(s: &str, lo: f64, hi: f64, open: bool, unit: &str) -> Result<f64, String> {
    let v: f64 = s.trim().parse().map_err(|_| format!("{s:?} is not a number"))?;
    let above = if open { v > lo } else { v >= lo };
    if !(v.is_finite() && above && v <= hi) {
        let l = if open { '(' } else { '[' };
        return Err(format!("{s} is not in {l}{}, {}]{unit}", fmt_num(lo), fmt_num(hi)));
    }
    Ok(v)
}

/// `DHP_*_S` timings (lease interval, scan, leader TTL): what every `dhp`
/// process accepts, `(0, 86400]` seconds.
pub fn knob_secs(s: &str) -> Result<f64, String> {
    number_in(s, 0.0, MAX_KNOB_S, true, " seconds")
}

/// `DHP_LEASE_MAX_MISSED`: what every `dhp` process accepts, `[2, 1000]`.
pub fn lease_max_missed(s: &str) -> Result<i64, String> {
    let v: i64 = s.trim().parse().map_err(|_| format!("{s:?} is not a whole number"))?;
    if !(2..=MAX_LEASE_MISSED).contains(&v) {
        return Err(format!("{v} is not in [2, {MAX_LEASE_MISSED}]"));
    }
    Ok(v)
}

/// A worker's pause after each chunk: `[0, 60]` seconds.
pub fn pace(s: &str) -> Result<f64, String> {
    number_in(s, 0.0, 60.0, false, " seconds")
}

/// A probability, `[0, 1]`.
pub fn probability(s: &str) -> Result<f64, String> {
    number_in(s, 0.0, 1.0, false, "")
}

/// The longest SIGSTOP: `(0, 3600]` seconds.
pub fn pause_max(s: &str) -> Result<f64, String> {
    number_in(s, 0.0, 3600.0, true, " seconds")
}

/// A delay that may be zero (replacement start-up, grace): `[0, 3600]` seconds.
pub fn delay(s: &str) -> Result<f64, String> {
    number_in(s, 0.0, 3600.0, false, " seconds")
}

/// The fault phase of a round: `(0, 86400]` seconds.
pub fn fault_seconds(s: &str) -> Result<f64, String> {
    number_in(s, 0.0, 86_400.0, true, " seconds")
}

/// `--budget-minutes`: `[0, 10080]` (a week; 0 runs one round).
pub fn budget_minutes(s: &str) -> Result<f64, String> {
    // 0: one round, then stop (what the CI test of the nightly runs)
    number_in(s, 0.0, 7.0 * 1440.0, false, " minutes")
}

/// `--clock-offset`: `[0, 1e6]` seconds.
pub fn clock_offset(s: &str) -> Result<f64, String> {
    number_in(s, 0.0, 1e6, false, " seconds")
}

/// `--clock-rate`: `[1, 100]`.
pub fn clock_rate(s: &str) -> Result<f64, String> {
    number_in(s, 1.0, 100.0, false, "")
}

/// `--fault-interval MIN,MAX`: `0 < MIN <= MAX <= 3600` seconds.
pub fn fault_interval(s: &str) -> Result<(f64, f64), String> {
    let (a, b) = s.split_once(',').ok_or("wants MIN,MAX (seconds)")?;
    let a = number_in(a, 0.0, 3600.0, true, " seconds")?;
    let b = number_in(b, 0.0, 3600.0, true, " seconds")?;
    if b < a {
        return Err(format!("wants MIN <= MAX, not {s}"));
    }
    Ok((a, b))
}

/// `--workers`.
pub fn workers(s: &str) -> Result<Impl, String> {
    Impl::parse(s, "workers").map_err(|e| format!("{e:#}"))
}

/// `--supervisors`.
pub fn supervisors(s: &str) -> Result<Impl, String> {
    Impl::parse(s, "supervisors").map_err(|e| format!("{e:#}"))
}

/// `--ship`.
pub fn ship(s: &str) -> Result<Ship, String> {
    Ship::parse(s).map_err(|e| format!("{e:#}"))
}

/// A `--faults` mix: kinds and weights.
#[derive(Debug, Clone, PartialEq)]
pub struct FaultMix(pub Vec<(FaultKind, f64)>);

/// `--faults`.
pub fn faults(s: &str) -> Result<FaultMix, String> {
    parse_fault_mix(s).map(FaultMix).map_err(|e| format!("{e:#}"))
}

/// `--scenario`.
pub fn scenario(s: &str) -> Result<Scenario, String> {
    Scenario::parse(s).map_err(|e| format!("{e:#}"))
}

/// `--disk SIZE`.
pub fn disk_size(s: &str) -> Result<u64, String> {
    dhp_chaos::round::parse_size(s).map_err(|e| format!("{e:#}"))
}

/// A command's words.
#[derive(Debug, Clone, PartialEq)]
pub struct Words(pub Vec<String>);

/// `--transport CMD`: its words.
pub fn command(s: &str) -> Result<Words, String> {
    let v: Vec<String> = s.split_whitespace().map(String::from).collect();
    if v.is_empty() {
        return Err("wants a command".into());
    }
    Ok(Words(v))
}

/// `--store`: sqlite, postgres (a cluster this run owns) or a server URL.
#[derive(Debug, Clone, PartialEq)]
pub struct Engine {
    /// `sqlite`, `postgres` or `postgres-url`.
    pub label: String,
    /// The server's URL (`postgres-url`).
    pub url: Option<String>,
}

impl Engine {
    /// SQLite (the default engine).
    pub fn is_sqlite(&self) -> bool {
        self.label == "sqlite"
    }

    /// A server URL is `postgres://…` without `schema=` (the message masks its password).
    pub fn check(&self) -> anyhow::Result<()> {
        match &self.url {
            Some(u) => dhp_chaos::pg::check_url(u),
            None => Ok(()),
        }
    }

    /// `sqlite` or `postgres`: the engine a round's config names.
    pub fn engine(&self) -> &'static str {
        if self.is_sqlite() {
            "sqlite"
        } else {
            "postgres"
        }
    }
}

/// `--store`. Never fails here: clap would echo the value, password and
/// all, in its error; a URL is checked (and masked) by [`Engine::check`].
pub fn store(s: &str) -> Result<Engine, String> {
    Ok(match s {
        "sqlite" => Engine { label: "sqlite".into(), url: None },
        "postgres" | "postgresql" => Engine { label: "postgres".into(), url: None },
        u => Engine { label: "postgres-url".into(), url: Some(u.to_string()) },
    })
}

/// `--hosts N`: 2 to 32 simulated hosts.
pub fn hosts(s: &str) -> Result<u32, String> {
    match s.trim().parse::<u32>() {
        Ok(n) if (2..=32).contains(&n) => Ok(n),
        _ => Err("--hosts needs at least 2 hosts (each ships to the next) and at most 32".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timings_refuse_zero_nan_inf_and_huge_values() {
        for bad in ["0", "-1", "nan", "NaN", "inf", "-inf", "1e308", "86401", "x", ""] {
            assert!(knob_secs(bad).is_err(), "{bad:?} accepted");
        }
        assert_eq!(knob_secs("0.2"), Ok(0.2));
        assert_eq!(knob_secs("86400"), Ok(86_400.0));
        for bad in ["0", "1", "-3", "1001", "nan", "2.5"] {
            assert!(lease_max_missed(bad).is_err(), "{bad:?} accepted");
        }
        assert_eq!(lease_max_missed("3"), Ok(3));
    }

    #[test]
    fn rates_and_intervals_are_bounded() {
        for bad in ["nan", "-0.1", "1.01", "inf"] {
            assert!(probability(bad).is_err(), "{bad:?} accepted");
        }
        assert_eq!(probability("0"), Ok(0.0));
        for bad in ["0,1", "1,0.5", "nan,1", "1", "0.1,inf", "0.1,4000"] {
            assert!(fault_interval(bad).is_err(), "{bad:?} accepted");
        }
        assert_eq!(fault_interval("0.1, 0.2"), Ok((0.1, 0.2)));
        assert!(pace("nan").is_err() && pace("61").is_err() && pace("0").is_ok());
        assert!(budget_minutes("0").is_ok() && budget_minutes("-1").is_err() && budget_minutes("inf").is_err());
        assert!(fault_seconds("0").is_err() && delay("0").is_ok() && delay("nan").is_err());
    }
}
