//! `kill-at-commit` / `pause-at-commit`: the harness SIGKILLs (SIGSTOPs) the
//! worker behind a checkpoint commit the moment its monitor sees the commit
//! in the store audit. The
//! fault record names the moment, the audit row and how long after the
//! commit it came; the coverage matrix counts it in its `at-commit` column.

use crate::common::*;

#[test]
fn kills_and_pauses_fire_at_audited_commits() {
    let r = run_chaos(
        "at-commit",
        &[
            "--seed",
            "5",
            "--handoffs",
            "2",
            "--dlq-handoffs",
            "0",
            "--chunks",
            "80",
            "--faults",
            "kill-worker=1,kill-at-commit=3,pause-at-commit=2",
            "--failpoint-rate",
            "0",
            "--allow-uncovered",
            "all",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.dump());
    let harness = std::fs::read_to_string(r.out.join("round-0000/harness.jsonl")).unwrap();
    let fired: Vec<serde_json::Value> = harness
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["op"] == "fault" && (v["kind"] == "kill-at-commit" || v["kind"] == "pause-at-commit"))
        .collect();
    for (kind, signal) in [("kill-at-commit", "KILL"), ("pause-at-commit", "STOP")] {
        assert!(
            fired.iter().any(|f| f["kind"] == kind && f["signal"] == signal),
            "no {kind} fired ({signal})\n{}",
            r.dump()
        );
    }
    let audit = dhp_chaos::audit::read_sqlite(&r.out.join("round-0000/store/dhp.sqlite3")).unwrap().unwrap();
    for f in &fired {
        let seq = f["audit_seq"].as_i64().expect("the audit row it fired at");
        let row = audit.iter().find(|e| e.seq == seq).expect("that row is in the final audit");
        match f["moment"].as_str() {
            Some("checkpoint") => {
                assert_eq!((row.table.as_str(), row.op.as_str()), ("checkpoints", "INSERT"));
                assert_eq!(row.hid.as_deref(), f["hid"].as_str(), "the victim held the checkpointed handoff");
            }
            Some("orphan") => assert_eq!((row.table.as_str(), row.op.as_str()), ("ownership", "UPDATE")),
            m => panic!("unknown moment {m:?}"),
        }
        let after = f["after_commit_s"].as_f64().unwrap();
        assert!((0.0..1.0).contains(&after), "fired {after} s after the commit");
    }
    let cells = r.totals()["coverage"]["matrix"].as_array().unwrap().clone();
    let at: u64 = cells.iter().filter(|c| c["fault"] == "at-commit").filter_map(|c| c["hits"].as_u64()).sum();
    assert!(at >= fired.len() as u64, "the matrix counts them: {cells:?}");
}
