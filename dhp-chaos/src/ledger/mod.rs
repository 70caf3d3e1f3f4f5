//! The findings ledger across nightly runs (`dhp-chaos ledger`): each
//! invariant a configuration (a nightly job's label) violated is a finding,
//! `new` the first night, `ongoing` while it keeps failing, `resolved` the
//! first night it does not, and `regressed` when a resolved one fails
//! again. Each finding keeps the replay arguments of the round that failed
//! first; `dhp-chaos ledger --regressions` prints them, so that a failure
//! found once is replayed every night (a regression round) and its verdict
//! feeds the ledger like any other run of that label.

pub mod thresholds;

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Where a finding stands after the last night.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// Failed for the first time last night.
    New,
    /// Failed last night and the night before.
    Ongoing,
    /// Did not fail last night (its regression round passed too).
    Resolved,
    /// Failed last night after it had been resolved.
    Regressed,
}

/// One finding: a label's invariant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// The nightly job (`--label`).
    pub label: String,
    /// The violated invariant.
    pub invariant: String,
    /// Its state.
    pub status: Status,
    /// The night it was first seen, and the last night it failed.
    pub first_seen: String,
    /// The last night it failed.
    pub last_seen: String,
    /// The `dhp-chaos` arguments replaying the round that first failed (the regression round).
    pub replay: String,
    /// The first violation message seen.
    pub example: String,
    /// Nights it failed.
    pub nights_failed: u64,
}

/// The ledger file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Ledger {
    /// Keyed by `label/invariant`.
    pub findings: BTreeMap<String, Finding>,
}

/// One failure of one run: (invariant, replay arguments, a violation).
pub type Failure = (String, String, String);

/// The unexplained violations of a run's `results.json` (known reference
/// weaknesses allowed by the run are not findings).
pub fn failures(results: &Value) -> Vec<Failure> {
    let mut out = Vec::new();
    for r in results["rounds"].as_array().into_iter().flatten() {
        let replay = r["replay"].as_str().unwrap_or("");
        let args = replay.split_once(" -- ").map_or(replay, |(_, a)| a).to_string();
        for i in r["invariants"].as_array().into_iter().flatten() {
            let Some(v) = i["violations"].as_array().filter(|v| !v.is_empty()) else { continue };
            let name = i["name"].as_str().unwrap_or("?").to_string();
            out.push((name, args.clone(), v[0].as_str().unwrap_or("").to_string()));
        }
    }
    out
}

impl Ledger {
    /// Read `path`; an absent file is an empty ledger (the first night).
    pub fn load(path: &Path) -> Result<Ledger> {
        match std::fs::read_to_string(path) {
            Ok(t) => serde_json::from_str(&t).map_err(|source| Error::Json { path: path.to_path_buf(), source }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Ledger::default()),
            Err(source) => Err(Error::Io { doing: "reading the findings ledger", path: path.to_path_buf(), source }),
        }
    }

    /// Write it (pretty JSON).
    pub fn save(&self, path: &Path) -> Result<()> {
        let text =
            serde_json::to_string_pretty(self).map_err(|source| Error::Json { path: path.to_path_buf(), source })?;
        std::fs::write(path, text + "\n").map_err(|source| Error::Io {
            doing: "writing",
            path: path.to_path_buf(),
            source,
        })
    }

    /// One night of `label`: every failure of its runs (the regression
    /// rounds' included). Returns the keys whose status changed.
    pub fn update(&mut self, label: &str, night: &str, failed: &[Failure]) -> Vec<(String, Status)> {
        let mut changed = Vec::new();
        let mut seen = BTreeSet::new();
        for (inv, replay, example) in failed {
            let key = format!("{label}/{inv}");
            if !seen.insert(key.clone()) {
                continue;
            }
            let status = match self.findings.get_mut(&key) {
                None => {
                    self.findings.insert(
                        key.clone(),
                        Finding {
                            label: label.into(),
                            invariant: inv.clone(),
                            status: Status::New,
                            first_seen: night.into(),
                            last_seen: night.into(),
                            replay: replay.clone(),
                            example: example.clone(),
                            nights_failed: 1,
                        },
                    );
                    Status::New
                }
                Some(f) => {
                    f.status = if f.status == Status::Resolved { Status::Regressed } else { Status::Ongoing };
                    f.last_seen = night.into();
                    f.nights_failed += 1;
                    f.status
                }
            };
            changed.push((key, status));
        }
        for (key, f) in self.findings.iter_mut().filter(|(k, f)| f.label == label && !seen.contains(*k)) {
            if f.status != Status::Resolved {
                f.status = Status::Resolved;
                changed.push((key.clone(), Status::Resolved));
            }
        }
        changed
    }

    /// The regression rounds of `label`: each finding's replay arguments, once.
    pub fn regressions(&self, label: &str) -> Vec<String> {
        let set: BTreeSet<&str> = self
            .findings
            .values()
            .filter(|f| f.label == label && !f.replay.is_empty())
            .map(|f| f.replay.as_str())
            .collect();
        set.into_iter().map(String::from).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fail(inv: &str) -> Failure {
        (inv.into(), "--seed 7 --rounds 1".into(), "boom".into())
    }

    #[test]
    fn a_finding_goes_new_ongoing_resolved_regressed() {
        let mut l = Ledger::default();
        assert_eq!(l.update("ours", "n1", &[fail("fencing")]), vec![("ours/fencing".into(), Status::New)]);
        assert_eq!(l.update("ours", "n2", &[fail("fencing"), fail("fencing")])[0].1, Status::Ongoing);
        // another label's night leaves it alone
        assert!(l.update("tcp", "n3", &[]).is_empty());
        assert_eq!(l.update("ours", "n3", &[]), vec![("ours/fencing".into(), Status::Resolved)]);
        assert!(l.update("ours", "n4", &[]).is_empty(), "resolved stays resolved");
        assert_eq!(l.update("ours", "n5", &[fail("fencing")])[0].1, Status::Regressed);
        let f = &l.findings["ours/fencing"];
        assert_eq!((f.first_seen.as_str(), f.last_seen.as_str(), f.nights_failed), ("n1", "n5", 3));
        assert_eq!(l.regressions("ours"), vec!["--seed 7 --rounds 1".to_string()]);
        assert!(l.regressions("tcp").is_empty());
    }

    #[test]
    fn failures_are_the_unexplained_violations_with_their_replay() {
        let results = serde_json::json!({"rounds": [{
            "replay": "cargo run -p dhp-chaos -- --seed 9 --rounds 1 --steer",
            "invariants": [
                {"name": "fencing", "violations": ["split brain"]},
                {"name": "zombies", "violations": [], "known": ["a known weakness"]},
                {"name": "outcome"}
            ]
        }]});
        assert_eq!(
            failures(&results),
            vec![("fencing".into(), "--seed 9 --rounds 1 --steer".into(), "split brain".into())]
        );
    }
}
