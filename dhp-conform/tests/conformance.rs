//! The unbroken implementations — ours and the Python reference — pass
//! everything they support, each way round across implementations; and the
//! runner's outputs (list, filter, JSON, JUnit, compare table) hold up.

mod common;
use common::*;

/// Ours and the reference in one run: both suites plus the cross level
/// both ways, with a JUnit report.
#[test]
fn ours_and_reference_pass_and_continue_each_other() {
    let junit = tempfile::NamedTempFile::new().unwrap();
    let path = junit.path().to_string_lossy().into_owned();
    let run = conform(&["--impl", "ours", "--impl", "reference", "--format", "json", "--junit", &path]);
    let outcomes = run.outcomes();
    let names = assertion_names();
    assert_eq!(names.len(), 29, "{names:?}");
    for name in &names {
        let ours = &outcomes[&("ours".to_string(), name.clone())];
        assert_eq!(ours.0, "passed", "ours: {name}: {}", ours.1);
        let reference = &outcomes[&("reference".to_string(), name.clone())];
        if name == "fast-death-detection" {
            assert_eq!(reference.0, "skipped", "{reference:?}");
            assert!(reference.1.contains("unsupported"), "{reference:?}");
        } else {
            assert_eq!(reference.0, "passed", "reference: {name}: {}", reference.1);
        }
    }
    for pair in ["ours->reference", "reference->ours"] {
        for x in ["cross-store", "cross-log", "cross-bundle"] {
            let o = &outcomes[&(pair.to_string(), x.to_string())];
            assert_eq!(o.0, "passed", "{x} {pair}: {}", o.1);
        }
    }
    let s = run.summary();
    assert_eq!((s["passed"].as_u64(), s["failed"].as_u64(), s["errored"].as_u64(), s["skipped"].as_u64()), (Some(63), Some(0), Some(0), Some(1)), "{s}");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.contains("63 passed, 0 failed, 0 errored, 1 skipped"), "{}", run.stderr);
    let xml = std::fs::read_to_string(&path).unwrap();
    assert!(xml.contains("<testsuite name=\"ours\" tests=\"29\" failures=\"0\" errors=\"0\" skipped=\"0\""), "{xml}");
    assert!(xml.contains("<testsuite name=\"reference\" tests=\"29\" failures=\"0\" errors=\"0\" skipped=\"1\""), "{xml}");
    assert!(xml.contains("<skipped message=\"unsupported: reference does not declare feature `fast-death-detection`\"/>"), "{xml}");
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
