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

/// Longest badge file stem: far below NAME_MAX (255 bytes), whatever name
/// an implementation gives itself (a long one must not keep its badge from
/// being written).
pub const MAX_STEM: usize = 64;

/// `<label>.json`, the label sanitised; a label longer than [`MAX_STEM`]
/// is cut and followed by a hash of the whole name (two long names that
/// share a prefix keep apart).
pub fn file_name(label: &str) -> String {
    let clean = crate::suite::sanitize_label(label);
    if clean.len() <= MAX_STEM {
        return format!("{clean}.json");
    }
    // FNV-1a 64: stable across runs and builds (a published URL names it)
    let h = label.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3));
    format!("{}-{h:016x}.json", &clean[..MAX_STEM - 17])
}

/// Write `DIR/<label>.json` ([`file_name`]) for every implementation (cross pairs
/// `A->B` are counted in neither: a badge judges one implementation).
pub fn write_all(dir: &std::path::Path, records: &[Record]) -> std::io::Result<Vec<std::path::PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let mut out = Vec::new();
    for label in super::implementations(records) {
        if label.contains("->") {
            continue;
        }
        let mine: Vec<&Record> = records.iter().filter(|r| r.implementation == label).collect();
        let path = dir.join(file_name(&label));
        std::fs::write(&path, format!("{}\n", badge(&mine)))?;
        out.push(path);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::{Level, Outcome};

    #[test]
    fn a_long_implementation_name_gets_a_bounded_file_name() {
        assert_eq!(file_name("dhp-rs"), "dhp-rs.json");
        let long = "x".repeat(400);
        let f = file_name(&long);
        assert!(f.len() <= MAX_STEM + 5, "{f}");
        assert_ne!(f, file_name(&format!("{long}y")), "names sharing a prefix keep apart");
        let dir = tempfile::tempdir().unwrap();
        let mut recs = vec![rec(Outcome::Failed("x".into()))];
        recs[0].implementation = long;
        let paths = write_all(dir.path(), &recs).expect("a 400-character name is written");
        assert_eq!(paths.len(), 1);
        assert!(paths[0].exists());
    }

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
