//! The round's configuration as the checker reads it back from
//! `round.json`: its own type, not the harness's `RoundConfig`, because a
//! round directory may come from an older harness or be written by hand
//! (an implementer's round, the checker's tests). Every member the checker
//! reads has its default here, once.

use crate::config::{Impl, Ship};
use serde::Deserialize;

/// `round.json`'s `config`, the members the checker reads.
#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub(crate) struct SavedConfig {
    pub(crate) seed: u64,
    pub(crate) round: u32,
    pub(crate) workers: Option<Impl>,
    pub(crate) supervisors: Option<Impl>,
    pub(crate) replay: String,
    /// The processes under test wrote history that is read.
    pub(crate) impl_history: bool,
    pub(crate) ship: Ship,
    /// `--ship-max-lag` (`None`: a round that recorded none).
    pub(crate) ship_max_lag: Option<u64>,
    pub(crate) engine: String,
    /// The store's max_attempts (`None`: the model's default).
    pub(crate) max_attempts: Option<i64>,
    pub(crate) host: Option<SavedHost>,
    pub(crate) allow_unchecked: Vec<String>,
    pub(crate) timing: SavedTiming,
    pub(crate) clock: SavedClock,
}

impl Default for SavedConfig {
    fn default() -> Self {
        SavedConfig {
            seed: 0,
            round: 0,
            workers: None,
            supervisors: None,
            replay: String::new(),
            impl_history: true,
            ship: Ship::File,
            ship_max_lag: None,
            engine: "sqlite".into(),
            max_attempts: None,
            host: None,
            allow_unchecked: Vec::new(),
            timing: SavedTiming::default(),
            clock: SavedClock::default(),
        }
    }
}

/// `config.host`: which host of a `--hosts` round this directory is.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct SavedHost {
    pub(crate) index: u32,
}

/// `config.timing`; absent members are dhp's defaults (lease renewed every
/// 5 s, 3 missed; scans every second; a 5 s leader term).
#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub(crate) struct SavedTiming {
    pub(crate) lease_interval_s: f64,
    pub(crate) lease_max_missed: f64,
    pub(crate) supervisor_scan_s: f64,
    pub(crate) leader_ttl_s: f64,
}

impl Default for SavedTiming {
    fn default() -> Self {
        SavedTiming { lease_interval_s: 5.0, lease_max_missed: 3.0, supervisor_scan_s: 1.0, leader_ttl_s: 5.0 }
    }
}

/// `config.clock`: faked clocks (none when absent).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub(crate) struct SavedClock {
    pub(crate) share: f64,
    pub(crate) max_offset_s: f64,
}
