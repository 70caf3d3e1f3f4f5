//! `--badge DIR`: a shields.io endpoint badge per implementation
//! (`https://img.shields.io/endpoint?url=…/LABEL.json`).

use super::{tally, Counts, Record};
use serde_json::{json, Value};

/// The badge of one implementation's records.
pub fn badge(records: &[&Record]) -> Value {
    let c = Counts::of(records.iter().copied());
    let color = if c.failed > 0 {
        "red"
    } else if c.errored > 0 {
        "orange"
    } else if c.passed == 0 {
        "lightgrey"
    } else if c.expected > 0 {
        // every failure is one --expect pins: known, not new
        "yellowgreen"
    } else {
        "brightgreen"
    };
    json!({"schemaVersion": 1, "label": "DHP 1.3 conformance", "message": tally(&c), "color": color})
}

/// Write `DIR/<label>.json` for every implementation (cross pairs
/// `A->B` are counted in neither: a badge judges one implementation).
pub fn write_all(dir: &std::path::Path, records: &[Record]) -> std::io::Result<Vec<std::path::PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let mut out = Vec::new();
    for label in super::implementations(records) {
        if label.contains("->") {
            continue;
        }
        let mine: Vec<&Record> = records.iter().filter(|r| r.implementation == label).collect();
        let path = dir.join(format!("{}.json", crate::suite::sanitize_label(&label)));
        std::fs::write(&path, format!("{}\n", badge(&mine)))?;
        out.push(path);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::{Level, Outcome};

    fn rec(o: Outcome) -> Record {
        Record {
            implementation: "ours".into(),
            assertion: "a".into(),
            level: Level::Core,
            outcome: o,
            seconds: 0.0,
            stderr: vec![],
            expected: None,
        }
    }

    /// Snapshots of the three colours.
    #[test]
    fn snapshots() {
        let pass = rec(Outcome::Passed);
        let skip = rec(Outcome::Skipped("unsupported".into()));
        let fail = rec(Outcome::Failed("f".into()));
        let err = rec(Outcome::Errored("e".into()));
        assert_eq!(
            badge(&[&pass, &pass, &skip]).to_string(),
            r#"{"schemaVersion":1,"label":"DHP 1.3 conformance","message":"2/2 passed, 1 skipped","color":"brightgreen"}"#
        );
        assert_eq!(
            badge(&[&pass, &fail, &err]).to_string(),
            r#"{"schemaVersion":1,"label":"DHP 1.3 conformance","message":"1/3 passed, 1 failed, 1 errored","color":"red"}"#
        );
        assert_eq!(
            badge(&[&pass, &err]).to_string(),
            r#"{"schemaVersion":1,"label":"DHP 1.3 conformance","message":"1/2 passed, 1 errored","color":"orange"}"#
        );
    }
}
