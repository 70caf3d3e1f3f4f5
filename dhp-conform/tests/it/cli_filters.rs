//! Several positional FILTERs run the assertions matching any of them (a
//! person naming two assertions expects both to run); one that matches
//! nothing is still a usage error, named, and nothing runs. `--list`
//! takes the same FILTERs.
use crate::common::*;
use std::collections::BTreeSet;

/// The assertions a `--format json` run reported results of.
fn ran(stdout: &str) -> BTreeSet<String> {
    stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["type"] == "dhp-conform" && v["event"] == "result")
        .map(|v| v["assertion"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn two_filters_run_both_assertions_and_a_filter_matching_nothing_is_refused() {
    let (a, b) = ("effects-first-write-wins", "capabilities-fail-closed");
    let run = conform(&["--impl", "ours", a, b, "--exact", "--format", "json"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(ran(&run.stdout), BTreeSet::from([a.to_string(), b.to_string()]), "{}", run.stdout);

    // substrings: each filter adds what it matches, nothing else runs
    let run = conform(&["--list", "--format", "json", "fencing", "transport"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let v: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let ids: Vec<&str> = v["assertions"].as_array().unwrap().iter().map(|e| e["id"].as_str().unwrap()).collect();
    assert!(ids.contains(&"fencing") && ids.contains(&"transport"), "{ids:?}");
    assert!(ids.iter().all(|i| i.contains("fencing") || i.contains("transport")), "{ids:?}");

    let run = conform(&["--impl", "ours", a, "no-such-assertion"]);
    assert_eq!(run.code, 2, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stderr.contains("\"no-such-assertion\" matches no assertion"), "{}", run.stderr);
    assert!(!run.stderr.contains(&format!("\"{a}\" matches no")), "{}", run.stderr);
    assert!(ran(&run.stdout).is_empty(), "nothing may run:\n{}", run.stdout);
}
