//! The mutant catalogue and the verdict on each mutant, shared by the
//! SQLite (mutants.rs) and PostgreSQL (pg_mutants.rs) runs.

use super::{catalogue, conform, mutant_adapter};
use std::collections::BTreeSet;

/// Mutant → the assertions that must catch it (usually one; a mutant
/// removing a guarantee that two rules rely on is listed under both), from
/// the catalogue (`--list --format json`, the table of
/// docs/conformance-rules.md).
pub fn mutants() -> Vec<(String, BTreeSet<String>)> {
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

/// Mutants no fixed assertion catches, made to show that `--explore` does
/// (tests/it/explore.rs checks that it does, and shrinks each).
pub const EXPLORE_ONLY: &[&str] = &["redispatch-requeues-terminal"];

/// Mutants that break a rule only the SQLite store has (its journal mode):
/// on PostgreSQL they are the real adapter, so a `--store postgres://…`
/// run leaves them out.
pub const SQLITE_ONLY: &[&str] = &["journal-delete"];

/// Suites run side by side (adapter processes mostly wait on barriers,
/// leases and fsync, so 2 cores carry 4 suites).
const PARALLEL: usize = 4;

/// Failed, errored and skipped assertions of an extended run against
/// `mutant`, with `extra` arguments (e.g. `--store URL`).
fn verdict(mutant: &str, extra: &[&str]) -> (BTreeSet<String>, Vec<String>) {
    let adapter = mutant_adapter(mutant, "");
    let mut args = vec!["--impl", adapter.as_str(), "--format", "json", "--level", "extended"];
    args.extend_from_slice(extra);
    let run = conform(&args);
    let failed: BTreeSet<String> = run.with_outcome("failed").into_iter().collect();
    let mut other: Vec<String> = run.with_outcome("errored");
    other.extend(run.with_outcome("skipped"));
    if !failed.is_empty() {
        assert_eq!(run.code, 1, "a failing run must exit 1");
    }
    (failed, other)
}

/// Run the suite against every mutant (with `extra` arguments) and assert
/// that each fails exactly the assertions that guard its guarantee, and
/// nothing else fails, errors or is skipped.
pub fn assert_each_mutant_fails_exactly_its_assertion(extra: &[&str]) {
    let on_postgres = extra.iter().any(|a| a.starts_with("postgres://"));
    let mutants: Vec<_> =
        mutants().into_iter().filter(|(m, _)| !(on_postgres && SQLITE_ONLY.contains(&m.as_str()))).collect();
    let queue = std::sync::Mutex::new(mutants.iter());
    let results = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..PARALLEL {
            s.spawn(|| loop {
                let Some((mutant, want)) = queue.lock().unwrap().next() else { break };
                let v = verdict(mutant, extra);
                results.lock().unwrap().push((mutant.as_str(), want, v));
            });
        }
    });
    let mut wrong = Vec::new();
    for (mutant, want, (failed, other)) in results.into_inner().unwrap() {
        if failed == *want && other.is_empty() {
            continue;
        }
        // Four suites share two cores: a timing-sensitive assertion may
        // lose a race with the scheduler. Judge a mismatch again alone.
        eprintln!("{mutant}: failed {failed:?}, errored/skipped {other:?} under load; judging it again alone");
        let (failed, other) = verdict(mutant, extra);
        if failed != *want || !other.is_empty() {
            wrong.push(format!("{mutant}: want only {want:?} failed; failed {failed:?}, errored/skipped {other:?}"));
        }
    }
    assert!(wrong.is_empty(), "mutants not caught exactly:\n{}", wrong.join("\n"));
}
