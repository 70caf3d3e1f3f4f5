//! `dhp-chaos ledger`: the findings ledger across nights, the regression
//! rounds it prints, and the nightly coverage thresholds (exit 1 when a
//! cell was hit in too few rounds) — on run directories whose
//! `results.json` is written here.

use crate::common::*;
use serde_json::json;
use std::path::Path;
use std::process::Command;

fn night(dir: &Path, name: &str, violated: bool, renew_hits: &[u64]) -> std::path::PathBuf {
    let d = dir.join(name);
    std::fs::create_dir_all(&d).unwrap();
    let rounds: Vec<_> = renew_hits
        .iter()
        .map(|h| {
            json!({"replay": "cargo run -p dhp-chaos -- --seed 41 --rounds 1 --steer",
                   "invariants": [{"name": "fencing", "violations": if violated { vec!["split brain"] } else { vec![] }}],
                   "coverage": {"matrix": [{"moment": "renew", "fault": "SIGKILL", "hits": h}], "situations": []}})
        })
        .collect();
    std::fs::write(d.join("results.json"), json!({"rounds": rounds}).to_string()).unwrap();
    d
}

fn ledger(args: &[&str]) -> (i32, String) {
    let o = Command::new(chaos_bin()).arg("ledger").args(args).output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr),
    )
}

#[test]
fn the_ledger_tracks_findings_across_nights_and_the_thresholds_fail_the_night() {
    let t = tempfile::tempdir().unwrap();
    let file = t.path().join("ledger.json");
    let lf = file.to_str().unwrap();
    let n1 = night(t.path(), "n1", true, &[2, 1]);
    let (code, out) = ledger(&["--ledger", lf, "--label", "ours", "--night", "n1", n1.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("finding ours/fencing: new"), "{out}");
    let (_, out) = ledger(&["--ledger", lf, "--label", "ours", "--regressions"]);
    assert_eq!(out.trim(), "--seed 41 --rounds 1 --steer", "the failing round becomes a regression round");
    let n2 = night(t.path(), "n2", true, &[1]);
    assert!(ledger(&["--ledger", lf, "--label", "ours", "--night", "n2", n2.to_str().unwrap()]).1.contains("ongoing"));
    let n3 = night(t.path(), "n3", false, &[1]);
    assert!(ledger(&["--ledger", lf, "--label", "ours", "--night", "n3", n3.to_str().unwrap()]).1.contains("resolved"));
    let n4 = night(t.path(), "n4", true, &[1]);
    assert!(ledger(&["--ledger", lf, "--label", "ours", "--night", "n4", n4.to_str().unwrap()])
        .1
        .contains("regressed"));
    // renew/SIGKILL hit in 1 of 4 rounds: under 50 % fails, under 25 % holds
    let th = t.path().join("th.json");
    let n5 = night(t.path(), "n5", false, &[0, 3, 0, 0]);
    for (share, want) in [(0.5, 1), (0.25, 0)] {
        std::fs::write(&th, json!({"cells": {"renew/SIGKILL": share}}).to_string()).unwrap();
        let (code, out) =
            ledger(&["--ledger", lf, "--label", "x", "--thresholds", th.to_str().unwrap(), n5.to_str().unwrap()]);
        assert_eq!(code, want, "share {share}: {out}");
        assert!(out.contains("hit in    1 of    4 rounds"), "{out}");
    }
    // the committed thresholds file parses
    let committed = Path::new(env!("CARGO_MANIFEST_DIR")).join("nightly-coverage.json");
    dhp_chaos::ledger::thresholds::Thresholds::load(&committed).unwrap();
}

/// A ledger, a run's results or a thresholds file that is not what it
/// should be is a usage error naming the file, and the ledger is untouched.
#[test]
fn bad_input_is_refused_and_the_ledger_is_kept() {
    let t = tempfile::tempdir().unwrap();
    let file = t.path().join("ledger.json");
    let lf = file.to_str().unwrap();
    let n1 = night(t.path(), "n1", true, &[1]);
    let n1 = n1.to_str().unwrap();
    assert_eq!(ledger(&["--ledger", lf, "--label", "ours", "--night", "n1", n1]).0, 0);
    let kept = std::fs::read(&file).unwrap();

    let torn = t.path().join("torn");
    std::fs::create_dir_all(&torn).unwrap();
    std::fs::write(torn.join("results.json"), "{\"rounds\": [").unwrap();
    let th = t.path().join("th.json");
    std::fs::write(&th, json!({"cells": {"renew/SIGKILL": 1.5}}).to_string()).unwrap();
    for args in [
        vec!["--ledger", lf, "--label", "ours", "--night", "n2", torn.to_str().unwrap()],
        vec!["--ledger", lf, "--label", "ours", "--thresholds", th.to_str().unwrap(), n1],
    ] {
        let (code, out) = ledger(&args);
        assert_eq!(code, 2, "{args:?}: {out}");
        assert!(!out.contains("panicked"), "{out}");
        assert_eq!(std::fs::read(&file).unwrap(), kept, "{args:?} changed the ledger");
    }
    let bad = t.path().join("bad.json");
    std::fs::write(&bad, "not json").unwrap();
    let (code, out) = ledger(&["--ledger", bad.to_str().unwrap(), "--label", "ours", "--night", "n1", n1]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("bad.json"), "the error names the file: {out}");
    assert_eq!(std::fs::read(&bad).unwrap(), b"not json", "a ledger that cannot be read is not overwritten");
}
