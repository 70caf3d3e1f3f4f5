//! One short 3-host round (needs root: CI runs as root). Each host is a
//! network namespace with its own address, store, supervisors, workers and
//! transport server; host K ships to host K+1 over TCP; process faults and
//! partitions are injected. Every invariant must hold on every host, the
//! network invariants must have been exercised, and the namespaces must be
//! gone afterwards.
use crate::common::*;
use std::process::Command;

fn namespaces() -> String {
    let o = Command::new("ip").args(["netns", "list"]).output().expect("ip netns list");
    String::from_utf8_lossy(&o.stdout).into()
}

/// `dhpchaos-PID-…`: is the harness that made it still running?
fn harness_alive(ns: &str) -> bool {
    let pid = ns.trim_start_matches("dhpchaos-").split('-').next().unwrap_or("");
    !pid.is_empty() && std::path::Path::new(&format!("/proc/{pid}")).exists()
}

#[test]
fn three_hosts_with_partitions_hold_every_invariant() {
    // a namespace left by a harness that died (its pid does not exist): removed at start
    let stale = "dhpchaos-999999999-z-h0";
    let _ = Command::new("ip").args(["netns", "add", stale]).status();
    assert!(namespaces().contains(stale), "could not make the stale namespace (not root?)");
    let round = hosts::Hosts {
        hosts: 3,
        seed: 11,
        chunks: 60,
        nemesis: "kill,pause,failpoint,partition",
        fault_interval: "0.2,0.5",
    };
    let r = hosts::run_hosts("hosts3", &round, &[]);
    assert_eq!(r.code, 0, "{}", r.dump());
    let rounds = r.results["rounds"].as_array().expect("rounds");
    assert_eq!(rounds.len(), 3, "one report per host");
    for (k, rep) in rounds.iter().enumerate() {
        assert_eq!(rep["host"], k as u64, "{rep}");
    }
    let by_kind = &r.totals()["faults_by_kind"];
    assert!(by_kind["partition"].as_u64().unwrap_or(0) >= 1, "no partition was injected: {by_kind}\n{}", r.dump());
    // 3 hosts × 2 handoffs, every acknowledged checkpoint checked against the peer's log
    assert_eq!(r.checked("converge"), 6, "{}", r.dump());
    assert!(r.checked("sync-ack") > 0, "{}", r.dump());
    let round = r.out.join("round-0000");
    for k in 0..3 {
        let link = std::fs::read_link(round.join(format!("h{k}/peer"))).expect("peer symlink");
        assert_eq!(link.to_str(), Some(format!("../h{}/received", (k + 1) % 3).as_str()));
    }
    let svg = std::fs::read_to_string(round.join("timeline.svg")).expect("the round's hosts timeline");
    assert!(svg.contains("<title>partition "), "partitions drawn as bands across hosts");
    let net = crate::common::history_text(&round.join("net-history.jsonl")).expect("net history");
    assert!(net.contains("\"phase\":\"heal\""), "partitions heal: {net}");
    let ns = namespaces();
    assert!(!ns.contains(stale), "stale namespace not cleaned up: {ns}");
    // Only namespaces of harnesses still running may remain (another run
    // on this machine at the same time keeps its own): this run's are gone.
    let orphaned: Vec<&str> = ns.lines().filter(|l| l.starts_with("dhpchaos-") && !harness_alive(l)).collect();
    assert!(orphaned.is_empty(), "namespaces left behind: {orphaned:?}");
    // the saved run re-checks from its files alone
    let (code, out) = analyze(&r.out);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("0/h2"), "{out}");
}
