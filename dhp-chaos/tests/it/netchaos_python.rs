//! `--scenario net-chaos` with the reference's worker (dhp-protocol 1.3.0:
//! Runner3 with `dhp.net.NetShipper`, adapters/reference/chaos/net_worker.py) against our
//! `dhp transport` peer. The reference commits, then ships, and a worker
//! that takes a handoff over does not re-ship what the peer lacks: in the
//! round whose victim is killed with its frame in flight, the peer never
//! gets that seq (k). Our server refuses the next seq as a gap, so the
//! standby's ship of k+1 fails after NetShipper's three tries and the
//! reference's worker dies with k+1 committed; every standby after it does
//! the same, so seqs k..=5 are missing. The scenario reports it and fails;
//! every other round lands 6/6, and no kill costs more than one chunk.
use crate::common::*;

#[test]
fn the_reference_loses_the_checkpoint_whose_frame_was_in_flight() {
    let py = python();
    let py = py.display().to_string();
    let r = run_chaos(
        "netchaos-python",
        &["--scenario", "net-chaos", "--seed", "17", "--workers", "python", "--python", &py],
    );
    assert_eq!(r.code, 1, "a checkpoint missing on the peer fails the scenario\n{}", r.dump());
    let nc = &r.results["net_chaos"];
    let rounds = nc["per_round"].as_array().expect("per_round");
    assert_eq!(rounds.len(), 4, "{}", r.dump());
    for x in rounds {
        assert_eq!(x["killed"], true, "{x:#}");
        assert_eq!(x["status"], "completed", "the standby finished it: {x:#}");
        assert!(x["rework_chunks"].as_u64().is_some_and(|n| n <= 1), "{x:#}");
        if x["moment"] == "frame-in-flight" {
            let k = x["seq"].as_i64().expect("seq");
            let lost: Vec<i64> = (k..6).collect();
            assert_eq!(x["missing"], serde_json::json!(lost), "the held seq and every one after it: {x:#}");
        } else {
            assert_eq!(x["missing"], serde_json::json!([]), "nothing else is lost: {x:#}");
        }
    }
    assert_eq!(nc["committed"].as_u64(), Some(24), "{nc:#}");
    let landed = nc["landed"].as_u64().expect("landed");
    assert!((19..=23).contains(&landed), "{nc:#}");
    assert!(r.stdout.contains(&format!("{landed}/24 checkpoints landed on the peer")), "{}", r.dump());
    assert!(r.stdout.contains("committed but not on the peer"), "{}", r.dump());
}
