//! What the server holds and says: `ack_seq` is the end of the unbroken
//! run of seqs from 0 in the log (-1 for none), kept in memory but correct across restarts and external
//! appends; a seq already in the log is acked without a second line, even
//! when many clients race on one handoff; a torn tail left by a crash is
//! terminated before the next append; a log that belongs to another
//! handoff is not written to; many handoffs ship at once.
use crate::tcp_support::*;
use dhp_core::transport::net::{ShipMode, ShipperOptions, TcpShipper};
use dhp_core::transport::{log, Shipper};
use dhp_core::Config;
use serde_json::json;
use std::io::Write;
use std::time::Duration;

fn session(srv: &Server, hid: &str, env: &serde_json::Value) -> (Raw, i64) {
    let mut c = Raw::connect(&srv.addr());
    let h = c.hello(hid, TOKEN);
    assert_eq!(h["ok"], true, "{h}");
    assert_eq!(c.rpc(&json!({"type": "envelope", "envelope": env})), json!({"ok": true}));
    (c, h["ack_seq"].as_i64().unwrap())
}

#[test]
fn ack_seq_and_dedup() {
    let tmp = tempfile::tempdir().unwrap();
    let mut srv = Server::start(&tmp.path().join("logs"));
    let (env, hid) = envelope(1, 100);
    let log = srv.log(&hid);

    let (mut c, ack) = session(&srv, &hid, &env);
    assert_eq!(ack, -1);
    for s in 0..3 {
        assert_eq!(c.rpc(&cp_frame(s, &json!({"s": s}))), json!({"ok": true, "seq": s}));
    }
    assert_eq!(c.rpc(&cp_frame(1, &json!({"s": 1}))), json!({"ok": true, "seq": 1}), "duplicate acked");
    for s in 3..6 {
        assert_eq!(c.rpc(&cp_frame(s, &json!({"s": s}))), json!({"ok": true, "seq": s}));
    }
    assert_eq!(log_seqs(&log), vec![0, 1, 2, 3, 4, 5]);
    assert_eq!(session(&srv, &hid, &env).1, 5);
    // The envelope header is first-writer-wins: still exactly one.
    assert_eq!(records(&log).iter().filter(|r| r["type"] == "envelope").count(), 1);

    // Restart: the ack comes from disk.
    srv.restart();
    let (mut c, ack) = session(&srv, &hid, &env);
    assert_eq!(ack, 5);
    assert_eq!(c.rpc(&cp_frame(4, &json!({"s": 4}))), json!({"ok": true, "seq": 4}));
    assert_eq!(log_seqs(&log).len(), 6);

    // Someone appends behind the server's back: it notices.
    log::ship_checkpoint(&log, 6, &json!({"s": 6}), &Config::default()).unwrap();
    assert_eq!(session(&srv, &hid, &env).1, 6);
    assert_eq!(c.rpc(&cp_frame(6, &json!({"s": 6}))), json!({"ok": true, "seq": 6}));
    assert_eq!(log_seqs(&log).len(), 7, "seq 6 is already there");

    // A torn tail (crash mid-write): the next line is not glued onto it.
    std::fs::OpenOptions::new().append(true).open(&log).unwrap().write_all(b"{\"at\": \"x\", \"seq\": 1").unwrap();
    assert_eq!(c.rpc(&cp_frame(7, &json!({"s": 7}))), json!({"ok": true, "seq": 7}));
    let rep = ingest_ours(&tmp.path().join("fresh"), &log);
    assert_eq!((rep["checkpoints_new"].as_i64(), rep["lines_skipped"].as_i64()), (Some(8), Some(1)));

    // A log that holds another handoff is never written to.
    let (env2, hid2) = envelope(2, 100);
    let (env3, _) = envelope(3, 100);
    std::fs::write(srv.log(&hid2), log::envelope_line(&env3).unwrap() + "\n").unwrap();
    log::ship_checkpoint(&srv.log(&hid2), 7, &json!({"s": 7}), &Config::default()).unwrap();
    let mut c2 = Raw::connect(&srv.addr());
    assert_eq!(c2.hello(&hid2, TOKEN), json!({"ok": true, "ack_seq": -1}), "another handoff's seqs are not ours");
    let r = c2.rpc(&json!({"type": "envelope", "envelope": env2}));
    assert_eq!(r["ok"], false, "{r}");
    let r = c2.rpc(&cp_frame(0, &json!({"s": 0})));
    assert_eq!(r, json!({"ok": false, "error": "log holds another handoff"}));
    drop(c2);
    assert_eq!(line_count(&srv.log(&hid2)), 2);

    // Checkpoints before any header do not count (ingest skips them): the
    // server acks -1 and appends the header and the seq afresh.
    let (env5, hid5) = envelope(5, 100);
    log::ship_checkpoint(&srv.log(&hid5), 0, &json!({"s": 0}), &Config::default()).unwrap();
    let (mut c5, ack) = session(&srv, &hid5, &env5);
    assert_eq!(ack, -1);
    assert_eq!(c5.rpc(&cp_frame(0, &json!({"s": 0}))), json!({"ok": true, "seq": 0}));
    let rep = ingest_ours(&tmp.path().join("fresh5"), &srv.log(&hid5));
    assert_eq!((rep["checkpoints_new"].as_i64(), rep["lines_skipped"].as_i64()), (Some(1), Some(1)));

    // Eight clients race over the same 50 seqs of one handoff, each in
    // order (anything else is a gap): one line per seq.
    let (env4, hid4) = envelope(4, 100);
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let (addr, env4, hid4) = (srv.addr(), env4.clone(), hid4.clone());
            std::thread::spawn(move || {
                let mut c = Raw::connect(&addr);
                assert_eq!(c.hello(&hid4, TOKEN)["ok"], true);
                assert_eq!(c.rpc(&json!({"type": "envelope", "envelope": env4})), json!({"ok": true}));
                for s in 0..50 {
                    assert_eq!(c.rpc(&cp_frame(s, &json!({"s": s}))), json!({"ok": true, "seq": s}));
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let mut seqs = log_seqs(&srv.log(&hid4));
    seqs.sort();
    assert_eq!(seqs, (0..50).collect::<Vec<_>>());

    // Sixteen handoffs ship at once through async shippers.
    let threads: Vec<_> = (0..16)
        .map(|k| {
            let addr = srv.addr();
            std::thread::spawn(move || {
                let (env, hid) = envelope(1000 + k, 2000);
                let mut sh = TcpShipper::new(
                    &addr,
                    ShipperOptions {
                        token: TOKEN.into(),
                        mode: ShipMode::Async { max_lag: 16 },
                        call_timeout: Duration::from_secs(20),
                        ..Default::default()
                    },
                )
                .unwrap();
                sh.ship_envelope(&hid, &env).unwrap();
                for s in 0..100 {
                    sh.ship_checkpoint(&hid, s, &cp_line(s, &json!({"k": k, "s": s}))).unwrap();
                }
                sh.flush().unwrap();
                assert_eq!(sh.acked_seq(&hid).unwrap(), 99);
                sh.close().unwrap();
                hid
            })
        })
        .collect();
    for t in threads {
        let hid = t.join().unwrap();
        assert_eq!(log_seqs(&srv.log(&hid)), (0..100).collect::<Vec<_>>());
    }
}
