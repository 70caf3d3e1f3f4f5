//! The unbroken implementations — ours and the Python reference — pass
//! everything they support, each way round across implementations; and the
//! runner's outputs (list, filter, JSON, JUnit, compare table) hold up.
use crate::common::*;

/// Ours and the reference in one run: both suites plus the cross level
/// both ways, with a JUnit report.
#[test]
fn ours_and_reference_pass_and_continue_each_other() {
    let junit = tempfile::NamedTempFile::new().unwrap();
    let path = junit.path().to_string_lossy().into_owned();
    let run = conform(&["--impl", "ours", "--impl", "reference", "--format", "json", "--junit", &path]);
    let outcomes = run.outcomes();
    let names = assertion_names();
    // the reference's known weaknesses, pinned in its shipped expectations
    let pins: serde_json::Value = serde_json::from_str(include_str!("../../expectations/reference.json")).unwrap();
    let pins = &pins["implementations"]["reference"];
    let (mut ref_failed, mut ref_skipped) = (0, 0);
    for name in &names {
        let ours = &outcomes[&("ours".to_string(), name.clone())];
        assert_eq!(ours.0, "passed", "ours: {name}: {}", ours.1);
        let reference = &outcomes[&("reference".to_string(), name.clone())];
        // a list pins an intermittent outcome: any of its outcomes is expected
        let want: Vec<&str> = match &pins[name.as_str()]["outcome"] {
            serde_json::Value::String(o) => vec![o.as_str()],
            serde_json::Value::Array(os) => os.iter().filter_map(|o| o.as_str()).collect(),
            _ => vec!["passed"],
        };
        assert!(
            want.contains(&reference.0.as_str()),
            "reference: {name}: {} (want {want:?}): {}",
            reference.0,
            reference.1
        );
        match reference.0.as_str() {
            "failed" => ref_failed += 1,
            "skipped" => ref_skipped += 1,
            _ => {}
        }
    }
    assert_eq!(
        outcomes[&("reference".to_string(), "fast-death-detection".to_string())].1,
        "unsupported: reference does not declare feature `fast-death-detection`"
    );
    for pair in ["ours->reference", "reference->ours"] {
        for x in ["cross-store", "cross-log", "cross-bundle"] {
            let o = &outcomes[&(pair.to_string(), x.to_string())];
            assert_eq!(o.0, "passed", "{x} {pair}: {}", o.1);
        }
    }
    let s = run.summary();
    let n = names.len();
    let passed = 2 * n - ref_failed - ref_skipped + 6;
    let counts = (s["passed"].as_u64(), s["failed"].as_u64(), s["errored"].as_u64(), s["skipped"].as_u64());
    assert_eq!(counts, (Some(passed as u64), Some(ref_failed as u64), Some(0), Some(ref_skipped as u64)), "{s}");
    assert_eq!(run.code, if ref_failed > 0 { 1 } else { 0 }, "{}", run.stderr);
    assert!(
        run.stderr.contains(&format!("{passed} passed, {ref_failed} failed, 0 errored, {ref_skipped} skipped")),
        "{}",
        run.stderr
    );
    let xml = std::fs::read_to_string(&path).unwrap();
    assert!(
        xml.contains(&format!("<testsuite name=\"ours\" tests=\"{n}\" failures=\"0\" errors=\"0\" skipped=\"0\"")),
        "{xml}"
    );
    assert!(xml.contains(&format!("<testsuite name=\"reference\" tests=\"{n}\" failures=\"{ref_failed}\" errors=\"0\" skipped=\"{ref_skipped}\"")), "{xml}");
    assert!(
        xml.contains("<skipped message=\"unsupported: reference does not declare feature `fast-death-detection`\"/>"),
        "{xml}"
    );
    eprintln!("ours + reference + cross: {:.1}s", run.wall.as_secs_f64());
}

/// No arguments means our implementation; a filter selects assertions; the
/// closing line counts them.
#[test]
fn default_target_is_ours_and_filters_apply() {
    let run = conform(&["no-crossed-inputs"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("implementation ours = dhp-rs"), "{}", run.stdout);
    assert!(run.stdout.contains("test [core] no-crossed-inputs ... ok"), "{}", run.stdout);
    assert!(run.stdout.contains("1 passed, 0 failed, 0 errored, 0 skipped"), "{}", run.stdout);
}

#[test]
fn list_names_the_ten_first_then_the_rest() {
    let names = assertion_names();
    assert_eq!(
        &names[..10],
        [
            "no-lost-results",
            "no-crossed-inputs",
            "no-untyped-results",
            "no-silent-budget-overrun",
            "no-runner-lock-in",
            "exactly-one-wins",
            "fencing",
            "leader-election",
            "transport",
            "dead-letter-queue"
        ]
    );
    assert_eq!(catalogue("core").len(), 10);
    let cross: Vec<String> = catalogue("cross").iter().map(|a| a["id"].as_str().unwrap().to_string()).collect();
    assert_eq!(cross, ["cross-store", "cross-log", "cross-bundle"]);
}

/// `--compare` prints a Markdown table of implementations × assertions.
#[test]
fn compare_prints_a_table() {
    let run = conform(&["fast-death", "--compare", "ours", "reference"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("| assertion | level | ours | reference |"), "{}", run.stdout);
    assert!(run.stdout.contains("| fast-death-detection | extended | pass | skip |"), "{}", run.stdout);
    assert!(run.stdout.contains("| fencing | core | — | — |"), "{}", run.stdout);
}
