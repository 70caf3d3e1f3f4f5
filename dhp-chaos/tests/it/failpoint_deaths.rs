//! Workers that kill themselves at failpoints, while the injector keeps
//! picking workers to kill: every death must be in the history (an exit
//! event with its signal, and a `failpoint` fault when one fired), and no
//! orphan of such a worker may be reported as a false orphan. The injector
//! fires every 10–30 ms so that it often picks a worker that has just died
//! by its failpoint (before the fix, 3 runs of 3 lost exits).
use crate::common::*;
use serde_json::Value;
use std::collections::HashMap;

#[test]
fn every_failpoint_death_is_in_the_history() {
    let r = run_chaos(
        "failpoint-deaths",
        &[
            // not a coverage test: what the round reached is beside the point
            "--allow-uncovered",
            "all",
            "--seed",
            "3003",
            "--ship",
            "tcp",
            "--handoffs",
            "3",
            "--chunks",
            "80",
            "--dlq-handoffs",
            "0",
            "--failpoint-rate",
            "1",
            "--faults",
            "kill-worker=1",
            "--fault-interval",
            "0.01,0.03",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.dump());
    assert!(r.violations("no-false-orphans").is_empty(), "{:#?}", r.violations("no-false-orphans"));
    let text = crate::common::history_text(&r.out.join("round-0000/history.jsonl")).unwrap();
    let events: Vec<Value> = text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let chaos = |op: &'static str| events.iter().filter(move |e| e["process"] == "chaos" && e["op"] == op);
    let mut exits: HashMap<String, Vec<&Value>> = HashMap::new();
    for e in chaos("exit") {
        exits.entry(e["name"].as_str().unwrap().to_string()).or_default().push(e);
    }
    let workers: Vec<&str> =
        chaos("spawn").filter(|e| e["role"] == "worker").map(|e| e["name"].as_str().unwrap()).collect();
    assert!(workers.len() >= 6, "{workers:?}");
    for w in &workers {
        let n = exits.get(*w).map_or(0, Vec::len);
        assert_eq!(n, 1, "{w}: {n} exit events");
    }
    let fired: Vec<&Value> = chaos("exit").filter(|e| e["failpoint_fired"] == true).collect();
    assert!(fired.len() >= 3, "failpoints must have fired: {}", fired.len());
    for e in &fired {
        assert_eq!(e["signal"], 9, "{e}");
        let name = e["name"].as_str().unwrap();
        assert!(chaos("fault").any(|f| f["kind"] == "failpoint" && f["victim"] == name), "{name}: no failpoint fault");
    }
    eprintln!(
        "{} workers, {} failpoint deaths, {} worker-died orphans checked",
        workers.len(),
        fired.len(),
        r.checked("no-false-orphans")
    );
}
