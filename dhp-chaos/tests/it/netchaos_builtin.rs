//! `--scenario net-chaos` with our worker (`dhp work`, synchronous TCP
//! shipping): four rounds, each worker SIGKILLed mid-ship (between two
//! ships, with a frame in flight, with an ack in flight) and finished by a
//! standby. Every one of the 24 checkpoints must land on the peer, with no
//! more than one chunk of rework per kill — the reference README's claim.
use crate::common::*;
use serde_json::Value;

#[test]
fn every_checkpoint_lands_on_the_peer_with_our_worker() {
    let r = run_chaos("netchaos-builtin", &["--scenario", "net-chaos", "--seed", "17"]);
    assert_eq!(r.code, 0, "{}", r.dump());
    assert!(r.stdout.contains("seed 17"), "the seed is printed\n{}", r.dump());
    assert!(r.stdout.contains("24/24 checkpoints landed on the peer"), "{}", r.dump());
    let nc = &r.results["net_chaos"];
    assert_eq!((nc["committed"].as_u64(), nc["landed"].as_u64()), (Some(24), Some(24)), "{nc:#}");
    let rounds = nc["per_round"].as_array().expect("per_round");
    assert_eq!(rounds.len(), 4);
    for x in rounds {
        assert_eq!(x["killed"], true, "every round's worker was killed: {x:#}");
        assert_eq!(x["status"], "completed", "{x:#}");
        assert!(x["rework_chunks"].as_u64().is_some_and(|n| n <= 1), "{x:#}");
        assert!(!x["standbys"].as_array().is_none_or(|s| s.is_empty()), "a standby finished it: {x:#}");
    }
    // the seeded plan puts each moment into one of the first three rounds
    for m in ["between-ships", "frame-in-flight", "ack-in-flight"] {
        assert!(rounds.iter().any(|x| x["moment"] == m), "{m} is planned: {nc:#}");
    }
    // the held frame never reached the peer from the victim: the standby's
    // catch-up shipped that seq, on a connection of its own
    let held = rounds.iter().find(|x| x["moment"] == "frame-in-flight").expect("a frame-in-flight round");
    let round_dir = r.out.join("round-0000");
    let faults = fault_records(&round_dir);
    let victim_conn = faults
        .iter()
        .find(|f| f["victim"] == held["victim"])
        .and_then(|f| f["relay_conn"].as_u64())
        .expect("the kill names the held connection");
    let proxy = std::fs::read_to_string(round_dir.join("proxy.jsonl")).expect("the relay's record");
    let sent: Vec<Value> = proxy
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["event"] == "sent" && v["hid"] == held["hid"] && v["seq"] == held["seq"])
        .collect();
    assert!(!sent.is_empty(), "the held seq was shipped again: {held:#}");
    assert!(sent.iter().all(|v| v["conn"].as_u64() != Some(victim_conn)), "never by the victim: {sent:#?}");
    // `analyze` rebuilds the same verdict from the saved files
    let (code, out) = analyze(&r.out);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("24/24 checkpoints landed on the peer"), "{out}");
}

fn fault_records(dir: &std::path::Path) -> Vec<Value> {
    crate::common::history_text(&dir.join("history.jsonl"))
        .expect("history")
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["op"] == "fault" && v["kind"] == "kill-worker")
        .collect()
}
