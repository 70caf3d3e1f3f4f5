//! The nightly ensemble's coverage thresholds: each applicable matrix cell
//! (and situation) must be hit in at least a stated share of the rounds
//! where it was applicable. Thresholds live in a committed JSON file
//! (`dhp-chaos/nightly-coverage.json`, docs/chaos-coverage.md).

use crate::error::{Error, Result};
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// The thresholds file.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Thresholds {
    /// Share every applicable cell without its own entry must reach (0: reported only).
    #[serde(default)]
    pub default_cell_share: f64,
    /// `moment/fault` (e.g. `renew/SIGKILL`) → least share of rounds.
    #[serde(default)]
    pub cells: BTreeMap<String, f64>,
    /// Situation name (e.g. `orphan-death`) → least share of rounds.
    #[serde(default)]
    pub situations: BTreeMap<String, f64>,
}

/// One measured cell or situation against its threshold.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Share {
    /// `moment/fault`, or `situation:NAME`.
    pub name: String,
    /// Rounds where it was applicable.
    pub applicable: u64,
    /// Of those, rounds that hit it.
    pub hit: u64,
    /// The least share asked for.
    pub min_share: f64,
}

impl Share {
    /// Hit in fewer rounds than its threshold asks.
    pub fn missed(&self) -> bool {
        self.applicable > 0 && (self.hit as f64) < self.min_share * self.applicable as f64
    }
}

impl Thresholds {
    /// Read and check a thresholds file (every share within 0..=1).
    pub fn load(path: &Path) -> Result<Thresholds> {
        let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
            doing: "reading the coverage thresholds",
            path: path.to_path_buf(),
            source,
        })?;
        let t: Thresholds =
            serde_json::from_str(&text).map_err(|source| Error::Json { path: path.to_path_buf(), source })?;
        let all = t.cells.values().chain(t.situations.values()).chain([&t.default_cell_share]);
        if let Some(bad) = all.into_iter().find(|s| !(0.0..=1.0).contains(*s)) {
            return Err(Error::Usage(format!("{}: share {bad} is not within 0..=1", path.display())));
        }
        Ok(t)
    }

    /// Every applicable cell and thresholded situation of a run's rounds
    /// (`results.json`'s `rounds`), with its share.
    pub fn measure(&self, rounds: &[Value]) -> Vec<Share> {
        let mut acc: BTreeMap<String, (u64, u64, f64)> = BTreeMap::new();
        for r in rounds {
            let cov = &r["coverage"];
            for c in cov["matrix"].as_array().into_iter().flatten() {
                if c.get("not_applicable").is_some() {
                    continue;
                }
                let name = format!("{}/{}", c["moment"].as_str().unwrap_or("?"), c["fault"].as_str().unwrap_or("?"));
                let min = self.cells.get(&name).copied().unwrap_or(self.default_cell_share);
                let e = acc.entry(name).or_insert((0, 0, min));
                e.0 += 1;
                e.1 += u64::from(c["hits"].as_u64().unwrap_or(0) > 0);
            }
            for s in cov["situations"].as_array().into_iter().flatten() {
                let name = s["name"].as_str().unwrap_or("?");
                let Some(&min) = self.situations.get(name) else { continue };
                if s.get("not_applicable").is_some() {
                    continue;
                }
                let e = acc.entry(format!("situation:{name}")).or_insert((0, 0, min));
                e.0 += 1;
                e.1 += u64::from(s["hits"].as_u64().unwrap_or(0) > 0);
            }
        }
        acc.into_iter().map(|(name, (applicable, hit, min_share))| Share { name, applicable, hit, min_share }).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn round(renew_hits: u64, orphan_death: u64) -> Value {
        json!({"coverage": {
            "matrix": [
                {"moment": "renew", "fault": "SIGKILL", "hits": renew_hits},
                {"moment": "claim", "fault": "SIGSTOP", "hits": 0, "not_applicable": "no pause"}
            ],
            "situations": [{"name": "orphan-death", "hits": orphan_death, "target": true}]
        }})
    }

    #[test]
    fn a_cell_hit_in_too_few_rounds_is_missed() {
        let t = Thresholds {
            cells: [("renew/SIGKILL".to_string(), 0.5)].into(),
            situations: [("orphan-death".to_string(), 0.75)].into(),
            ..Thresholds::default()
        };
        let s = t.measure(&[round(3, 1), round(0, 1), round(1, 0), round(0, 1)]);
        let renew = s.iter().find(|x| x.name == "renew/SIGKILL").unwrap();
        assert_eq!((renew.applicable, renew.hit, renew.missed()), (4, 2, false));
        let od = s.iter().find(|x| x.name == "situation:orphan-death").unwrap();
        assert_eq!((od.hit, od.missed()), (3, false));
        assert!(s.iter().all(|x| x.name != "claim/SIGSTOP"), "a cell never applicable is not measured");
        let strict = Thresholds { default_cell_share: 0.9, ..Thresholds::default() };
        assert!(strict.measure(&[round(3, 1), round(0, 1)])[0].missed());
    }
}
