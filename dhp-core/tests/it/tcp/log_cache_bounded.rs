//! The server's per-handoff state is bounded: after 2,500 handoffs each
//! shipped and closed, far fewer than 2,500 stay in memory, and a handoff
//! dropped from memory is re-read from its log on the next hello (its
//! ack_seq and its logged hashes still hold).
use crate::tcp_support::*;
use serde_json::json;

#[test]
fn unused_handoff_state_is_evicted_and_reloaded() {
    let srv = InProcess::start(true);
    let addr = srv.addr.clone();

    let ship = |k: u64| {
        let (env, hid) = envelope(10_000 + k, 20_000);
        let mut c = Raw::connect(&addr);
        assert_eq!(c.hello(&hid, TOKEN)["ok"], true);
        assert_eq!(c.rpc(&json!({"type": "envelope", "envelope": env})), json!({"ok": true}));
        for s in 0..2 {
            assert_eq!(c.rpc(&cp_frame(s, &json!({"k": k, "s": s}))), json!({"ok": true, "seq": s}));
        }
        hid
    };
    let first = ship(0);
    for k in 1..2500 {
        ship(k);
    }
    // The first handoff was long evicted: its state comes back from disk.
    let mut c = Raw::connect(&addr);
    assert_eq!(c.hello(&first, TOKEN), json!({"ok": true, "ack_seq": 1}));
    assert_eq!(c.rpc(&cp_frame(1, &json!({"k": 0, "s": 1}))), json!({"ok": true, "seq": 1}));
    assert_eq!(c.rpc(&cp_frame(1, &json!({"k": 0, "s": "forked"})))["expect_seq"], 2);
    assert_eq!(c.rpc(&cp_frame(2, &json!({"k": 0, "s": 2}))), json!({"ok": true, "seq": 2}));
    drop(c);

    let stats = srv.stop();
    assert!(stats.logs_cached <= 1024, "{stats:?}");
    assert!(stats.logs_evicted >= 2500 - 1024, "{stats:?}");
    assert_eq!(stats.checkpoints_appended, 5001, "{stats:?}");
}
