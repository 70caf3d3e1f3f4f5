//! A duplicate is acked only once it is durable. Lines a log holds may
//! never have been synced (a server killed after writing them, before
//! their journal records): a re-sent envelope or checkpoint that the log
//! already holds is recorded in the journal again before its ack. The test
//! writes such a log by hand, acks duplicates of its lines, SIGKILLs the
//! server, empties the log (a power loss), restarts: every acked line is
//! back.
use crate::tcp_support::*;
use serde_json::json;
use std::time::Duration;

#[test]
fn acked_duplicates_are_journaled() {
    let tmp = tempfile::tempdir().unwrap();
    let logs = tmp.path().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let (env, hid) = envelope(5, 500);
    let states: Vec<_> = (0..3).map(|i| json!({"i": i})).collect();
    let mut text = dhp_core::transport::log::envelope_line(&env).unwrap() + "\n";
    for (seq, st) in states.iter().enumerate() {
        text += &(cp_line(seq as i64, st) + "\n");
    }
    std::fs::write(logs.join(format!("{hid}.log")), &text).unwrap();

    let mut srv = Server::start_capturing(&logs, &[], &tmp.path().join("server.err"));
    let mut c = Raw::connect(&srv.addr());
    assert_eq!(c.hello(&hid, TOKEN), json!({"ok": true, "ack_seq": 2}));
    assert_eq!(c.rpc(&json!({"type": "envelope", "envelope": env})), json!({"ok": true}));
    for (seq, st) in states.iter().enumerate() {
        assert_eq!(c.rpc(&cp_frame(seq as i64, st)), json!({"ok": true, "seq": seq}));
    }
    srv.kill9();
    std::fs::write(srv.log(&hid), b"").unwrap();

    srv.restart();
    dhp_testkit::wait_until(Duration::from_secs(10), "the replay", || {
        srv.stderr_text().contains("replayed the journal")
    });
    assert_eq!(log_seqs(&srv.log(&hid)), vec![0, 1, 2]);
    let rep = ingest_ours(&tmp.path().join("fresh"), &srv.log(&hid));
    assert_eq!(rep["handoff_id"], hid);
    assert_eq!(rep["checkpoints_ingested"], 3);
}
