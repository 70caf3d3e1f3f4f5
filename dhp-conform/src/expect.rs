//! Expectations files (`--expect FILE`): an implementation's known
//! failures, pinned, so that its CI fails only when an outcome changes —
//! a new failure, or a pinned failure that now passes (remove the pin).
//!
//! ```json
//! {"implementations": {"reference": {
//!     "fast-death-detection": {"outcome": "skipped", "why": "no liveness tokens"}}}}
//! ```
//!
//! An assertion that is not pinned is expected to pass (or be skipped for
//! an undeclared feature); a pinned one must end exactly as pinned. An
//! intermittent outcome is pinned as a list (`"outcome": ["failed",
//! "passed"]`, as web-platform-tests' metadata pins intermittents): any
//! outcome in it is expected.

use crate::error::Error;
use crate::report::Record;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// Why an expectations file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ExpectError {
    /// The file cannot be read.
    #[error("reading {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The file is not JSON.
    #[error("{path} is not JSON: {source}")]
    Json {
        /// The file.
        path: String,
        /// The parser's error.
        source: serde_json::Error,
    },
    /// JSON, but not an expectations file: an unknown id or outcome, a pin
    /// without a reason.
    #[error("{path}: {what}")]
    Shape {
        /// The file.
        path: String,
        /// What is wrong, and where.
        #[source]
        what: Error,
    },
}

/// One pinned outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pin {
    /// `passed`, `failed`, `errored` or `skipped`; more than one for an
    /// intermittent outcome (each is expected).
    pub outcomes: Vec<String>,
    /// Why the implementation ends that way (required, non-empty).
    pub why: String,
}

/// implementation label → assertion id → pin.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Expectations(pub BTreeMap<String, BTreeMap<String, Pin>>);

const OUTCOMES: &[&str] = &["passed", "failed", "errored", "skipped"];

impl Expectations {
    /// Read and check the file at `path` (see [`Expectations::from_json`]);
    /// `known_ids` are the assertion ids a pin may name.
    pub fn load(path: &Path, known_ids: &[&str]) -> Result<Expectations, ExpectError> {
        let p = path.display().to_string();
        let bytes = std::fs::read(path).map_err(|source| ExpectError::Read { path: p.clone(), source })?;
        let v: Value =
            serde_json::from_slice(&bytes).map_err(|source| ExpectError::Json { path: p.clone(), source })?;
        Self::from_json(&v, known_ids).map_err(|what| ExpectError::Shape { path: p, what })
    }

    /// Parse; every id must be a known assertion, every outcome one of
    /// the four, every pin must say why.
    pub fn from_json(v: &Value, known_ids: &[&str]) -> Result<Expectations, Error> {
        let imps = v.get("implementations").and_then(Value::as_object).ok_or(Error::NoImplementations)?;
        let mut out = BTreeMap::new();
        for (label, pins) in imps {
            let pins = pins.as_object().ok_or_else(|| Error::PinsNotAnObject { label: label.clone() })?;
            let mut m = BTreeMap::new();
            for (id, pin) in pins {
                let (label, id) = (label.clone(), id.clone());
                if !known_ids.contains(&id.as_str()) {
                    return Err(Error::UnknownAssertion { label, id });
                }
                let outcomes: Vec<&str> = match pin.get("outcome") {
                    Some(Value::String(o)) => vec![o.as_str()],
                    Some(Value::Array(os)) => os.iter().map(|o| o.as_str().unwrap_or_default()).collect(),
                    _ => vec![],
                };
                if outcomes.is_empty() || outcomes.iter().any(|o| !OUTCOMES.contains(o)) {
                    return Err(Error::BadOutcome { label, id, allowed: OUTCOMES.join(", ") });
                }
                let why = pin.get("why").and_then(Value::as_str).unwrap_or_default();
                if why.trim().is_empty() {
                    return Err(Error::PinWithoutWhy { label, id });
                }
                let outcomes = outcomes.into_iter().map(String::from).collect();
                m.insert(id, Pin { outcomes, why: why.to_string() });
            }
            out.insert(label.clone(), m);
        }
        Ok(Expectations(out))
    }

