//! Smoke test of the PostgreSQL step of the comparison (`dhp-bench pg
//! --quick`): per-operation rates, aggregates on both engines, kill →
//! orphaned, and a section that states the server's own settings and the
//! load average. Keeps the PostgreSQL rows of RESULTS.md from rotting.

use std::process::Command;

#[test]
fn quick_pg_section_runs_end_to_end() {
    let tmp = tempfile::Builder::new().prefix("pg-smoke-").tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let d = tmp.path();
    let (json, md) = (d.join("pg.json"), d.join("pg.md"));
    let dhp = dhp_testkit::dhp_bin();
    let out = Command::new(env!("CARGO_BIN_EXE_dhp-bench"))
        .args(["pg", "--quick", "--url", &dhp_testkit::pg_url()])
        .arg("--dhp")
        .arg(&dhp)
        .arg("--dir")
        .arg(d)
        .arg("--out")
        .arg(&json)
        .arg("--md")
        .arg(&md)
        .output()
        .unwrap();
    assert!(out.status.success(), "dhp-bench pg failed: {}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["server"]["fsync"], "on", "{v}");
    assert_eq!(v["server"]["synchronous_commit"], "on", "{v}");
    for a in v["aggregate"].as_array().unwrap() {
        assert!(a["sqlite"].as_f64().unwrap() > 0.0 && a["postgres"].as_f64().unwrap() > 0.0, "{a}");
    }
    assert!(v["ops"]["checkpoint"].as_f64().unwrap() > 0.0, "{v}");
    // The limit (issue 37): pgbench's two workloads beside each DHP run.
    for a in v["aggregate"].as_array().unwrap() {
        // and pgbench calling DHP's own function (issue 49), every call written
        for w in ["one_trip", "simple_update", "call_v2", "call_v2_each", "call_v2_procs", "call_v1"] {
            let run = &a["pgbench"][w];
            assert!(run["tps"].as_f64().unwrap() > 0.0 && run["transactions"].as_f64().unwrap() > 0.0, "{a}");
        }
        // every round kept beside the medians the verdicts judge
        assert_eq!(a["each_round"].as_array().map(Vec::len), Some(2), "{a}");
    }
    let md = std::fs::read_to_string(&md).unwrap();
    for want in [
        "## PostgreSQL store",
        "`fsync=on`",
        "`commit_delay=",
        "Load average",
        "| 2 |",
        "false orphans",
        "### Against the limit",
        "DHP / one-round-trip",
        "### Two limits",
        "pgbench calling `_v2`",
        "a thread each",
        "*a process each*",
        "element-wise median of 2 interleaved rounds",
        "Each round, in the order run",
    ] {
        assert!(md.contains(want), "{want:?} missing from:\n{md}");
    }
}
