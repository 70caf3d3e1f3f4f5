//! Garbage on the wire: before the hello, anything but a hello is refused
//! and the connection closed; after it, each bad frame (not JSON, invalid
//! UTF-8, not an object, unknown type, malformed checkpoint fields) gets
//! its own error reply and the connection goes on; a client that keeps
//! sending garbage is cut off. The log holds only good lines and the
//! server keeps serving everyone else.
use crate::tcp_support::*;
use dhp_core::transport::net::{ShipMode, ShipperOptions, TcpShipper};
use dhp_core::transport::Shipper;
use serde_json::{json, Value};
use std::time::Duration;

fn refused(v: &Value) -> bool {
    v["ok"] == false && v["error"].is_string()
}

#[test]
fn garbage_frames_are_answered_not_fatal() {
    let tmp = tempfile::tempdir().unwrap();
    let srv = Server::start(&tmp.path().join("logs"));
    let (env, hid) = envelope(5, 6);

    // Before the hello: refuse and close.
    for first in [
        &b"\x00\xff\xfegarbage\n"[..],
        b"not json at all\n",
        b"[1, 2, 3]\n",
        b"{\"type\": \"checkpoint\", \"seq\": 0}\n",
        b"{\"handoff_id\": \"abc\", \"token\": \"tcp-test-token\", \"type\": \"hello\"}\n",
        b"{\"type\": \"hello\", \"handoff_id\": \"../../etc/passwd\", \"token\": \"tcp-test-token\"}\n",
    ] {
        let mut c = Raw::connect(&srv.addr());
        c.send(first);
        let r = c.recv().expect("a refusal before closing");
        assert!(refused(&r), "{first:?}: {r}");
        assert_eq!(c.recv(), None, "{first:?}: connection should close");
    }

    // After the hello: one reply per bad frame, connection stays.
    let mut c = Raw::connect(&srv.addr());
    assert_eq!(c.hello(&hid, TOKEN), json!({"ok": true, "ack_seq": -1}));
    assert_eq!(c.rpc(&json!({"type": "envelope", "envelope": env})), json!({"ok": true}));
    let bad: Vec<Vec<u8>> = vec![
        b"\x00\x01\x02\xff\n".to_vec(),
        b"{\"type\": \"checkpoint\", \"seq\": 1, \"state\": {\"s\": \"\xff\xfe\"}}\n".to_vec(),
        b"{\"unterminated\": \n".to_vec(),
        b"42\n".to_vec(),
        b"\"a string\"\n".to_vec(),
        b"{}\n".to_vec(),
        b"{\"type\": \"launch-missiles\"}\n".to_vec(),
        b"{\"type\": 7}\n".to_vec(),
        b"{\"type\": \"hello\", \"handoff_id\": \"x\", \"token\": \"y\"}\n".to_vec(),
        b"{\"type\": \"checkpoint\"}\n".to_vec(),
        b"{\"type\": \"checkpoint\", \"seq\": \"1\", \"state\": {}, \"state_hash\": \"x\"}\n".to_vec(),
        b"{\"type\": \"checkpoint\", \"seq\": -1, \"state\": {}, \"state_hash\": \"x\"}\n".to_vec(),
        b"{\"type\": \"checkpoint\", \"seq\": 1.5, \"state\": {}, \"state_hash\": \"x\"}\n".to_vec(),
        b"{\"type\": \"checkpoint\", \"seq\": true, \"state\": {}, \"state_hash\": \"x\"}\n".to_vec(),
        b"{\"type\": \"checkpoint\", \"seq\": 99999999999999999999999, \"state\": {}, \"state_hash\": \"x\"}\n"
            .to_vec(),
        b"{\"type\": \"checkpoint\", \"seq\": 1, \"state\": [1], \"state_hash\": \"x\"}\n".to_vec(),
        b"{\"type\": \"envelope\", \"envelope\": \"nope\"}\n".to_vec(),
        b"{\"type\": \"envelope\"}\n".to_vec(),
    ];
    for frame in &bad {
        c.send(frame);
        let r = c.recv().unwrap_or_else(|| panic!("closed after {:?}", String::from_utf8_lossy(frame)));
        assert!(refused(&r), "{:?}: {r}", String::from_utf8_lossy(frame));
    }
    // Blank lines are ignored, not answered.
    c.send(b"\n   \n");
    assert_eq!(c.rpc(&cp_frame(0, &json!({"n": 0}))), json!({"ok": true, "seq": 0}));

    // Endless garbage: cut off after a bounded number of refusals.
    let mut g = Raw::connect(&srv.addr());
    assert_eq!(g.hello(&hid, TOKEN)["ok"], true);
    g.send(&b"garbage\n".repeat(200));
    let mut answered = 0;
    while let Some(r) = g.recv() {
        assert!(refused(&r));
        answered += 1;
    }
    assert!(answered < 200, "{answered} refusals: the connection should have been cut off");

    // Everyone else is unaffected.
    assert_eq!(c.rpc(&cp_frame(1, &json!({"n": 1}))), json!({"ok": true, "seq": 1}));
    let mut sh = TcpShipper::new(
        &srv.addr(),
        ShipperOptions {
            token: TOKEN.into(),
            mode: ShipMode::Sync,
            call_timeout: Duration::from_secs(10),
            ..Default::default()
        },
    )
    .unwrap();
    sh.ship_envelope(&hid, &env).unwrap();
    assert_eq!(sh.acked_seq(&hid).unwrap(), 1);
    sh.ship_checkpoint(&hid, 2, &cp_line(2, &json!({"n": 2}))).unwrap();
    sh.close().unwrap();

    let log = srv.log(&hid);
    assert_eq!(log_seqs(&log), vec![0, 1, 2]);
    assert_eq!(line_count(&log), 4, "header + 3 checkpoints, no garbage");
    let rep = ingest_ours(&tmp.path().join("fresh"), &log);
    assert_eq!((rep["checkpoints_new"].as_i64(), rep["lines_skipped"].as_i64()), (Some(3), Some(0)));
    // (The journal, `journal-*.dhpj`, is the server's own file.)
    assert_eq!(pki::log_files(&srv.logdir), 1, "garbage must not create files");
}