    /// The pin of `assertion` for the implementation labelled
    /// `implementation`; `None`: expected to pass (or skip).
    pub fn pin(&self, implementation: &str, assertion: &str) -> Option<&Pin> {
        self.0.get(implementation).and_then(|m| m.get(assertion))
    }

    /// The pin's reason if `r` failed or errored exactly as pinned (an
    /// expected failure, which reports show as such).
    pub fn expected_failure(&self, r: &Record) -> Option<String> {
        let got = r.outcome.word();
        match self.pin(&r.implementation, &r.assertion) {
            Some(p) if matches!(got, "failed" | "errored") && p.outcomes.iter().any(|o| o == got) => {
                Some(p.why.clone())
            }
            _ => None,
        }
    }

    /// Records whose outcome differs from what is expected, as
    /// `(record, expected)` with a sentence for each.
    pub fn surprises<'a>(&self, records: &'a [Record]) -> Vec<(&'a Record, String)> {
        let mut out = Vec::new();
        for r in records {
            let got = r.outcome.word();
            match self.pin(&r.implementation, &r.assertion) {
                Some(p) if p.outcomes.iter().any(|o| o == got) => {}
                Some(p) => out.push((r, format!("pinned {} ({}), now {got}", p.outcomes.join(" or "), p.why))),
                None if got == "passed" || got == "skipped" => {}
                None => out.push((r, format!("expected to pass, {got}"))),
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::{Level, Outcome};
    use serde_json::json;

    fn rec(imp: &str, a: &str, o: Outcome) -> Record {
        Record {
            implementation: imp.into(),
            assertion: a.into(),
            level: Level::Core,
            outcome: o,
            seconds: 0.0,
            stderr: vec![],
            expected: None,
        }
    }

    #[test]
    fn pinned_outcomes_are_expected_and_changes_are_surprises() {
        let e = Expectations::from_json(
            &json!({"implementations": {"r": {
                "x": {"outcome": "failed", "why": "known"},
                "y": {"outcome": "failed", "why": "known"},
                "w": {"outcome": ["failed", "passed"], "why": "a race"},
                "v": {"outcome": ["failed", "passed"], "why": "a race"}}}}),
            &["v", "w", "x", "y", "z"],
        )
        .unwrap();
        let rs = vec![
            rec("r", "x", Outcome::Failed("m".into())),
            rec("r", "y", Outcome::Passed),
            rec("r", "z", Outcome::Errored("e".into())),
            rec("o", "x", Outcome::Skipped("s".into())),
            rec("r", "w", Outcome::Passed),
            rec("r", "v", Outcome::Errored("e".into())),
        ];
        let s = e.surprises(&rs);
        let got: Vec<(&str, &str)> = s.iter().map(|(r, w)| (r.assertion.as_str(), w.as_str())).collect();
        assert_eq!(
            got,
            vec![
                ("y", "pinned failed (known), now passed"),
                ("z", "expected to pass, errored"),
                ("v", "pinned failed or passed (a race), now errored"),
            ]
        );
    }

    #[test]
    fn bad_files_are_refused() {
        let ids = ["x"];
        for (v, want) in [
            (json!({}), "no \"implementations\""),
            (json!({"implementations": {"r": {"typo": {"outcome": "failed", "why": "w"}}}}), "unknown assertion id"),
            (json!({"implementations": {"r": {"x": {"outcome": "broken", "why": "w"}}}}), "outcome must be"),
            (
                json!({"implementations": {"r": {"x": {"outcome": ["failed", "broken"], "why": "w"}}}}),
                "outcome must be",
            ),
            (json!({"implementations": {"r": {"x": {"outcome": [], "why": "w"}}}}), "outcome must be"),
            (json!({"implementations": {"r": {"x": {"outcome": "failed"}}}}), "needs a \"why\""),
        ] {
            let e = Expectations::from_json(&v, &ids).unwrap_err().to_string();
            assert!(e.contains(want), "{e}");
        }
    }
}
