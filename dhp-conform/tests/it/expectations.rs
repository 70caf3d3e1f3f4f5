//! `--expect FILE`: pinned known failures keep CI green; any change —
//! a new failure, or a pinned failure that now passes — turns it red.
use crate::common::*;

fn pin_file(dir: &tempfile::TempDir, label: &str, id: &str, outcome: &str) -> String {
    let p = dir.path().join("expect.json");
    let v = serde_json::json!({"implementations": {label: {id: {"outcome": outcome, "why": "known"}}}});
    std::fs::write(&p, v.to_string()).unwrap();
    p.to_string_lossy().into_owned()
}

#[test]
fn a_pinned_failure_passes_and_a_change_fails() {
    let dir = tempfile::tempdir().unwrap();
    let cmd = mutant_adapter("ack-before-complete", "");
    let label = "dhp-rs-mutant-ack-before-complete";
    let args = |f: &str| -> Vec<String> {
        ["--impl", &cmd, "ack-after-complete", "--exact", "--expect", f].iter().map(|s| s.to_string()).collect()
    };
    let pinned = pin_file(&dir, label, "ack-after-complete", "failed");
    let a = args(&pinned);
    let run = conform(&a.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(run.code, 0, "pinned failure must not fail the run:\n{}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("every outcome as expected"), "{}", run.stdout);

    let unpinned = pin_file(&dir, "someone-else", "ack-after-complete", "failed");
    let a = args(&unpinned);
    let run = conform(&a.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains("ack-after-complete [dhp-rs-mutant-ack-before-complete]: expected to pass, failed"),
        "{}",
        run.stdout
    );

    // the pinned failure was fixed: the pin must go
    let run = conform(&[
        "ack-after-complete",
        "--exact",
        "--impl",
        "ours",
        "--expect",
        &pin_file(&dir, "ours", "ack-after-complete", "failed"),
    ]);
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("pinned failed (known), now passed"), "{}", run.stdout);
}

#[test]
fn a_bad_expectations_file_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let run = conform(&["--expect", &pin_file(&dir, "ours", "no-such-assertion", "failed")]);
    assert_eq!(run.code, 2, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stderr.contains("unknown assertion id"), "{}", run.stderr);
}

/// The shipped expectations of the reference hold.
#[test]
fn the_reference_meets_its_shipped_expectations() {
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/expectations/reference.json");
    let run = conform(&["--impl", "reference", "--level", "extended", "--expect", file]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    eprintln!("reference, all single-implementation levels: {:.1}s", run.wall.as_secs_f64());
}
