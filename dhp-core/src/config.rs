//! Configuration from `DHP_*` environment variables, with the reference's
//! defaults (`dhp/config.py`). Unlike the reference, a value that does not
//! parse is an error, not a silent fallback to the default.

use crate::error::{Error, Result};

/// Every operational knob of DHP.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub lease_interval_s: f64,
    pub lease_max_missed: i64,
    pub supervisor_scan_s: f64,
    pub leader_ttl_s: f64,
    pub stall_timeout_s: f64,
    pub stall_max_repeats: i64,
    pub max_checkpoint_bytes: usize,
    pub max_envelope_bytes: usize,
    pub max_result_bytes: usize,
    pub max_checkpoints_per_handoff: i64,
    pub transport_max_line_bytes: usize,
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
        }
    }
}

fn env_num<T: std::str::FromStr>(
    get: &impl Fn(&str) -> Option<String>,
    name: &str,
    default: T,
) -> Result<T> {
    match get(name) {
        None => Ok(default),
        Some(raw) => raw
            .trim()
            .parse()
            .map_err(|_| Error::Config(format!("{name}={raw:?} is not a valid number"))),
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
        };
        c.validate()?;
        Ok(c)
    }

    /// The reference's `DHPConfig.validate`, with messages that name the knob.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: &str| Err(Error::Config(m.to_string()));
        if !(self.lease_interval_s.is_finite() && self.lease_interval_s > 0.0) {
            return bad("DHP_LEASE_INTERVAL_S must be > 0");
        }
        if self.lease_max_missed < 2 {
            return bad("DHP_LEASE_MAX_MISSED must be >= 2");
        }
        if !(self.supervisor_scan_s.is_finite() && self.supervisor_scan_s > 0.0) {
            return bad("DHP_SUPERVISOR_SCAN_S must be > 0");
        }
        if self.leader_ttl_s.partial_cmp(&self.supervisor_scan_s) != Some(std::cmp::Ordering::Greater) {
            return bad("DHP_LEADER_TTL_S must exceed DHP_SUPERVISOR_SCAN_S");
        }
        if !(self.stall_timeout_s.is_finite() && self.stall_timeout_s > 0.0) {
            return bad("DHP_STALL_TIMEOUT_S must be > 0");
        }
        if self.stall_max_repeats < 1 {
            return bad("DHP_STALL_MAX_REPEATS must be >= 1");
        }
        for (name, v) in [
            ("DHP_MAX_CHECKPOINT_BYTES", self.max_checkpoint_bytes),
            ("DHP_MAX_ENVELOPE_BYTES", self.max_envelope_bytes),
            ("DHP_MAX_RESULT_BYTES", self.max_result_bytes),
            ("DHP_TRANSPORT_MAX_LINE_BYTES", self.transport_max_line_bytes),
        ] {
            if v == 0 {
                return Err(Error::Config(format!("{name} must be > 0")));
            }
        }
        if self.max_checkpoints_per_handoff < 1 {
            return bad("DHP_MAX_CHECKPOINTS must be > 0");
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
}
