//! The net-chaos scenario fails when the peer breaks the promise: behind the
//! relay, adapters/dhp-rs-chaos/src/bin/mutant-transport.rs acknowledges every checkpoint but
//! never writes seq 2 mod 4. Our worker goes on after each ack (synchronous
//! shipping), so seq 2 of every handoff is missing on the peer.
use crate::common::*;

#[test]
fn a_peer_that_acks_then_drops_fails_the_scenario() {
    let t = mutant("mutant-transport").display().to_string();
    let t = t.as_str();
    let r = run_chaos("netchaos-mutant", &["--scenario", "net-chaos", "--seed", "17", "--transport", t]);
    assert_eq!(r.code, 1, "{}", r.dump());
    let nc = &r.results["net_chaos"];
    assert_eq!((nc["committed"].as_u64(), nc["landed"].as_u64()), (Some(24), Some(20)), "{nc:#}");
    for x in nc["per_round"].as_array().expect("per_round") {
        assert_eq!(x["missing"], serde_json::json!([2]), "{x:#}");
    }
    assert!(r.stdout.contains("20/24 checkpoints landed on the peer"), "{}", r.dump());
    assert!(r.stdout.contains("net-chaos: FAILED"), "{}", r.dump());
    let (code, out) = analyze(&r.out);
    assert_eq!(code, 1, "analyze fails it too\n{out}");
    assert!(out.contains("20/24 checkpoints landed on the peer"), "{out}");
}
