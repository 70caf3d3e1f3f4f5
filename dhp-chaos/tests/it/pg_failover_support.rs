//! Shared by the `pg_failover_*` scenarios: the round's arguments, and the
//! acknowledged checkpoints a failover lost, recomputed from the history
//! alone (not from the checker), so the tests do not trust what they test.
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;

/// A short seeded PostgreSQL round on the replicated cluster with only
/// `db-failover` / `db-switchover` faults (one every 2.5-3.5 s of the fault phase; a rebuild of
/// the standbys can take seconds on a loaded machine, and no failover starts
/// before the last is whole).
pub fn failover_args<'a>(replication: &'a str, seed: &'a str, fault_seconds: &'a str, faults: &'a str) -> Vec<&'a str> {
    vec![
        // not coverage tests: what the rounds reached is beside the point
        "--allow-uncovered",
        "all",
        "--store",
        "postgres",
        "--pg-cluster",
        replication,
        "--seed",
        seed,
        "--handoffs",
        "3",
        "--dlq-handoffs",
        "0",
        // enough work to last the fault phase on a loaded machine
        "--chunks",
        "400",
        "--fault-seconds",
        fault_seconds,
        "--fault-interval",
        "2.5,3.5",
        "--faults",
        faults,
        "--failpoint-rate",
        "0",
        "--faults-after-checkpoints",
        "10",
    ]
}

/// Every event of the round's history.
pub fn history(round: &Path) -> Vec<Value> {
    crate::common::history_text(&round.join("history.jsonl"))
        .expect("history.jsonl")
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// (hid, seq) of every checkpoint a worker was told committed before a
/// primary crashed that the standby promoted next did not hold (the
/// harness's `db-failover-snapshot`, read before promotion).
pub fn lost_by_history(round: &Path) -> BTreeSet<(String, i64)> {
    let h = history(round);
    let mut lost = BTreeSet::new();
    for crash in h.iter().filter(|e| e["what"] == "db-primary-crashed") {
        let id = &crash["fault_id"];
        let t = crash["t"].as_f64().unwrap();
        let snap = h
            .iter()
            .find(|e| e["what"] == "db-failover-snapshot" && &e["fault_id"] == id)
            .expect("a snapshot of the promoted standby for every crash");
        for ack in h.iter().filter(|e| e["op"] == "checkpoint" && e["type"] == "ok" && e["t"].as_f64() < Some(t)) {
            let (hid, seq) = (ack["hid"].as_str().unwrap(), ack["seq"].as_i64().unwrap());
            let held = snap["max_seq"][hid].as_i64().unwrap_or(-1);
            if seq > held {
                lost.insert((hid.to_string(), seq));
            }
        }
    }
    lost
}

/// The number of the db-failover faults (switchovers included), and `failover_s` of each promotion.
pub fn failovers(round: &Path) -> (usize, Vec<f64>) {
    let h = history(round);
    let n = h.iter().filter(|e| e["op"] == "fault" && e["kind"] == "db-failover").count();
    let times = h.iter().filter(|e| e["what"] == "db-promoted").filter_map(|e| e["failover_s"].as_f64()).collect();
    (n, times)
}

/// How many of the round's failovers were planned (switchovers).
pub fn planned(round: &Path) -> usize {
    history(round).iter().filter(|e| e["op"] == "fault" && e["kind"] == "db-failover" && e["planned"] == true).count()
}
