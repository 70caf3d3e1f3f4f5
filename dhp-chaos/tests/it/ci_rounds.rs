//! The short seeded rounds CI runs: one against this repository's worker
//! and supervisor (file and TCP shipping), one against the Python reference
//! (python workers + python supervisors), and one mixing both on one store.
use crate::common::*;

/// The `model` invariant judged the whole audit and found no illegal step.
fn assert_model_held(r: &Run) {
    assert_model_no_violation(r);
    let m = &r.totals()["invariants"]["model"];
    assert_eq!(m["status"], "held", "{m:#}\n{}", r.dump());
}

/// No step `model` could not explain; a reference worker's check-then-write
/// steps, where the harness cannot rule the weakness out, are filed known.
fn assert_model_no_violation(r: &Run) {
    assert!(r.violations("model").is_empty(), "model violated\n{}", r.dump());
    assert!(r.checked("model") > 0, "model judged nothing\n{}", r.dump());
}

fn assert_exercised(r: &Run, handoffs: u64) {
    assert_eq!(r.checked("outcome"), handoffs, "{}", r.dump());
    assert!(r.checked("checkpoints") > 0 && r.checked("fencing") > 0, "{}", r.dump());
    assert_eq!(r.checked("transport"), handoffs, "{}", r.dump());
    assert!(r.totals()["recoveries"].as_u64().unwrap_or(0) >= 1, "no recovery happened\n{}", r.dump());
}

#[test]
fn ours_short_round_holds_and_reanalyzes() {
    let r = run_chaos("ours", &["--allow-uncovered", "all", "--seed", "4242", "--handoffs", "4", "--chunks", "150"]);
    assert_eq!(r.code, 0, "every invariant must hold for dhp-core\n{}", r.dump());
    assert_exercised(&r, 4);
    assert_model_held(&r);
    let t = r.totals();
    assert!(t["kills"].as_u64().unwrap_or(0) >= 10, "the injector must have killed things: {t:#}");
    assert!(t["detection_worker_kill"]["n"].as_u64().unwrap_or(0) >= 3, "detection latency sampled: {t:#}");
    let round = r.out.join("round-0000");
    for f in ["history.jsonl", "round.json", "round-report.json", "timeline.svg", "store/dhp.sqlite3"] {
        assert!(round.join(f).exists(), "{f} missing in the run directory");
    }
    assert!(std::fs::read_dir(round.join("procs")).unwrap().count() >= 6, "per-process logs");
    // `analyze` re-checks the saved run from its files alone, with the same verdict
    let (code, out) = analyze(&r.out);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("fencing") && out.contains("held"), "{out}");
}

#[test]
fn ours_tcp_shipping_round_holds() {
    let r = run_chaos(
        "ours-tcp",
        &["--allow-uncovered", "all", "--seed", "5151", "--handoffs", "3", "--chunks", "100", "--ship", "tcp"],
    );
    assert_eq!(r.code, 0, "{}", r.dump());
    assert_exercised(&r, 3);
    assert_model_held(&r);
    assert!(r.out.join("round-0000/peer").read_dir().map(|d| d.count()).unwrap_or(0) >= 3, "the peer's logs");
}

#[test]
fn reference_round_has_no_unexplained_violation() {
    let py = python();
    let py = py.display().to_string();
    let r = run_chaos(
        "reference",
        &[
            // not a coverage test (coverage_*.rs are)
            "--allow-uncovered",
            "all",
            "--seed",
            "6161",
            "--workers",
            "python",
            "--supervisors",
            "python",
            "--python",
            &py,
            "--handoffs",
            "3",
            "--base",
            "200000",
            "--chunks",
            "250",
        ],
    );
    assert!(r.code == 0 || r.code == 1, "harness error against the reference\n{}", r.dump());
    assert_eq!(
        r.totals()["unexplained"].as_u64(),
        Some(0),
        "the reference broke an invariant in a way no documented weakness explains\n{}",
        r.dump()
    );
    if r.code == 1 {
        eprintln!("reference round hit known reference weaknesses:\n{}", r.stdout);
    }
    assert_exercised(&r, 3);
    assert_model_no_violation(&r);
    assert!(r.totals()["kills_by_role"]["worker"].as_u64().unwrap_or(0) >= 2, "worker kills expected\n{}", r.dump());
}

#[test]
fn mixed_workers_under_python_supervisors_hold() {
    // Rust and Python workers recover each other's handoffs on one store,
    // watched by the reference's supervisors.
    let py = python();
    let py = py.display().to_string();
    let r = run_chaos(
        "mixed",
        &[
            // not a coverage test (coverage_*.rs are)
            "--allow-uncovered",
            "all",
            "--seed",
            "7171",
            "--workers",
            "mixed",
            "--supervisors",
            "python",
            "--python",
            &py,
            "--handoffs",
            "3",
            "--base",
            "300000",
            "--chunks",
            "150",
        ],
    );
    assert!(r.code == 0 || r.code == 1, "{}", r.dump());
    assert_eq!(r.totals()["unexplained"].as_u64(), Some(0), "{}", r.dump());
    assert_exercised(&r, 3);
    assert_model_no_violation(&r);
}
