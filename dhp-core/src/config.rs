//! Configuration from `DHP_*` environment variables, with the reference's
//! defaults (`dhp/config.py`). Unlike the reference, a value that does not
//! parse is an error, not a silent fallback to the default.

use crate::clock::Clock;
use crate::error::{Error, Result};
use crate::events::Hooks;
use std::time::Duration;

/// Upper bound of every `DHP_*_S` duration knob (one day). A lease interval
/// or scan period beyond this is a typo, and bounding it keeps every lease
/// expiry (`now + interval × max_missed`) finite.
pub const MAX_KNOB_S: f64 = 86_400.0;
/// Upper bound of `DHP_LEASE_MAX_MISSED`.
pub const MAX_LEASE_MISSED: i64 = 1_000;
/// Upper bound of `DHP_STALL_MAX_REPEATS`.
pub const MAX_STALL_REPEATS: i64 = 1_000_000;
/// Upper bound of every `DHP_*_BYTES` size knob (1 GiB).
pub const MAX_BYTES: usize = 1 << 30;
/// Upper bound of `DHP_MAX_CHECKPOINTS`.
pub const MAX_CHECKPOINTS: i64 = 1_000_000_000;

/// A number for a message: `1e308`, not 309 digits.
pub fn fmt_num(v: f64) -> String {
    if v != 0.0 && v.is_finite() && !(1e-4..1e15).contains(&v.abs()) {
        format!("{v:e}")
    } else {
        v.to_string()
    }
}

/// Seconds as a `Duration`, checked: `secs` must be finite and within
/// `[0, max_s]`, else [`Error::OutOfRange`] naming `name` (the flag or
/// variable). The one float→`Duration` conversion of the workspace:
/// `Duration::from_secs_f64` panics on a negative, NaN or huge value.
pub fn duration_from_secs(name: &str, secs: f64, max_s: f64) -> Result<Duration> {
    let out_of_range = || Error::OutOfRange {
        name: name.to_string(),
        value: fmt_num(secs),
        range: format!("[0, {}] seconds", fmt_num(max_s)),
    };
    if !(secs.is_finite() && (0.0..=max_s).contains(&secs)) {
        return Err(out_of_range());
    }
    Duration::try_from_secs_f64(secs).map_err(|_| out_of_range())
}

/// Like [`duration_from_secs`], but zero is refused too (timeouts, periods).
pub fn positive_duration(name: &str, secs: f64, max_s: f64) -> Result<Duration> {
    if secs == 0.0 {
        return Err(Error::OutOfRange {
            name: name.to_string(),
            value: fmt_num(secs),
            range: format!("(0, {}] seconds", fmt_num(max_s)),
        });
    }
    duration_from_secs(name, secs, max_s).map_err(|_| Error::OutOfRange {
        name: name.to_string(),
        value: fmt_num(secs),
        range: format!("(0, {}] seconds", fmt_num(max_s)),
    })
}

/// Lease expiry `t + interval × max_missed`, refusing a non-finite result so
/// that Inf or NaN never reaches a store (stored rows may come from anyone).
pub fn lease_expiry(t: f64, interval_s: f64, max_missed: i64) -> Result<f64> {
    let at = t + interval_s * max_missed as f64;
    if at.is_finite() && interval_s.is_finite() && interval_s > 0.0 {
        Ok(at)
    } else {
        Err(Error::OutOfRange {
            name: "lease".into(),
            value: format!("{} s × {max_missed}", fmt_num(interval_s)),
            range: format!("a finite expiry (interval in (0, {MAX_KNOB_S}] s)"),
        })
    }
}

/// Every operational knob of DHP.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Seconds between heartbeats (`DHP_LEASE_INTERVAL_S`).
    pub lease_interval_s: f64,
    /// Heartbeats a lease may miss before it expires (`DHP_LEASE_MAX_MISSED`).
    pub lease_max_missed: i64,
    /// Seconds between supervisor scans (`DHP_SUPERVISOR_SCAN_S`).
    pub supervisor_scan_s: f64,
    /// Seconds a supervisor leadership lasts unless renewed (`DHP_LEADER_TTL_S`).
    pub leader_ttl_s: f64,
    /// Seconds without a new checkpoint before a handoff counts as stalled (`DHP_STALL_TIMEOUT_S`).
    pub stall_timeout_s: f64,
    /// Identical consecutive checkpoints before a handoff counts as stalled (`DHP_STALL_MAX_REPEATS`).
    pub stall_max_repeats: i64,
    /// Largest checkpoint state in bytes (`DHP_MAX_CHECKPOINT_BYTES`).
    pub max_checkpoint_bytes: usize,
    /// Largest envelope in bytes (`DHP_MAX_ENVELOPE_BYTES`).
    pub max_envelope_bytes: usize,
    /// Largest result in bytes (`DHP_MAX_RESULT_BYTES`).
    pub max_result_bytes: usize,
    /// Most checkpoints one handoff may write (`DHP_MAX_CHECKPOINTS`).
    pub max_checkpoints_per_handoff: i64,
    /// Longest transport-log or TCP line in bytes (`DHP_TRANSPORT_MAX_LINE_BYTES`).
    pub transport_max_line_bytes: usize,
    /// Where protocol time comes from: the store's clock, or a manual one
    /// tests advance (not read from the environment).
    pub clock: Clock,
    /// How often a leader polls liveness tokens between scans
    /// (`DHP_LIVENESS_POLL_MS`, at least 1 ms).
    pub liveness_poll: Duration,
    /// Who is told of the supervisor's, runner's and transport server's
    /// events (the `dhp` program's metrics and traces); none by default.
    pub hooks: Hooks,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            lease_interval_s: 2.0,
            lease_max_missed: 3,
            supervisor_scan_s: 1.0,
            leader_ttl_s: 5.0,
            stall_timeout_s: 120.0,
            stall_max_repeats: 10,
            max_checkpoint_bytes: 1_000_000,
            max_envelope_bytes: 10_000_000,
            max_result_bytes: 10_000_000,
            max_checkpoints_per_handoff: 1_000_000,
            transport_max_line_bytes: 2_000_000,
            clock: Clock::Store,
            liveness_poll: Duration::from_millis(10),
            hooks: Hooks::default(),
        }
    }
}

