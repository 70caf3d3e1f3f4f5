//! failover catches a shipper that lags two checkpoints behind in
//! synchronous mode: when its host dies, two or three committed chunks
//! never reached the peer and the standby redoes them (limit 1). Needs root.

mod common;
use common::*;

#[test]
fn ship_late_mutant_loses_two_chunks_on_host_death() {
    let w = format!("{} --mode ship-late", mutant_bin().display());
    let r = run_chaos(
        "ship-late",
        &[
            "--hosts",
            "2",
            "--seed",
            "21",
            "--handoffs",
            "2",
            "--dlq-handoffs",
            "0",
            "--chunks",
            "80",
            "--workers",
            &w,
            "--nemesis",
            "host",
            "--fault-interval",
            "1.0,1.2",
            "--fault-seconds",
            "20",
            "--grace",
            "15",
            // several hosts' processes on a shared 2-core machine: a 2 s
            // lease, so load alone does not orphan live workers
            "--lease-interval",
            "0.4",
            "--lease-max-missed",
            "5",
        ],
    );
    assert_eq!(r.code, 1, "{}", r.dump());
    let v = r.violations("failover");
    assert_eq!(v.len(), 2, "one per handoff of the dead host: {v:#?}\n{}", r.dump());
    assert!(v.iter().all(|m| m.contains("checkpoints committed on the dead host never reached its peer")), "{v:#?}");
}
