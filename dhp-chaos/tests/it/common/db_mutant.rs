//! The round the database-fault mutant tests run: PostgreSQL owned by the
//! run, two handoffs whose workers are all `mutant-worker --mode MODE` (or
//! any `--workers`), and one database crash as the only fault; and the
//! verdict check they share.

use super::{mutant_bin, run_chaos, Run};
use std::collections::BTreeSet;

/// Run the round with `extra` flags (seed, sizes, timings: flags the base
/// set does not give, since a flag may be given once). Faults start once
/// work is under way, however loaded the machine (`extra` names the
/// checkpoint count with `--faults-after-checkpoints`).
pub fn db_mutant_round(name: &str, mode: &str, extra: &[&str]) -> Run {
    db_crash_round(name, &format!("{} --mode {mode}", mutant_bin().display()), extra)
}

/// The same round with any `--workers` (`builtin`: the control that shows
/// a round's flags alone do not fail it).
pub fn db_crash_round(name: &str, workers: &str, extra: &[&str]) -> Run {
    let mut args = vec![
        // not a coverage round (coverage_*.rs test what a round reaches)
        "--allow-uncovered",
        "all",
        "--store",
        "postgres",
        "--handoffs",
        "2",
        "--dlq-handoffs",
        "0",
        "--fault-interval",
        "2,3",
        "--faults",
        "db-crash=1",
        "--failpoint-rate",
        "0",
        "--workers",
        workers,
    ];
    args.extend_from_slice(extra);
    run_chaos(name, &args)
}

/// Invariants that did not hold, over all rounds.
pub fn failed_invariants(r: &Run) -> BTreeSet<String> {
    let inv = r.totals()["invariants"].as_object().cloned().unwrap_or_default();
    inv.into_iter().filter(|(_, v)| v["held"] == false).map(|(k, _)| k).collect()
}

/// The run exited 1, `caught_by` has violations, every invariant of
/// `expected` (which includes `caught_by`) failed, and nothing else did but
/// what `may_also_fail` allows (a consequence that depends on timing): a
/// mutant must be caught by the rule written for it, not by accident
/// elsewhere. Returns `caught_by`'s violation messages.
pub fn assert_caught(r: &Run, caught_by: &str, expected: &[&str], may_also_fail: &[&str]) -> Vec<String> {
    assert_eq!(r.code, 1, "{}", r.dump());
    let v = r.violations(caught_by);
    assert!(!v.is_empty(), "{caught_by} caught nothing\n{}", r.dump());
    assert!(expected.contains(&caught_by), "the expected set must include {caught_by}");
    let failed = failed_invariants(r);
    let missing: Vec<_> = expected.iter().filter(|e| !failed.contains(**e)).collect();
    assert!(missing.is_empty(), "expected to fail but held: {missing:?}\n{}", r.dump());
    let extra: Vec<_> =
        failed.iter().filter(|f| !expected.contains(&f.as_str()) && !may_also_fail.contains(&f.as_str())).collect();
    assert!(extra.is_empty(), "failed, unexpectedly: {extra:?}\n{}", r.dump());
    v
}

/// The wedge round (`db_mutant_wedge.rs`, and its control with the real
/// worker, `db_wedge_builtin_holds.rs`). The lease (1.5 s × 10) outlasts
/// the outage (seeded 0.3–2 s, but restarts took up to 7 s on a loaded
/// machine), so only what a worker does after the error decides whether its
/// handoff stays held. The workers are lease-only (`--no-liveness` for the
/// builtin ones; the wedge mutant publishes no token): a token's lock drops
/// with the crash and the leader orphans its holder at once, which would
/// free a wedged worker's handoff too.
pub const WEDGE_FLAGS: [&str; 15] = [
    "--seed",
    "22",
    "--chunks",
    "150",
    "--fault-seconds",
    "6",
    "--grace",
    "30",
    "--faults-after-checkpoints",
    "6",
    "--lease-interval",
    "1.5",
    "--lease-max-missed",
    "10",
    "--no-liveness",
];
