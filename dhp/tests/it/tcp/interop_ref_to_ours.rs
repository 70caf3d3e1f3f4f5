//! Interop: the reference's `NetShipper` (dhp-protocol 1.3.0, via refctl
//! net-ship) ships a handoff made by the reference into our `dhp transport`
//! server. The server's log ingests on both sides (`dhp ingest` and the
//! reference's `ingest_log`) into exactly the reference's checkpoint rows;
//! re-shipping everything (the reference ignores ack_seq) duplicates
//! nothing; replies are byte-identical to the reference's.
use crate::tcp_support::*;
use serde_json::{json, Value};
use std::collections::BTreeSet;

fn ref_rows(root: &std::path::Path, hid: &str) -> Vec<(i64, String)> {
    let v = refctl_ok(&["checkpoints", root.to_str().unwrap(), hid], &[]);
    v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["seq"].as_i64().unwrap(), r["state_hash"].as_str().unwrap().to_string()))
        .collect()
}

#[test]
fn reference_netshipper_to_our_server() {
    let tmp = tempfile::tempdir().unwrap();
    let p = |n: &str| tmp.path().join(n).to_str().unwrap().to_string();
    let srv = Server::start(&tmp.path().join("logs"));

    let refroot = p("refroot");
    let hid = refctl_ok(
        &[
            "dispatch",
            &refroot,
            "--kind",
            "prime.census",
            "--inputs",
            r#"{"lo": 2, "hi": 2002}"#,
            "--schema",
            r#"{"type": "object"}"#,
            "--sdk",
        ],
        &[],
    )["hid"]
        .as_str()
        .unwrap()
        .to_string();
    let done = refctl_ok(&["census", &refroot, &hid, "--runner", "r1", "--mode", "claim", "--chunk", "100"], &[]);
    assert_eq!(done["checkpoints"], 20);
    let want = ref_rows(tmp.path().join("refroot").as_path(), &hid);
    assert_eq!(want.len(), 20);

    let port = srv.port.to_string();
    let shipped = refctl_ok(
        &["net-ship", "127.0.0.1", &port, &refroot, &hid, "--local", &p("ref-local.log"), "--token", TOKEN],
        &[],
    );
    assert_eq!(shipped["shipped"], 20);
    let log = srv.log(&hid);
    assert_eq!(log_seqs(&log), (0..20).collect::<Vec<_>>());

    // The reference ships everything again from seq 0: acked, not appended.
    refctl_ok(&["net-ship", "127.0.0.1", &port, &refroot, &hid, "--token", TOKEN], &[]);
    assert_eq!(log_seqs(&log), (0..20).collect::<Vec<_>>());
    assert_eq!(line_count(&log), 21);

    // Header line: checkpoints emptied, like the reference's ship_envelope.
    let header = &records(&log)[0];
    assert_eq!(header["type"], "envelope");
    assert_eq!(header["envelope"]["execution"]["checkpoints"], json!([]));
    assert_eq!(header["envelope"]["handoff_id"], hid.as_str());

    // Ours ingests it into the reference's rows.
    let rep = ingest_ours(&tmp.path().join("ours-fresh"), &log);
    assert_eq!((rep["checkpoints_new"].as_i64(), rep["lines_skipped"].as_i64()), (Some(20), Some(0)));
    assert_eq!(rep["created"], true);
    assert_eq!(store_rows(&tmp.path().join("ours-fresh"), &hid), want);
    // The reference ingests it too.
    let r = refctl_ok(&["ingest", &p("ref-fresh"), log.to_str().unwrap()], &[]);
    assert_eq!((r["checkpoints_ingested"].as_i64(), r["lines_skipped"].as_i64()), (Some(20), Some(0)));
    assert_eq!(ref_rows(tmp.path().join("ref-fresh").as_path(), &hid), want);
    let st = refctl_ok(&["status", &p("ref-fresh"), &hid], &[]);
    assert_eq!(st["status"], "pending");

    // Replies as the reference writes them (json.dumps(sort_keys=True)).
    let mut c = Raw::connect(&srv.addr());
    c.send_json(&json!({"type": "hello", "handoff_id": hid, "token": TOKEN}));
    assert_eq!(c.recv_text(), "{\"ack_seq\": 19, \"ok\": true}\n");
    let env = records(&log)[0]["envelope"].clone();
    c.send_json(&json!({"type": "envelope", "envelope": env}));
    assert_eq!(c.recv_text(), "{\"ok\": true}\n");
    c.send_json(&records(&log)[5]);
    assert_eq!(c.recv_text(), "{\"ok\": true, \"seq\": 4}\n");
    c.send_json(&json!({"type": "bye"}));
    assert_eq!(c.recv_text(), "{\"ok\": true}\n");

    // The reference's own local buffer log ingests on our side as well.
    let rep = ingest_ours(&tmp.path().join("ours-local"), &tmp.path().join("ref-local.log"));
    assert_eq!(rep["checkpoints_new"], 20);
    let seqs: BTreeSet<i64> = records(&log).iter().filter_map(|v: &Value| v["seq"].as_i64()).collect();
    assert_eq!(seqs.len(), 20);
}
