//! Host death (needs root: CI runs as root): the only fault is one host
//! dying — every process SIGKILLed at once. A standby takes its address,
//! ingests what the host had shipped to its peer, and resumes its
//! handoffs from the last shipped checkpoint; every invariant holds on
//! every host and on the standby, and failover was checked.
use crate::common::*;

#[test]
fn a_dead_host_is_taken_over_by_a_standby_from_the_shipped_log() {
    let round = hosts::Hosts {
        hosts: 2,
        seed: 21,
        chunks: 60,
        nemesis: "host",
        // the death comes once workers have shipped a few checkpoints
        fault_interval: "1.0,1.2",
    };
    let r = hosts::run_hosts("host-death", &round, &[]);
    assert_eq!(r.code, 0, "{}", r.dump());
    let rounds = r.results["rounds"].as_array().expect("rounds");
    assert_eq!(rounds.len(), 3, "two hosts and the standby\n{}", r.dump());
    let standby: Vec<_> = rounds.iter().filter(|x| x["standby"] == true).collect();
    assert_eq!(standby.len(), 1, "{}", r.dump());
    assert_eq!(standby[0]["completed"], 2, "the standby finished the dead host's handoffs\n{}", r.dump());
    assert_eq!(r.checked("failover"), 2, "{}", r.dump());
    assert_eq!(r.totals()["faults_by_kind"]["host-death"], 1, "{}", r.dump());
    let (code, out) = analyze(&r.out);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("s "), "the standby's line: {out}");
}
