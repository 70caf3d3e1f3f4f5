//! Authentication: a hello with a wrong, missing or non-string token is
//! refused with `{"error": "bad token", "ok": false}` and the connection
//! closed, nothing is written; our shipper surfaces the refusal at once as
//! a typed transport error (not after its timeout), and `dhp work` exits
//! with the transport code. The right token works.
use crate::tcp_support::*;
use dhp_core::transport::net::{ShipMode, ShipperOptions, TcpShipper};
use dhp_core::transport::Shipper;
use dhp_core::Error;
use serde_json::json;
use std::time::{Duration, Instant};

#[test]
fn wrong_token_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let srv = Server::start(&tmp.path().join("logs"));
    let (env, hid) = envelope(10, 20);

    for hello in [
        json!({"type": "hello", "handoff_id": hid, "token": "not-the-token"}),
        json!({"type": "hello", "handoff_id": hid, "token": ""}),
        json!({"type": "hello", "handoff_id": hid}),
        json!({"type": "hello", "handoff_id": hid, "token": 12345}),
        json!({"type": "hello", "handoff_id": hid, "token": format!("{TOKEN}x")}),
    ] {
        let mut c = Raw::connect(&srv.addr());
        c.send_json(&hello);
        assert_eq!(c.recv_text(), "{\"error\": \"bad token\", \"ok\": false}\n", "{hello}");
        // Closed after the refusal: anything further goes unanswered.
        let _ = std::io::Write::write_all(&mut c.w, b"{\"type\": \"bye\"}\n");
        assert_eq!(c.recv(), None, "connection should be closed after a bad token");
    }
    assert!(!srv.log(&hid).exists(), "a refused client must not create a log");

    // Our shipper: a typed error, promptly.
    let opts = |token: &str| ShipperOptions {
        token: token.into(),
        mode: ShipMode::Sync,
        call_timeout: Duration::from_secs(20),
        ..Default::default()
    };
    let mut sh = TcpShipper::new(&srv.addr(), opts("wrong")).unwrap();
    let t0 = Instant::now();
    let e = sh.ship_envelope(&hid, &env).unwrap_err();
    assert!(
        matches!(e, Error::Transport { kind: dhp_core::TransportKind::Refused, detail: ref m, .. } if m.contains("bad token")),
        "{e:?}"
    );
    assert!(t0.elapsed() < Duration::from_secs(5), "refusal took {:?}", t0.elapsed());
    assert_eq!(e.kind(), "TransportError");
    let e = sh.ship_checkpoint(&hid, 0, &cp_line(0, &json!({"n": 0}))).unwrap_err();
    assert!(
        matches!(e, Error::Transport { kind: dhp_core::TransportKind::Refused, detail: ref m, .. } if m.contains("bad token")),
        "{e:?}"
    );
    drop(sh);
    assert!(!srv.log(&hid).exists());

    // The right token.
    let mut sh = TcpShipper::new(&srv.addr(), opts(TOKEN)).unwrap();
    sh.ship_envelope(&hid, &env).unwrap();
    sh.ship_checkpoint(&hid, 0, &cp_line(0, &json!({"n": 0}))).unwrap();
    assert_eq!(sh.acked_seq(&hid).unwrap(), 0);
    sh.close().unwrap();
    assert_eq!(log_seqs(&srv.log(&hid)), vec![0]);

    // The CLI: exit 10 (transport), TransportError on stderr.
    let root = tmp.path().join("root");
    let hid2 = census(&root, 2, 1002, 100);
    let (code, out, err) = finish(
        spawn_work(&root, "w1", &hid2, &["--ship-to", &srv.addr()], &[("DHP_TRANSPORT_TOKEN", "wrong")]),
        Duration::from_secs(30),
    );
    assert_eq!(code, 10, "{out} {err}");
    assert_eq!(out["error_kind"], "TransportError");
    assert!(err.contains("bad token"), "{err}");
    assert!(!srv.log(&hid2).exists());
}
