//! Every assertion can fail: for each mutant of our adapter (one
//! guarantee removed), the full suite fails exactly the assertion that
//! guards that guarantee, and nothing else fails, errors or is skipped.

mod common;
use common::*;
use std::collections::BTreeSet;

/// Mutant → the assertions that must catch it (usually one; a mutant
/// removing a guarantee that two rules rely on is listed under both), from
/// the catalogue (`--list --format json`, the table of
/// docs/conformance-rules.md).
fn mutants() -> Vec<(String, BTreeSet<String>)> {
    let mut out: Vec<(String, BTreeSet<String>)> = Vec::new();
    for a in catalogue("extended") {
        let id = a["id"].as_str().unwrap().to_string();
        for m in a["mutants"].as_array().expect("mutants") {
            let m = m.as_str().unwrap();
            match out.iter_mut().find(|(n, _)| n == m) {
                Some((_, ids)) => {
                    ids.insert(id.clone());
                }
                None => out.push((m.to_string(), [id.clone()].into())),
            }
        }
    }
    out
}

/// Suites run side by side (adapter processes mostly wait on barriers,
/// leases and fsync, so 2 cores carry 4 suites).
const PARALLEL: usize = 4;

/// Failed, errored and skipped assertions of a run against `mutant`.
fn verdict(mutant: &str) -> (BTreeSet<String>, Vec<String>) {
    let run = conform(&["--impl", &mutant_adapter(mutant, ""), "--format", "json", "--level", "extended"]);
    let failed: BTreeSet<String> = run.with_outcome("failed").into_iter().collect();
    let mut other: Vec<String> = run.with_outcome("errored");
    other.extend(run.with_outcome("skipped"));
    if !failed.is_empty() {
        assert_eq!(run.code, 101, "a failing run must exit 101");
    }
    (failed, other)
}

#[test]
fn every_assertion_has_a_mutant() {
    let mutants = mutants();
    let guarded: BTreeSet<&str> = mutants.iter().flat_map(|(_, a)| a.iter().map(String::as_str)).collect();
    let names = assertion_names();
    for n in &names {
        assert!(guarded.contains(n.as_str()), "no mutant is caught by {n}");
    }
    let listed =
        std::process::Command::new(env!("CARGO_BIN_EXE_dhp-mutant-adapter")).arg("--list-mutants").output().unwrap();
    let listed: BTreeSet<String> =
        String::from_utf8_lossy(&listed.stdout).lines().map(|l| l.split('\t').next().unwrap().to_string()).collect();
    let tested: BTreeSet<String> = mutants.iter().map(|(m, _)| m.clone()).collect();
    assert_eq!(listed, tested, "every mutant of the adapter is tested");
}

#[test]
fn each_mutant_fails_exactly_its_assertion() {
    let mutants = mutants();
    let queue = std::sync::Mutex::new(mutants.iter());
    let results = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..PARALLEL {
            s.spawn(|| loop {
                let Some((mutant, want)) = queue.lock().unwrap().next() else { break };
                let v = verdict(mutant);
                results.lock().unwrap().push((mutant.as_str(), want, v));
            });
        }
    });
    let mut wrong = Vec::new();
    for (mutant, want, (failed, other)) in results.into_inner().unwrap() {
        let expected = want;
        if failed == *expected && other.is_empty() {
            continue;
        }
        // Four suites share two cores: a timing-sensitive assertion may
        // lose a race with the scheduler. Judge a mismatch again alone.
        eprintln!("{mutant}: failed {failed:?}, errored/skipped {other:?} under load; judging it again alone");
        let (failed, other) = verdict(mutant);
        if failed != *expected || !other.is_empty() {
            wrong.push(format!("{mutant}: want only {want:?} failed; failed {failed:?}, errored/skipped {other:?}"));
        }
    }
    assert!(wrong.is_empty(), "mutants not caught exactly:\n{}", wrong.join("\n"));
}
