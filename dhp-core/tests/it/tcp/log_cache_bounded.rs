//! The server's per-handoff state is bounded: after 2,500 handoffs each
//! shipped and closed, far fewer than 2,500 stay in memory, and a handoff
//! dropped from memory is re-read from its log on the next hello (its
//! ack_seq and its logged hashes still hold).
use crate::tcp_support::*;
use dhp_core::transport::net::{self, ServerConfig};
use dhp_core::Config;
use serde_json::json;
use std::time::Duration;

#[test]
fn unused_handoff_state_is_evicted_and_reloaded() {
    let tmp = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let listener = rt.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let cfg = ServerConfig {
        logdir: tmp.path().join("logs"),
        token: TOKEN.into(),
        cfg: Config::default(),
        idle_timeout: Duration::from_secs(60),
        fsync: true,
        tls: None,
    };
    let server = rt.spawn(net::run(listener, cfg, async move {
        let _ = stop_rx.await;
    }));

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

    let _ = stop_tx.send(());
    let stats = rt.block_on(server).unwrap().unwrap();
    assert!(stats.logs_cached <= 1024, "{stats:?}");
    assert!(stats.logs_evicted >= 2500 - 1024, "{stats:?}");
    assert_eq!(stats.checkpoints_appended, 5001, "{stats:?}");
}