fn env_num<T>(get: &impl Fn(&str) -> Option<String>, name: &str, default: T) -> Result<T>
where
    T: std::str::FromStr,
    T::Err: std::error::Error + Send + Sync + 'static,
{
    match get(name) {
        None => Ok(default),
        Some(raw) => {
            raw.trim().parse().map_err(|e| Error::config_from(format!("{name}={raw:?} is not a valid number"), e))
        }
    }
}

impl Config {
    /// Read the process environment and validate.
    pub fn from_env() -> Result<Self> {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    /// Read from any key lookup (tests pass a map) and validate.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self> {
        let d = Config::default();
        let c = Config {
            lease_interval_s: env_num(&get, "DHP_LEASE_INTERVAL_S", d.lease_interval_s)?,
            lease_max_missed: env_num(&get, "DHP_LEASE_MAX_MISSED", d.lease_max_missed)?,
            supervisor_scan_s: env_num(&get, "DHP_SUPERVISOR_SCAN_S", d.supervisor_scan_s)?,
            leader_ttl_s: env_num(&get, "DHP_LEADER_TTL_S", d.leader_ttl_s)?,
            stall_timeout_s: env_num(&get, "DHP_STALL_TIMEOUT_S", d.stall_timeout_s)?,
            stall_max_repeats: env_num(&get, "DHP_STALL_MAX_REPEATS", d.stall_max_repeats)?,
            max_checkpoint_bytes: env_num(&get, "DHP_MAX_CHECKPOINT_BYTES", d.max_checkpoint_bytes)?,
            max_envelope_bytes: env_num(&get, "DHP_MAX_ENVELOPE_BYTES", d.max_envelope_bytes)?,
            max_result_bytes: env_num(&get, "DHP_MAX_RESULT_BYTES", d.max_result_bytes)?,
            max_checkpoints_per_handoff: env_num(&get, "DHP_MAX_CHECKPOINTS", d.max_checkpoints_per_handoff)?,
            transport_max_line_bytes: env_num(&get, "DHP_TRANSPORT_MAX_LINE_BYTES", d.transport_max_line_bytes)?,
            clock: Clock::Store,
            liveness_poll: Duration::from_millis(env_num(&get, "DHP_LIVENESS_POLL_MS", 10u64)?.max(1)),
            hooks: Hooks::default(),
        };
        c.validate()?;
        Ok(c)
    }

