//! `--scenario net-chaos` with the reference on both ends: its worker
//! (Runner3 + `dhp.net.NetShipper`, adapters/reference/chaos/net_worker.py) shipping to its
//! own `dhp.net.TransportServer` (adapters/reference/chaos/net_peer.py, `--transport python`).
//! The reference's server takes any seq, so only the seq whose frame was in
//! flight when its worker was killed is missing — the reference's standby
//! never re-ships it: 23/24, not the 24/24 its README reports.
use crate::common::*;

#[test]
fn the_reference_on_both_ends_loses_exactly_the_frame_in_flight() {
    let py = python();
    let py = py.display().to_string();
    let args =
        ["--scenario", "net-chaos", "--seed", "17", "--workers", "python", "--transport", "python", "--python", &py];
    let r = run_chaos("netchaos-python-peer", &args);
    assert_eq!(r.code, 1, "a checkpoint missing on the peer fails the scenario\n{}", r.dump());
    let nc = &r.results["net_chaos"];
    assert!(nc["transport"].as_str().is_some_and(|t| t.contains("TransportServer")), "{nc:#}");
    for x in nc["per_round"].as_array().expect("per_round") {
        assert_eq!(x["status"], "completed", "{x:#}");
        assert!(x["rework_chunks"].as_u64().is_some_and(|n| n <= 1), "{x:#}");
        let want = if x["moment"] == "frame-in-flight" { serde_json::json!([x["seq"]]) } else { serde_json::json!([]) };
        assert_eq!(x["missing"], want, "{x:#}");
    }
    assert_eq!((nc["committed"].as_u64(), nc["landed"].as_u64()), (Some(24), Some(23)), "{nc:#}");
    assert!(r.stdout.contains("23/24 checkpoints landed on the peer"), "{}", r.dump());
}
