//! One short seeded chaos round on PostgreSQL: `--store postgres` starts a
//! throwaway cluster (scripts/pg.sh, as the tests do), runs the round on it,
//! exports the store, and stops the cluster; `analyze` then re-checks the
//! round from the export alone, with the same verdict.
use crate::common::*;

// Seed 4242 once looked like a zombie write: a worker SIGSTOPped right after
// sending a checkpoint read its Ok after its replacement, although the
// server had committed the row before the orphan (the checker now judges
// that by the store's commit order; adapters/dhp-rs-chaos/tests/it/checker_rules.rs).
#[test]
fn postgres_short_round_holds_and_reanalyzes_without_the_cluster() {
    let r = run_chaos(
        "pg-round",
        &[
            "--allow-uncovered",
            "all",
            "--store",
            "postgres",
            "--seed",
            "4242",
            "--handoffs",
            "3",
            "--chunks",
            "120",
            "--fault-seconds",
            "20",
        ],
    );
    assert_eq!(r.code, 0, "every invariant must hold on PostgreSQL\n{}", r.dump());
    assert!(r.stdout.contains("store postgres"), "{}", r.dump());
    assert_eq!(r.checked("outcome"), 3, "{}", r.dump());
    assert!(r.checked("checkpoints") > 0 && r.checked("fencing") > 0, "{}", r.dump());
    let t = r.totals();
    assert!(t["kills"].as_u64().unwrap_or(0) >= 5, "the injector must have killed things: {t:#}");
    assert!(t["recoveries"].as_u64().unwrap_or(0) >= 1, "no recovery happened\n{}", r.dump());
    let round = r.out.join("round-0000");
    let export = round.join("store/export.json");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&export).expect("store/export.json")).unwrap();
    assert_eq!(v["handoffs"].as_array().map(Vec::len), Some(3), "{v:#}");
    assert!(!round.join("store/dhp.sqlite3").exists(), "a PostgreSQL round has no SQLite file");
    // the harness's audit ran inside PostgreSQL's transactions and was exported with the store
    let audit = v["audit"].as_array().expect("the store audit in the export");
    assert!(audit.len() > 50, "{} audit events", audit.len());
    assert!(audit.windows(2).all(|w| w[0]["seq"].as_i64() < w[1]["seq"].as_i64()), "commit order");
    for inv in ["fencing", "one-leader", "no-silent-budget-overrun", "exactly-once"] {
        let t = &r.totals()["invariants"][inv];
        assert_eq!(t["status"], "held", "{inv}: {t:#}");
        assert!(t["sources"].as_array().unwrap().iter().any(|s| s == "store-audit"), "{inv}: {t:#}");
    }
    let meta = std::fs::read_to_string(round.join("round.json")).unwrap();
    assert!(meta.contains("\"engine\": \"postgres\"") && !meta.contains("postgres://"), "no URL (password) saved");
    // the cluster is gone now: `analyze` reads the export
    let (code, out) = analyze(&r.out);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("fencing") && out.contains("held"), "{out}");
}
