//! One short PostgreSQL round whose schedule is mostly `db-link` faults: the
//! workers reach the server through the harness's link proxy, which resets,
//! blackholes, slows and cuts their connections (their liveness lock's
//! included). Every invariant must hold; the orphans a cut liveness session
//! causes are counted as the faults' cost, not as false orphans.
use crate::common::*;

#[test]
fn db_link_faults_between_workers_and_postgres_keep_every_invariant() {
    let r = run_chaos(
        "pg-link-round",
        &[
            // not a coverage test: what the round reached is beside the point
            "--allow-uncovered",
            "all",
            "--store",
            "postgres",
            // seed 7 draws a reset as its first db-link toxic and a blackhole
            // as its third, whatever the machine's speed (the toxics come
            // from the seeded schedule, not from timing)
            "--seed",
            "7",
            "--handoffs",
            "3",
            "--dlq-handoffs",
            "0",
            "--chunks",
            "120",
            "--fault-seconds",
            "15",
            "--faults",
            "db-link=3,kill-worker=1",
            // faults start once work is under way, however loaded the machine
            "--faults-after-checkpoints",
            "10",
        ],
    );
    assert_eq!(r.code, 0, "every invariant must hold under db-link faults\n{}", r.dump());
    let round = &r.results["rounds"][0];
    assert!(
        round["faults_by_kind"]["db-link"].as_u64().unwrap_or(0) >= 3,
        "{:#}\n{}",
        round["faults_by_kind"],
        r.dump()
    );
    let hist = crate::common::history_text(&r.out.join("round-0000/history.jsonl")).unwrap();
    let faults: Vec<serde_json::Value> = hist
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|e| e["op"] == "fault" && e["kind"] == "db-link")
        .collect();
    let toxics: Vec<&str> = faults.iter().filter_map(|f| f["toxic"]["toxic"].as_str()).collect();
    assert!(toxics.contains(&"reset"), "no reset among {toxics:?}");
    assert!(toxics.contains(&"blackhole") || toxics.contains(&"latency"), "no blackhole or latency among {toxics:?}");
    for f in &faults {
        assert_eq!(f["victim"], "db-link", "{f}");
    }
    // the workers' connections really ran through the proxy
    assert!(hist.contains(r#""name":"db-proxy""#), "the database proxy's start is recorded");
    assert!(
        faults.iter().any(|f| f["connections"].as_u64().unwrap_or(0) > 0),
        "no db-link fault found a connection open through the proxy: {faults:#?}"
    );
    assert!(hist.matches(r#""op":"link-heal""#).count() >= faults.len().saturating_sub(1), "toxics are healed");
    assert_eq!(r.checked("outcome"), 3, "{}", r.dump());
    assert!(r.stdout.contains("db-link:"), "the report counts the faults' cost\n{}", r.dump());
    // re-checked from the files (the cluster is gone): the same verdict
    let (code, out) = analyze(&r.out);
    assert_eq!(code, 0, "{out}");
}
