//! A nightly run with stdout piped (as in CI): the round table is printed
//! once, and `analyze` accepts the run directory although the passing
//! rounds were pruned down to their reports.
use crate::common::*;

#[test]
fn a_nightly_prints_its_table_once_and_its_pruned_dir_analyzes() {
    let r = run_chaos(
        "nightly",
        &[
            // not a coverage test: what the round reached is beside the point
            "--allow-uncovered",
            "all",
            "--nightly",
            "--budget-minutes",
            "0",
            "--seed",
            "8080",
            "--handoffs",
            "2",
            "--chunks",
            "60",
            "--dlq-handoffs",
            "0",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.dump());
    let headers = r.stdout.lines().filter(|l| l.trim_start().starts_with("round") && l.contains("invariants")).count();
    assert_eq!(headers, 1, "the table header once:\n{}", r.stdout);
    let round = r.out.join("round-0000");
    assert!(round.join("round-report.json").exists() && !round.join("history.jsonl").exists(), "pruned");
    let rows = r.stdout.lines().filter(|l| l.contains(" 8080 ") && l.contains("HELD")).count();
    assert_eq!(rows, 1, "one row for the one round:\n{}", r.stdout);
    let (code, out) = analyze(&r.out);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("pruned") && out.contains("round-0000"), "{out}");
    assert!(out.contains("HELD"), "{out}");
}