    /// The reference's `DHPConfig.validate`, plus upper bounds (see
    /// `docs/cli.md`), with messages that name the knob.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(Error::config(m));
        for (name, v) in [
            ("DHP_LEASE_INTERVAL_S", self.lease_interval_s),
            ("DHP_SUPERVISOR_SCAN_S", self.supervisor_scan_s),
            ("DHP_LEADER_TTL_S", self.leader_ttl_s),
            ("DHP_STALL_TIMEOUT_S", self.stall_timeout_s),
        ] {
            if !(v.is_finite() && v > 0.0 && v <= MAX_KNOB_S) {
                return bad(format!("{name}={} must be in (0, {MAX_KNOB_S}] seconds", fmt_num(v)));
            }
        }
        if !(2..=MAX_LEASE_MISSED).contains(&self.lease_max_missed) {
            return bad(format!("DHP_LEASE_MAX_MISSED={} must be in [2, {MAX_LEASE_MISSED}]", self.lease_max_missed));
        }
        if self.leader_ttl_s <= self.supervisor_scan_s {
            return bad("DHP_LEADER_TTL_S must exceed DHP_SUPERVISOR_SCAN_S".into());
        }
        if !(1..=MAX_STALL_REPEATS).contains(&self.stall_max_repeats) {
            return bad(format!(
                "DHP_STALL_MAX_REPEATS={} must be in [1, {MAX_STALL_REPEATS}]",
                self.stall_max_repeats
            ));
        }
        for (name, v) in [
            ("DHP_MAX_CHECKPOINT_BYTES", self.max_checkpoint_bytes),
            ("DHP_MAX_ENVELOPE_BYTES", self.max_envelope_bytes),
            ("DHP_MAX_RESULT_BYTES", self.max_result_bytes),
            ("DHP_TRANSPORT_MAX_LINE_BYTES", self.transport_max_line_bytes),
        ] {
            if !(1..=MAX_BYTES).contains(&v) {
                return bad(format!("{name}={v} must be in [1, {MAX_BYTES}]"));
            }
        }
        if !(1..=MAX_CHECKPOINTS).contains(&self.max_checkpoints_per_handoff) {
            return bad(format!(
                "DHP_MAX_CHECKPOINTS={} must be in [1, {MAX_CHECKPOINTS}]",
                self.max_checkpoints_per_handoff
            ));
        }
        Ok(())
    }

    /// Lease time to live: interval × max missed.
    pub fn lease_ttl_s(&self) -> f64 {
        self.lease_interval_s * self.lease_max_missed as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn with(pairs: &[(&str, &str)]) -> Result<Config> {
        let m: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        Config::from_lookup(|k| m.get(k).cloned())
    }

    #[test]
    fn defaults_match_reference() {
        let c = with(&[]).unwrap();
        assert_eq!(c, Config::default());
        assert_eq!(c.lease_ttl_s(), 6.0);
    }

    #[test]
    fn bad_values_are_named() {
        let e = with(&[("DHP_LEASE_INTERVAL_S", "fast")]).unwrap_err().to_string();
        assert!(e.contains("DHP_LEASE_INTERVAL_S"), "{e}");
        let e = with(&[("DHP_LEASE_MAX_MISSED", "1")]).unwrap_err().to_string();
        assert!(e.contains("DHP_LEASE_MAX_MISSED"), "{e}");
        let e = with(&[("DHP_LEADER_TTL_S", "0.5")]).unwrap_err().to_string();
        assert!(e.contains("DHP_LEADER_TTL_S"), "{e}");
        assert_eq!(with(&[("DHP_LEASE_INTERVAL_S", "0.2")]).unwrap().lease_interval_s, 0.2);
    }

    /// The liveness poll is a `Config` knob, read with the others (the
    /// library reads no environment of its own).
    #[test]
    fn the_liveness_poll_is_read_with_the_others() {
        assert_eq!(with(&[("DHP_LIVENESS_POLL_MS", "25")]).unwrap().liveness_poll, Duration::from_millis(25));
        assert_eq!(with(&[("DHP_LIVENESS_POLL_MS", "0")]).unwrap().liveness_poll, Duration::from_millis(1));
        let e = with(&[("DHP_LIVENESS_POLL_MS", "soon")]).unwrap_err().to_string();
        assert!(e.contains("DHP_LIVENESS_POLL_MS"), "{e}");
    }

    #[test]
    fn every_knob_has_an_upper_bound() {
        for (k, v) in [
            ("DHP_LEASE_INTERVAL_S", "1e308"),
            ("DHP_LEASE_INTERVAL_S", "inf"),
            ("DHP_LEASE_INTERVAL_S", "NaN"),
            ("DHP_SUPERVISOR_SCAN_S", "1e20"),
            ("DHP_LEADER_TTL_S", "1e20"),
            ("DHP_STALL_TIMEOUT_S", "86401"),
            ("DHP_LEASE_MAX_MISSED", "1001"),
            ("DHP_STALL_MAX_REPEATS", "1000001"),
            ("DHP_MAX_CHECKPOINT_BYTES", "1073741825"),
            ("DHP_MAX_CHECKPOINTS", "1000000001"),
        ] {
            let e = with(&[(k, v)]).unwrap_err();
            assert!(matches!(e, Error::Config { .. }) && e.to_string().contains(k), "{k}={v}: {e}");
        }
        let c = with(&[("DHP_LEASE_INTERVAL_S", "86400"), ("DHP_LEASE_MAX_MISSED", "1000")]).unwrap();
        assert!(c.lease_ttl_s().is_finite());
    }

    #[test]
    fn durations_are_checked() {
        assert_eq!(duration_from_secs("--pace", 1.5, 10.0).unwrap(), Duration::from_millis(1500));
        assert_eq!(duration_from_secs("--pace", 0.0, 10.0).unwrap(), Duration::ZERO);
        for v in [1e20, -1.0, f64::NAN, f64::INFINITY, 10.5] {
            let e = duration_from_secs("--pace", v, 10.0).unwrap_err();
            assert!(matches!(e, Error::OutOfRange { .. }) && e.to_string().contains("--pace"), "{v}: {e}");
        }
        assert!(positive_duration("--t", 0.0, 10.0).is_err());
        assert!(positive_duration("--t", 0.1, 10.0).is_ok());
        assert!(lease_expiry(1.0, f64::MAX, 3).is_err());
        assert!(lease_expiry(1.0, f64::NAN, 3).is_err());
        assert_eq!(lease_expiry(1.0, 2.0, 3).unwrap(), 7.0);
    }
}
